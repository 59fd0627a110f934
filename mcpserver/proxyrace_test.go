package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/mcpserver"
)

// The upstream tells of a change (a file another session added) right as
// the proxy connects: the proxy's notification handlers read its server
// while DialProxy is still making it, on the client session's goroutine.
// Under -race that was a data race on Proxy.srv; it is now published
// once, atomically.
func TestProxy_NotificationDuringDialNoRace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "test"}, &mcp.ServerOptions{HasResources: true})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := up.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			uri := "memory://x.md"
			up.AddResource(&mcp.Resource{URI: uri, Name: "x"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return nil, mcp.ResourceNotFoundError(uri)
			})
			up.RemoveResources(uri)
			time.Sleep(time.Millisecond)
		}
	}()
	p, err := mcpserver.DialProxy(ctx, ct, "test")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	<-done
	_ = p
}
