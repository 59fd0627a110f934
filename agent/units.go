package agent

import (
	"context"
	"log/slog"
	"sync"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/worktree"
)

// What the units built on an agent (packages mirror and shared) use of it.
// They sit above agent: agent never imports them, the daemon wires them.

// Repository is the agent's repository (nil before its first clone).
func (a *Agent) Repository() *gitmem.Repo { return a.repository() }

// Remote is the agent's primary remote with its credentials.
func (a *Agent) Remote() gitmem.Remote { return a.remote() }

// Config is the configuration the agent was made with (read-only).
func (a *Agent) Config() *Config { return a.cfg }

// Logger is the agent's logger (with its id).
func (a *Agent) Logger() *slog.Logger { return a.log }

// Lifetime is a context that ends when Close begins.
func (a *Agent) Lifetime() context.Context { return a.ctx }

// RecordPath is the path of the agent's record name, in
// <home>/agents/<id>/records: out of the agent's reach.
func (a *Agent) RecordPath(name string) string { return a.recordPath(name) }

// WriteRecord replaces the record file p with data, atomically.
func WriteRecord(p string, data []byte) error { return writeRecord(p, data) }

// HashString is h's hex form, "" for the zero hash.
func HashString(h interface {
	IsZero() bool
	String() string
}) string {
	return hashString(h)
}

// PersonGitPoll is how often a commit held for a person's git operation
// looks whether it ended.
const PersonGitPoll = personGitPoll

// WriteLock is the lock of the commit pipeline: commits, memory-tool
// calls and the syncs' steps that rewrite work files take it.
func (a *Agent) WriteLock() *sync.Mutex { return &a.writeMu }

// RecordLock serialises updates of the agent's small records (skipped
// paths, a shared unit's proposals).
func (a *Agent) RecordLock() *sync.Mutex { return &a.skipMu }

// WorkTree is the work tree held open (nil when it is not open).
func (a *Agent) WorkTree() *worktree.Dir { return a.tree.Load() }

// WithTree runs fn on the work tree held open.
func (a *Agent) WithTree(fn func(*worktree.Dir) error) error { return a.withTree(fn) }

// WorkRead reads rel from the work tree (false when it is not there).
func (a *Agent) WorkRead(rel string) ([]byte, bool) { return a.workRead(rel) }

// SecretPatterns are the secret guard's patterns (none when it is off).
func (a *Agent) SecretPatterns() []memtool.SecretPattern { return a.secretPatterns() }

// FrontMatterRules says which paths letta-code's front-matter rules judge.
func (a *Agent) FrontMatterRules() func(string) bool { return a.frontMatterRules() }

// MaxFileBytes is the largest direct write committed.
func (a *Agent) MaxFileBytes() int64 { return a.maxFileBytes() }

// KeepRejected keeps the bytes of a rejected write of rel under
// .git/memfsd/rejected/.
func (a *Agent) KeepRejected(rel string, data []byte) error { return a.keepRejected(rel, data) }

// WithTreeGuard runs guard, then letta-code's tree rules over the paths it
// accepts (held: the paths that make the tree worse, with their problems).
func (a *Agent) WithTreeGuard(guard gitmem.Guard, held map[string][]string) gitmem.Guard {
	return a.withTreeGuard(guard, held)
}

// ProposalTreeGuard judges files (nil deletes) by letta-code's tree rules
// on the tree a proposal goes on (ProposalBase).
func (a *Agent) ProposalTreeGuard(repo *gitmem.Repo, files map[string][]byte, together bool) (map[string]*blocks.TreeConstraintsError, error) {
	return a.proposalTreeGuard(repo, files, together)
}

// Safely runs step; a panic in it becomes the agent's error (false).
func (a *Agent) Safely(what string, step func()) bool { return a.safely(what, step) }

// RepackSoon wakes the repack loop when the repository asks for one.
func (a *Agent) RepackSoon(repo *gitmem.Repo) { a.repackSoon(repo) }

// PersonGit is a person's git operation in the folder, if one holds it.
func (a *Agent) PersonGit(repo *gitmem.Repo) *PersonGit { return a.personGit(repo) }

// MemoryToolAs is the memory tool with commits authored by author (nil:
// the agent's) and trailer added to their messages.
func (a *Agent) MemoryToolAs(trailer string, author *gitmem.Signature) (*memtool.Tool, error) {
	return a.memoryToolAs(trailer, author)
}
