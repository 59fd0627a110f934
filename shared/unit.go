// Package shared is letta-code's shared memory repositories: the
// attachments (attach.go), the unit that serves one repository to every
// agent attached to it (Unit: its core is an agent.Agent made by
// agent.NewShared), its proposals (propose.go) and the attached agents'
// view folders (view*.go). It sits above agent: agent never imports it;
// the daemon makes the units and wires them.
package shared

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// ErrSharedDenied is a write by an agent whose attachment says deny.
var ErrSharedDenied = errors.New("shared repository is read-only for this agent")

// Unit serves one shared repository: its core (the embedded Agent: one
// clone, one commit pipeline, one sync loop) and the views of the agents
// attached to it, which the core runs through agent.Views.
type Unit struct {
	*agent.Agent

	cfg    *agent.Config
	log    *slog.Logger
	folder string // <home>/shared/<name>: the clone's memory/ and the records
	// writeMu and skipMu are the core's pipeline and record locks.
	writeMu, skipMu *sync.Mutex
	// views are the attached agents' views (view.go).
	views *viewSet
	// viewsMovedAside: Open found the shared clone off its branch and moved
	// it aside; views attached are told (moveDetachedClone).
	viewsMovedAside atomic.Bool
	// viewLeased, when set (tests only), runs when the unit holds a view
	// file's lease and compared it, before it writes or removes it.
	viewLeased func()
}

// New makes the unit of shared repository name at remoteURL over cfg
// (validated). It starts nothing.
func New(cfg *agent.Config, name, remoteURL string) (*Unit, error) {
	if err := ValidateSharedName(name); err != nil {
		return nil, err
	}
	u := &Unit{cfg: cfg, views: newViewSet()}
	core, err := agent.NewShared(cfg, name, remoteURL, u)
	if err != nil {
		return nil, err
	}
	u.Agent, u.log, u.folder = core, core.Logger(), cfg.SharedDir(name)
	u.writeMu, u.skipMu = core.WriteLock(), core.RecordLock()
	return u, nil
}

// MoveAside moves a shared clone found off its branch aside (the core's
// Open, before it opens the repository).
func (a *Unit) MoveAside() { a.moveDetachedClone() }

// Kick asks the view loop for a round (the tip moved).
func (a *Unit) Kick() { a.kickViews() }

// PushProposals pushes the proposals not pushed yet (the core's syncs).
func (a *Unit) PushProposals(ctx context.Context) { a.pushPendingProposals(ctx) }

// SharedCall runs agent by's memory-tool call on this shared repository
// under policy write: the shared clone is what /memories maps to; a write
// is one commit authored by the agent (`<by> <<by>@memfsd.local>`, or the
// configured author), judged by the same tool guard and budget as the
// agent's own memory. With deny every write is refused (views answer); a
// propose write never reaches the shared branch (ProposeCall).
func (a *Unit) SharedCall(in memtool.Call, by string, write WritePolicy) (memtool.Result, error) {
	if !a.Shared() {
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
	author := a.cfg.Author(by)
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
func (a *Unit) SharedContext(write WritePolicy) (string, error) {
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
