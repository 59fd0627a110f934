package agent_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/agent"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:secret@host/x":                    "https://redacted@host/x",
		"https://host/x?access_token=secret&a=1":     "https://host/x?a=redacted&access_token=redacted",
		"https://u:pw@host/x?private_token=abc#f":    "https://redacted@host/x?private_token=redacted#f",
		"memfsd:///home/m/remote/v1/git/a/state.git": "memfsd:///home/m/remote/v1/git/a/state.git",
	} {
		if got := agent.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfig_BaseURLCredentials(t *testing.T) {
	cfg := &agent.Config{Home: t.TempDir(), BaseURL: "https://bob:tok-123@git.example.com/base/"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "tok-123" || cfg.Username != "bob" || strings.Contains(cfg.BaseURL, "tok-123") || cfg.BaseURL != "https://git.example.com/base" {
		t.Fatalf("user-info not moved to the auth header: %+v", cfg)
	}
	bad := &agent.Config{Home: t.TempDir(), BaseURL: "https://git.example.com/base?access_token=tok-456"}
	err := bad.Validate()
	if err == nil || strings.Contains(err.Error(), "tok-456") || !strings.Contains(err.Error(), "query string") {
		t.Fatalf("base-url with a token in its query: %v", err)
	}
}
