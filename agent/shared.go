package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// A shared repository is served by one unit per home: an Agent made by
// NewShared, whose folder is <home>/shared/<name> (the one clone in
// memory/ below it, memfsd's records beside it) and whose remote is the
// repository's. Every attached agent's write goes through that unit's one
// commit pipeline (its repository's locks and writeMu), its sync loop
// pushes and recovers like any agent's, and the same guards (read-only
// blocks, secrets, deletion holds, front matter) judge every write, with
// the writing agent as the commit's author.

// ErrSharedDenied is a write by an agent whose attachment says deny.
var ErrSharedDenied = errors.New("shared repository is read-only for this agent")

// NewShared makes the unit of shared repository name at remoteURL over cfg
// (validated). It starts nothing.
func NewShared(cfg *Config, name, remoteURL string) (*Agent, error) {
	if err := ValidateSharedName(name); err != nil {
		return nil, err
	}
	a, err := New(cfg, name)
	if err != nil {
		return nil, err
	}
	a.folder = cfg.SharedDir(name)
	a.shared = true
	a.treeChecks.shared = true
	a.views = newViewSet()
	a.remoteOverride = remoteURL
	a.log = cfg.Logger.With("shared", name)
	return a, nil
}

// Shared reports whether a is a shared repository's unit.
func (a *Agent) Shared() bool { return a.shared }

// ensureFolder creates the unit's folders 0700 whatever the umask (and
// tightens them when they exist).
func (a *Agent) ensureFolder() error {
	if !a.shared {
		return a.cfg.ensurePrivateDirs(a.ID)
	}
	for _, d := range []string{a.cfg.Home, filepath.Join(a.cfg.Home, "shared"), a.folder} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// SharedCall runs agent by's memory-tool call on this shared repository
// under policy write: the shared clone is what /memories maps to; a write
// is one commit authored by the agent (`<by> <<by>@memfsd.local>`, or the
// configured author), judged by the same tool guard and budget as the
// agent's own memory. With deny every write is refused (views answer); a
// propose write never reaches the shared branch (ProposeCall).
func (a *Agent) SharedCall(in memtool.Call, by string, write WritePolicy) (memtool.Result, error) {
	if !a.shared {
		return memtool.Result{}, fmt.Errorf("shared call: %s is not a shared repository", a.ID)
	}
	if in.Writes() {
		switch write {
		case WriteDeny:
			return memtool.Result{Content: fmt.Sprintf("shared repository %s is read-only for agent %s (write: deny): the change was not made; ask the operator for write: allow or propose", a.ID, by), IsError: true}, nil
		case WritePropose:
			return a.proposeCall(in, by)
		}
	}
	author := a.cfg.author(by)
	tool, err := a.memoryToolAs("", &author)
	if err != nil {
		return memtool.Result{}, err
	}
	res := tool.RunCall(in)
	if in.Writes() && !res.IsError {
		a.kickViews() // the views get the new tip
	}
	return res, nil
}

// SharedContext is the shared repository as an attached agent's prompt
// shows it, after its own memory: the repository's rendering (pinned
// blocks and file tree) in a <shared_memory> element naming the policy
// and how to reach it, in the agent's terms (the tool's shared parameter,
// its view folder beside its memory), never a host path or command.
func (a *Agent) SharedContext(write WritePolicy) (string, error) {
	c, err := a.Context()
	if err != nil {
		return "", err
	}
	view := reminders.ViewFolder(a.ID)
	how := "write with the memory tool's shared parameter (shared=" + a.ID + ") or in your view folder " + view
	switch write {
	case WritePropose:
		how += "; your changes become proposals an operator reviews, not the shared memory itself"
	case WriteDeny:
		how = "read only (view it with the memory tool's shared parameter, shared=" + a.ID + ", or in your view folder " + view + ")"
	}
	return fmt.Sprintf("\n<shared_memory name=%q write=%q>\n%s: /memories below means this repository.\n%s\n</shared_memory>",
		a.ID, write, how, strings.TrimSpace(c.Text)), nil
}
