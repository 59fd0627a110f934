package shared

import (
	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/worktree"
)

// What the unit uses of its core (the agent.Agent it embeds; agent's
// units.go), under the names the unit's code has always called it by.

func (a *Unit) repository() *gitmem.Repo                     { return a.Repository() }
func (a *Unit) withTree(fn func(*worktree.Dir) error) error  { return a.WithTree(fn) }
func (a *Unit) workRead(rel string) ([]byte, bool)           { return a.WorkRead(rel) }
func (a *Unit) secretPatterns() []memtool.SecretPattern      { return a.SecretPatterns() }
func (a *Unit) frontMatterRules() func(string) bool          { return a.FrontMatterRules() }
func (a *Unit) maxFileBytes() int64                          { return a.MaxFileBytes() }
func (a *Unit) recordPath(name string) string                { return a.RecordPath(name) }
func (a *Unit) keepRejected(rel string, data []byte) error   { return a.KeepRejected(rel, data) }
func (a *Unit) safely(what string, step func()) bool         { return a.Safely(what, step) }
func (a *Unit) repackSoon(repo *gitmem.Repo)                 { a.RepackSoon(repo) }
func (a *Unit) personGit(repo *gitmem.Repo) *agent.PersonGit { return a.PersonGit(repo) }
func (a *Unit) withTreeGuard(g gitmem.Guard, held map[string][]string) gitmem.Guard {
	return a.WithTreeGuard(g, held)
}

func (a *Unit) proposalTreeGuard(repo *gitmem.Repo, files map[string][]byte, together bool) (map[string]*blocks.TreeConstraintsError, error) {
	return a.ProposalTreeGuard(repo, files, together)
}

func (a *Unit) memoryToolAs(trailer string, author *gitmem.Signature) (*memtool.Tool, error) {
	return a.MemoryToolAs(trailer, author)
}
