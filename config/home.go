package config

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultHome is memfsd's home when --home and MEMFSD_HOME are not set:
// ~/.memfsd.
func DefaultHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(h, ".memfsd")
}

// HomeArg is " --home <home>" for a command a next step tells a person to
// run, when the home is not the default ("" when it is): the command must
// reach the same home as the daemon that said it.
func (c *Config) HomeArg() string {
	if c == nil || c.Home == "" || filepath.Clean(c.Home) == DefaultHome() {
		return ""
	}
	return " --home " + shellQuote(c.Home)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
