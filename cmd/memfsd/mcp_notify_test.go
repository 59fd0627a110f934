package main_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// updates records the URIs a client was told changed.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *updates) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	u.uris = append(u.uris, req.Params.URI)
	u.mu.Unlock()
}

func (u *updates) has(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.uris, uri)
}

// notifyClient is a Go SDK client that records resource updates.
func notifyClient(u *updates) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e-notify", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler})
}

// connectNotify connects a recording client over t, speaking protocol
// version (empty: the SDK's latest).
func connectNotify(t *testing.T, tr mcp.Transport, logs *syncBuffer, version string) (*mcp.ClientSession, *updates) {
	t.Helper()
	u := &updates{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := notifyClient(u).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() && logs != nil {
			t.Logf("memfsd mcp log:\n%s", logs.String())
		}
	})
	return cs, u
}

// peerPushNew commits name with text in a clone of id's remote and pushes it.
func peerPushNew(t *testing.T, srv *gitserver.Server, id, name, text string) {
	t.Helper()
	peer := peerClone(t, srv, id)
	if err := os.WriteFile(filepath.Join(peer, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, peer, "add", name)
	git(t, peer, "-c", "user.name=peer", "-c", "user.email=peer@example.com", "commit", "-qm", "peer writes "+name)
	git(t, peer, "push", "-q", "origin", "HEAD:main")
}

// TestMCP_SubscribedClientToldOfPullAndDirectWrite: a client subscribed
// to memory:///<path> gets notifications/resources/updated when a commit
// another writer pushed is pulled, and when the agent writes the file
// directly into its folder (committed by memfsd), whichever way the
// session runs: `memfsd mcp` forwarded to the daemon, /mcp on the agent's
// own socket, and `memfsd mcp` with the agent in its own process.
func TestMCP_SubscribedClientToldOfPullAndDirectWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	startDaemon(t, srv, home, "--agent", "viad", "--agent", "viad-legacy", "--agent", "viahttp", "--agent", "viahttp-legacy",
		"--pull-interval", "200ms", "--mcp-push-idle", "300ms")

	run := func(t *testing.T, home, id string, cs *mcp.ClientSession, u *updates, pull func()) {
		ctx := context.Background()
		for _, name := range []string{"peer.md", "direct.md"} {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "memory:///" + name}); err != nil {
				t.Fatalf("subscribe %s: %v", name, err)
			}
		}
		// Another writer's commit (on top of the start-up push), pulled
		// while the session is open.
		waitFor(t, 20*time.Second, "the start-up push", func() bool { return remoteMain(srv, id) == localHead(t, home, id) })
		peerPushNew(t, srv, id, "peer.md", "from the peer\n")
		if pull != nil {
			pull()
		}
		waitFor(t, 20*time.Second, "notifications/resources/updated for the pulled memory:///peer.md", func() bool { return u.has("memory:///peer.md") })
		got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory:///peer.md"})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "from the peer\n" {
			t.Fatalf("read the pulled file: %v %+v", err, got)
		}
		// A direct write into the folder, committed by memfsd.
		if u.has("memory:///direct.md") {
			t.Fatal("told of direct.md before it was written")
		}
		if err := os.WriteFile(filepath.Join(memDir(home, id), "direct.md"), []byte("written directly\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "notifications/resources/updated for the directly written memory:///direct.md", func() bool { return u.has("memory:///direct.md") })
		got, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory:///direct.md"})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "written directly\n" {
			t.Fatalf("read the directly written file: %v %+v", err, got)
		}
	}

	for _, v := range []struct{ name, suffix, version string }{{"Latest", "", ""}, {"2025-06-18", "-legacy", "2025-06-18"}} {
		t.Run("StdioThroughDaemon/"+v.name, func(t *testing.T) {
			t.Parallel()
			id := "viad" + v.suffix
			cmd := execMemfsd("mcp", "--home", home, "--base-url", srv.URL, "--agent", id)
			logs := &syncBuffer{}
			cmd.Stderr = logs
			cs, u := connectNotify(t, &mcp.CommandTransport{Command: cmd}, logs, v.version)
			run(t, home, id, cs, u, nil)
		})
		t.Run("HTTPOnAgentSocket/"+v.name, func(t *testing.T) {
			t.Parallel()
			id := "viahttp" + v.suffix
			sock := filepath.Join(home, "agents", id, "memfsd.sock")
			hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}}}
			cs, u := connectNotify(t, &mcp.StreamableClientTransport{Endpoint: "http://memfsd/mcp", HTTPClient: hc}, nil, v.version)
			run(t, home, id, cs, u, nil)
		})
		t.Run("StdioInProcess/"+v.name, func(t *testing.T) {
			t.Parallel()
			home := filepath.Join(t.TempDir(), "home")
			id := "inproc" + v.suffix
			cmd := exec.Command(binPath, "mcp", "--home", home, "--base-url", srv.URL, "--agent", id, "--push-idle", "300ms")
			cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
			logs := &syncBuffer{}
			cmd.Stderr = logs
			cs, u := connectNotify(t, &mcp.CommandTransport{Command: cmd}, logs, v.version)
			// In its own process the agent pulls at start, on memory_sync
			// and with each push; memory_sync is the pull here.
			pull := func() {
				if text, isErr := mcpCall(t, cs, "memory_sync", map[string]any{}); isErr {
					t.Fatalf("memory_sync: %s", text)
				}
			}
			run(t, home, id, cs, u, pull)
		})
	}
}
