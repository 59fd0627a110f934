package unixsock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/unixsock"
)

// serveOK answers "ok" on l until the test ends.
func serveOK(t *testing.T, l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func get(t *testing.T, path string) (string, error) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return unixsock.Dial(ctx, path)
	}}}
	resp, err := c.Get("http://x/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestListen_LongPath: a socket path past the 107 bytes a socket address
// holds (a long home plus a 128-character agent id) is bound, served,
// dialled, 0600, and removed on Close.
func TestListen_LongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agents", strings.Repeat("a", 128))
	path := filepath.Join(dir, "memfsd.sock")
	if len(path) <= unixsock.MaxPath {
		t.Fatalf("path %d bytes: not long enough to test", len(path))
	}
	// Go's own net.Listen refuses it: this is what the package is for.
	if _, err := net.Listen("unix", path); err == nil {
		t.Fatal("net.Listen took a path over 107 bytes: the test proves nothing")
	}
	l, err := unixsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serveOK(t, l)
	if got := l.Addr().String(); got != path {
		t.Errorf("Addr = %q, want the real path", got)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v, want a socket with mode 0600", fi, err)
	}
	if dfi, _ := os.Stat(dir); dfi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", dfi.Mode().Perm())
	}
	if got, err := get(t, path); err != nil || got != "ok" {
		t.Fatalf("dial the long path: %q %v", got, err)
	}
	if _, err := unixsock.Listen(path); err == nil || !strings.Contains(err.Error(), "another memfsd is serving it") {
		t.Fatalf("second listen on a served socket: %v", err)
	}
	l.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file after Close: %v, want gone", err)
	}
	_, err = get(t, path)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), path) {
		t.Fatalf("dial after Close: %v, want a dial error naming the real path", err)
	}
}

// TestListen_StaleReplaced: a socket file left by a process that is gone
// is replaced, short path or long.
func TestListen_StaleReplaced(t *testing.T) {
	for _, name := range []string{"s.sock", strings.Repeat("b", 120) + "/s.sock"} {
		path := filepath.Join(t.TempDir(), name)
		l, err := unixsock.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		// A killed process leaves its file: close the descriptor only.
		l.Listener.Close()
		if _, err := os.Lstat(path); err != nil {
			t.Fatalf("stale file not left: %v", err)
		}
		l2, err := unixsock.Listen(path)
		if err != nil {
			t.Fatalf("stale socket not replaced: %v", err)
		}
		serveOK(t, l2)
		if got, err := get(t, path); err != nil || got != "ok" {
			t.Fatalf("after replacing: %q %v", got, err)
		}
		// The first listener's Close must not remove the second's file.
		l.Close()
		if got, err := get(t, path); err != nil || got != "ok" {
			t.Fatalf("an old listener's Close removed the new socket: %q %v", got, err)
		}
		l2.Close()
	}
}
