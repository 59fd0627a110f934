package credentials_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memfsd/memfsd/credentials"
)

func TestCredentials_RefreshSeesRenameOverAtSameSizeAndTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	os.WriteFile(p, []byte("token-one\n"), 0o600)
	fi, _ := os.Stat(p)
	c, err := credentials.New(p, "", nil)
	if err != nil || c.Token() != "token-one" {
		t.Fatalf("start: %q %v", c.Token(), err)
	}
	gen := c.Generation()
	if c.Refresh() != gen {
		t.Fatal("an untouched file changed the generation")
	}
	// A secrets manager renames a new file over it: another inode, the
	// same size and modification time.
	tmp := filepath.Join(dir, ".token.new")
	os.WriteFile(tmp, []byte("token-two\n"), 0o600)
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if c.Refresh() == gen || c.Token() != "token-two" {
		t.Fatalf("refresh missed the rename: %q", c.Token())
	}
}

func TestCredentials_EmptyOrUnreadableKeepsLastGood(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p := filepath.Join(t.TempDir(), "token")
	if _, err := credentials.New(p, "", log); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("a missing file at start: err = %v, want one naming %s", err, p)
	}
	// Empty at start: an error naming the file without a fallback token;
	// with one, the fallback stands.
	os.WriteFile(p, []byte("\n"), 0o600)
	if _, err := credentials.New(p, "", log); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "put the token in it") {
		t.Fatalf("an empty file at start: err = %v, want one naming %s and the next step", err, p)
	}
	if c, err := credentials.New(p, "fallback-tok", log); err != nil || c.Token() != "fallback-tok" {
		t.Fatalf("an empty file beside a fallback: %v", err)
	}
	logs.Reset()
	os.WriteFile(p, []byte("secret-good-1"), 0o600)
	c, err := credentials.New(p, "", log)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		os.WriteFile(p, nil, 0o600)
		c.Reload()
	}
	if c.Token() != "secret-good-1" || !strings.Contains(c.Problem(), p) {
		t.Fatalf("after emptying: token %q problem %q", c.Token(), c.Problem())
	}
	os.Remove(p)
	c.Refresh()
	if c.Token() != "secret-good-1" || !strings.Contains(c.Problem(), "no such file") {
		t.Fatalf("after removal: token %q problem %q", c.Token(), c.Problem())
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d warnings for two causes, want 2:\n%s", n, logs.String())
	}
	os.WriteFile(p, []byte("secret-good-2"), 0o600)
	c.Refresh()
	if c.Token() != "secret-good-2" || c.Problem() != "" {
		t.Fatalf("after a good token: %q %q", c.Token(), c.Problem())
	}
	if strings.Contains(logs.String(), "secret-good") {
		t.Fatalf("a token in the logs:\n%s", logs.String())
	}
}

// Requests read the token while rotations store it (run with -race).
func TestCredentials_ConcurrentRotation(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte("tok-0"), 0o600)
	c, err := credentials.New(p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			os.WriteFile(p, []byte("tok-"+strings.Repeat("x", i%7+1)), 0o600)
			c.Refresh()
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if !strings.HasPrefix(c.Token(), "tok-") {
				t.Errorf("token %q", c.Token())
				return
			}
			req, _ := http.NewRequest("GET", "http://x/", nil)
			req.SetBasicAuth("u", c.Token())
		}
	}()
	wg.Wait()
}

// TestCredentials_ChangedSignals: a new token, and a file readable again,
// signal Changed (what the daemon retries the agents' auth failures on);
// an unchanged re-read does not.
func TestCredentials_ChangedSignals(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte("token-one\n"), 0o600)
	c, err := credentials.New(p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalled := func() bool {
		select {
		case <-c.Changed():
			return true
		default:
			return false
		}
	}
	signalled() // the first read's, if any
	c.Reload()
	if signalled() {
		t.Error("an unchanged file signalled")
	}
	os.WriteFile(p, []byte("token-two\n"), 0o600)
	c.Reload()
	if !signalled() {
		t.Error("a new token did not signal")
	}
	os.WriteFile(p, nil, 0o600)
	c.Reload()
	signalled()
	os.WriteFile(p, []byte("token-two\n"), 0o600)
	c.Reload()
	if !signalled() {
		t.Error("the file readable again did not signal")
	}
}
