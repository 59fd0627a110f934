// Package testgit runs the real git CLI as the tests' peer, with a fixed
// identity and no system or user config.
package testgit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Env is the environment git runs with: a fixed person, no system config.
func Env() []string {
	return append(os.Environ(),
		"GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=person", "GIT_COMMITTER_EMAIL=person@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
}

// Try runs git in dir and returns its trimmed output and error.
func Try(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Run runs git in dir and fails the test when git fails.
func Run(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := Try(dir, args...)
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
