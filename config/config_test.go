package config_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/config"
)

func TestConfig_BaseURLCredentials(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Home: t.TempDir(), BaseURL: "https://bob:tok-123@git.example.com/base/"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "tok-123" || cfg.Username != "bob" || strings.Contains(cfg.BaseURL, "tok-123") || cfg.BaseURL != "https://git.example.com/base" {
		t.Fatalf("user-info not moved to the auth header: %+v", cfg)
	}
	bad := &config.Config{Home: t.TempDir(), BaseURL: "https://git.example.com/base?access_token=tok-456"}
	err := bad.Validate()
	if err == nil || strings.Contains(err.Error(), "tok-456") || !strings.Contains(err.Error(), "query string") {
		t.Fatalf("base-url with a token in its query: %v", err)
	}
}
