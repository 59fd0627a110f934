package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMCPListen_LoopbackTCPOnly(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8770":    true,
		"localhost:8770":    true,
		"[::1]:8770":        true,
		"0.0.0.0:8770":      false,
		":8770":             false,
		"192.168.1.10:8770": false,
		"unix:///tmp/m":     false,
	} {
		if err := CheckMCPListen(addr, false); (err == nil) != ok {
			t.Errorf("CheckMCPListen(%q) = %v, want ok %v", addr, err, ok)
		}
	}
	if CheckMCPListen("0.0.0.0:8770", true) != nil {
		t.Error("--insecure-listen does not allow a network address")
	}
	if CheckMCPListen("unix:///tmp/m", true) == nil {
		t.Error("a unix socket allowed")
	}
}

// An agent's token file is made once (0600, 64 hex digits), kept across
// calls, and read only when it is a regular file holding one word: a
// link, even to a good token, is refused.
func TestMCPToken_MadeOnceReadSafely(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := EnsureMCPToken(home, "a1"); err != nil {
		t.Fatal(err)
	}
	tok, err := ReadMCPToken(home, "a1")
	if err != nil || len(tok) != 64 {
		t.Fatalf("ReadMCPToken = %q, %v", tok, err)
	}
	if fi, _ := os.Stat(MCPTokenPath(home, "a1")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode())
	}
	if err := EnsureMCPToken(home, "a1"); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadMCPToken(home, "a1"); again != tok {
		t.Fatal("EnsureMCPToken replaced an existing token")
	}
	if err := EnsureMCPToken(home, "../x"); err == nil {
		t.Fatal("a bad agent id got a token file")
	}
	if err := os.MkdirAll(filepath.Join(home, "agents", "a2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(MCPTokenPath(home, "a1"), MCPTokenPath(home, "a2")); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadMCPToken(home, "a2"); err == nil {
		t.Fatalf("a link was followed: %q", got)
	}
	for name, content := range map[string]string{"a3": "two words\n", "a4": "\n", "a5": strings.Repeat("x", maxMCPToken+1)} {
		if err := EnsureMCPToken(home, name); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(MCPTokenPath(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadMCPToken(home, name); err == nil {
			t.Errorf("%s: %q read as a token", name, got)
		}
	}
}
