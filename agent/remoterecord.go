package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
)

// An agent's remote belongs to the agent (SPEC §14): the URL it was first
// cloned from is recorded in <home>/agents/<id>/origin-url (out of the
// agent's reach, unlike its .git/config, so an agent cannot point memfsd
// and its token elsewhere), and every command uses it. A command given no
// remote (no --base-url, --remote-template or per-agent remote_url) uses
// the recorded one; one given another is refused, naming both. Nothing
// makes an embedded remote for an agent recorded with another.

// originFile holds the agent's remote as recorded at its first clone.
const originFile = "origin-url"

// maxGitConfig bounds the .git/config read for an agent cloned before the
// record existed (the agent can write that file).
const maxGitConfig = 64 << 10

// ErrRemoteMismatch: the remote a command was given is not the agent's.
var ErrRemoteMismatch = errors.New("the agent's remote is another")

// RecordedRemote is the agent's remote as recorded at its first clone (""
// when none is recorded yet).
func RecordedRemote(cfg *Config, id string) string {
	return readOneLine(filepath.Join(cfg.Home, "agents", id, originFile))
}

// readOneLine reads a small record file of one line ("" when absent or
// not a regular file).
func readOneLine(p string) string {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	data, _ := io.ReadAll(io.LimitReader(f, 8<<10))
	return strings.TrimSpace(string(data))
}

// remoteGiven reports whether the command was given a remote for the
// agent (a flag, a template, or the operator's per-agent URL), as opposed
// to the default (the embedded remote under the home).
func (a *Agent) remoteGiven() bool {
	return a.remoteOverride != "" || a.cfg.BaseURL != "" || a.cfg.RemoteTemplate != ""
}

// configuredRemote is the remote this command's configuration gives the
// agent: the operator's per-agent URL, else the template, base URL or
// embedded default.
func (a *Agent) configuredRemote() string {
	if a.remoteOverride != "" {
		return a.remoteOverride
	}
	return a.cfg.RemoteURL(a.ID)
}

// resolveRemote settles the agent's remote before anything touches the
// network: the recorded one, or for an agent cloned before the record
// existed its repository's origin (recorded now when the configuration
// agrees). A remote given that disagrees is an error naming both and the
// next step.
func (a *Agent) resolveRemote() error {
	if a.shared {
		return nil // a shared repository's remote is its unit's
	}
	given := a.configuredRemote()
	recorded := RecordedRemote(a.cfg, a.ID)
	if recorded == "" {
		origin, err := repoOrigin(a.Dir())
		if err != nil {
			return fmt.Errorf("remote of %s: %w", a.ID, err)
		}
		_, herr := os.Lstat(filepath.Join(a.Dir(), ".git", "HEAD"))
		switch {
		case origin == "" && herr == nil && !a.remoteGiven():
			// A repository memfsd made always has an origin: without
			// one (and no record), only the operator says where it goes.
			return fmt.Errorf("remote of %s: %w: no remote is recorded (%s) and its repository has no origin: give the agent's remote with --base-url or --remote-template (it is recorded then), or write it into %s",
				a.ID, ErrRemoteMismatch, a.originPath(), a.originPath())
		case origin == "":
			// Never cloned, or the operator gives the remote: the first
			// clone (or open) records it.
			a.remoteURL = given
			return nil
		case sameRemote(origin, given):
			a.remoteURL = given
			return a.recordRemote(given)
		default:
			// Cloned by an older memfsd: its origin is the agent's own
			// file, not proof enough to send the token there.
			return fmt.Errorf("remote of %s: %w: its repository's origin is %s, this command's is %s (%s): run it with the flag that gives %s (it is recorded then and every command uses it), or, if %s is the agent's remote, set it: git -C %s remote set-url origin %s",
				a.ID, ErrRemoteMismatch, RedactURL(origin), RedactURL(given), a.givenBy(), RedactURL(origin), RedactURL(given), a.Dir(), RedactURL(given))
		}
	}
	if sameRemote(recorded, given) || !a.remoteGiven() {
		if p, ok := strings.CutPrefix(recorded, embedded.Scheme+"://"); ok && !sameRemote(recorded, given) {
			// The embedded remote makes a missing repository on first
			// use: a home moved elsewhere must not start a new one.
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("remote of %s: %w: it was recorded as %s (%s), which is not there (was the home moved?): write the embedded remote's URL in this home, %s, into %s",
					a.ID, ErrRemoteMismatch, recorded, a.originPath(), given, a.originPath())
			}
		}
		a.remoteURL = recorded
		return nil
	}
	return fmt.Errorf("remote of %s: %w: it was recorded as %s at its first clone (%s), this command gives %s (%s): drop that flag (every command uses the recorded remote), or, to move the agent, push its history to the new remote and write its URL into %s",
		a.ID, ErrRemoteMismatch, RedactURL(recorded), a.originPath(), RedactURL(given), a.givenBy(), a.originPath())
}

// givenBy names where the command's remote came from.
func (a *Agent) givenBy() string {
	switch {
	case a.remoteOverride != "":
		return "the operator's remote_url in " + filepath.Join(a.folder, remoteFile)
	case a.cfg.RemoteTemplate != "":
		return "--remote-template"
	case a.cfg.BaseURL != "":
		return "--base-url"
	}
	return "no --base-url or --remote-template: the embedded remote under " + filepath.Join(a.cfg.Home, "remote")
}

func (a *Agent) originPath() string { return filepath.Join(a.folder, originFile) }

// recordRemote records u as the agent's remote when none is recorded.
func (a *Agent) recordRemote(u string) error {
	if a.shared || RecordedRemote(a.cfg, a.ID) != "" {
		return nil
	}
	if err := writeRecord(a.originPath(), []byte(RedactURL(u)+"\n")); err != nil {
		return fmt.Errorf("record the remote of %s: %w", a.ID, err)
	}
	return nil
}

// sameRemote compares two remote URLs as memfsd writes them.
func sameRemote(x, y string) bool {
	return strings.TrimRight(RedactURL(x), "/") == strings.TrimRight(RedactURL(y), "/")
}

// repoOrigin is the url of remote "origin" in dir/.git/config ("" when
// there is no repository or no origin). The file is the agent's: read by
// descriptor, bounded, links not followed.
func repoOrigin(dir string) (string, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s/.git/config: %w", dir, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read %s/.git/config: not a regular file", dir)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGitConfig+1))
	if err != nil {
		return "", fmt.Errorf("read %s/.git/config: %w", dir, err)
	}
	if len(data) > maxGitConfig {
		return "", fmt.Errorf("read %s/.git/config: over %d bytes", dir, maxGitConfig)
	}
	c, err := gitconfig.ReadConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("read %s/.git/config: %w", dir, err)
	}
	r, ok := c.Remotes[gitmem.RemoteName]
	if !ok || len(r.URLs) == 0 {
		return "", nil
	}
	return r.URLs[0], nil
}

// isEmbedded reports whether u is the in-process remote.
func isEmbedded(u string) bool { return strings.HasPrefix(u, embedded.Scheme+"://") }

// RemoteOf is agent id's remote as every command uses it (the recorded
// one, else the configuration's), credentials redacted: for answers
// about an agent read from disk.
func RemoteOf(cfg *Config, id string) string {
	if r := RecordedRemote(cfg, id); r != "" {
		return r
	}
	if o := readRemoteOverride(cfg, id); o != "" {
		return RedactURL(o)
	}
	return RedactURL(cfg.RemoteURL(id))
}
