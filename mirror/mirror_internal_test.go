package mirror

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/agent"
)

// TestConfig_MirrorTemplate: --mirror-template follows --remote-template's
// rules, and its credentials become the mirror's, never stored or shown.
func TestConfig_MirrorTemplate(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"https://mirror.example.com/memory.git",               // no {agent}: every agent into one repository
		"https://{agent}.example.com/memory.git",              // {agent} in the host
		"https://mirror.example.com/{agent}.git?token=s3cr3t", // a query
		"ftp://mirror.example.com/{agent}.git",
	} {
		cfg := &agent.Config{Home: t.TempDir(), MirrorTemplate: bad}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "mirror-template") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want refused naming mirror-template, no secret", bad, err)
		}
	}
	same := &agent.Config{Home: t.TempDir(), RemoteTemplate: "https://h/{agent}.git", MirrorTemplate: "https://h/{agent}.git"}
	if err := same.Validate(); err == nil {
		t.Error("a mirror template equal to the remote template was accepted")
	}
	cfg := &agent.Config{Home: t.TempDir(), BaseURL: "https://primary.example.com", Token: "primary-tok",
		MirrorTemplate: "https://bot:mirror-tok@github.example.com/acme/{agent}-memory.git"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.MirrorToken != "mirror-tok" || cfg.MirrorUsername != "bot" || strings.Contains(cfg.MirrorTemplate, "mirror-tok") {
		t.Fatalf("credentials not moved out of the mirror template: %+v", cfg)
	}
	a, err := agent.New(cfg, "a1")
	if err != nil {
		t.Fatal(err)
	}
	u, source := mirrorURLOf(cfg, "a1")
	if u != "https://github.example.com/acme/a1-memory.git" || source != "template" {
		t.Fatalf("mirror of a1: %q %q", u, source)
	}
	if ba, ok := remoteFor(a, u).Auth.(*githttp.BasicAuth); !ok || ba.Password != "mirror-tok" || ba.Username != "bot" {
		t.Fatalf("mirror auth: %#v, want the mirror's token", remoteFor(a, u).Auth)
	}
	if st := Of(a).Status(false); st != nil {
		t.Fatalf("status of an agent not opened: %+v", st)
	}
}

// TestMirrorRemote_TokenStaysOnItsHost: without a mirror token, the
// primary's token goes to a mirror on the primary's host only.
func TestMirrorRemote_TokenStaysOnItsHost(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir(), BaseURL: "https://primary.example.com", Token: "primary-tok"}
	a, err := agent.New(cfg, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if auth := remoteFor(a, "https://elsewhere.example.com/a1.git").Auth; auth != nil {
		t.Fatalf("the primary's token was offered to another host: %#v", auth)
	}
	if ba, ok := remoteFor(a, "https://primary.example.com/backup/a1.git").Auth.(*githttp.BasicAuth); !ok || ba.Password != "primary-tok" {
		t.Fatal("a mirror on the primary's host got no token")
	}
	if err := SetOnDisk(cfg, "a1", "https://u:p@elsewhere.example.com/a1.git"); err == nil {
		t.Fatal("a per-agent mirror URL with credentials was accepted")
	}
	if err := SetOnDisk(cfg, "a1", cfg.RemoteURL("a1")); err == nil {
		t.Fatal("the primary was accepted as the mirror")
	}
	if err := SetOnDisk(cfg, "a1", "https://elsewhere.example.com/a1.git"); err != nil {
		t.Fatal(err)
	}
	if u, src := mirrorURLOf(cfg, "a1"); u != "https://elsewhere.example.com/a1.git" || src != "agent" {
		t.Fatalf("after set: %q %q", u, src)
	}
	if err := UnsetOnDisk(cfg, "a1"); err != nil {
		t.Fatal(err)
	}
	if u, _ := mirrorURLOf(cfg, "a1"); u != "" {
		t.Fatalf("after unset: %q", u)
	}
}

// The mirror's token file rotates like the primary's: each request sends
// the file's current token; with only the primary's token file, a mirror
// on the primary's host gets the primary's current token.
func TestMirrorRemote_TokenFilesRotate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	primary, mirror := filepath.Join(dir, "primary"), filepath.Join(dir, "mirror")
	os.WriteFile(primary, []byte("p1\n"), 0o600)
	os.WriteFile(mirror, []byte("m1\n"), 0o600)
	sent := func(a *agent.Agent, u string) string {
		t.Helper()
		auth := remoteFor(a, u).Auth
		if auth == nil {
			return ""
		}
		req, _ := http.NewRequest("GET", u, nil)
		auth.(interface{ SetAuth(*http.Request) }).SetAuth(req)
		_, pw, _ := req.BasicAuth()
		return pw
	}
	cfg := &agent.Config{Home: t.TempDir(), BaseURL: "https://primary.example.com", TokenFile: primary, MirrorTokenFile: mirror}
	a, err := agent.New(cfg, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if got := sent(a, "https://elsewhere.example.com/a1.git"); got != "m1" {
		t.Fatalf("mirror token %q, want m1", got)
	}
	os.WriteFile(mirror, []byte("m2\n"), 0o600)
	cfg.MirrorCredentials().Reload()
	if got := sent(a, "https://elsewhere.example.com/a1.git"); got != "m2" {
		t.Fatalf("mirror token after rotation %q, want m2", got)
	}

	cfg2 := &agent.Config{Home: t.TempDir(), BaseURL: "https://primary.example.com", TokenFile: primary}
	b, err := agent.New(cfg2, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if got := sent(b, "https://primary.example.com/backup/b1.git"); got != "p1" {
		t.Fatalf("same-host mirror with only a token file got %q, want p1", got)
	}
	if got := sent(b, "https://elsewhere.example.com/b1.git"); got != "" {
		t.Fatalf("the primary's token went to another host: %q", got)
	}
}

// TestOf_DetachedNeverStartsALoop: the Mirror that Of makes for an agent
// with none attached records the operator's URL and starts no loop, since
// nothing would stop it (the agent's Close stops only the attached one).
func TestOf_DetachedNeverStartsALoop(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir(), BaseURL: "https://primary.example.com"}
	a, err := agent.New(cfg, "a1")
	if err != nil {
		t.Fatal(err)
	}
	a.Background = true
	m := Of(a)
	if err := m.Set("https://mirror.example.com/a1.git"); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	loop := m.loop
	m.mu.Unlock()
	if loop != nil {
		m.Stop()
		t.Fatal("a mirror no agent holds started a loop")
	}
	if u, _ := mirrorURLOf(cfg, "a1"); u != "https://mirror.example.com/a1.git" {
		t.Fatalf("mirror URL on disk %q, want the one set", u)
	}
}
