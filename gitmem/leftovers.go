package gitmem

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memfsd/memfsd/internal/procid"
	"github.com/memfsd/memfsd/worktree"
	"golang.org/x/sys/unix"
)

// RecoveredDir is the folder of the memory where the bytes a crash left in
// flight are put back (committed as the agent's write by the next scan).
const RecoveredDir = "memfsd-recovered"

// recoverLeftovers deals with what a memfsd process that is gone (a kill,
// a crash, a power cut) left in worktree.TempDir: a work file taken aside
// to be removed (removeLeased, takeByRename) or a new version not yet in
// place (a write, an exchange). Bytes git already holds (a blob of that
// content exists) are dropped: nothing is lost. Any other bytes (the
// agent's writes, which nothing else has) are moved into RecoveredDir in
// the memory folder, where the next scan commits them as the agent's write
// and the agent sees them; never silently left. A live process's files
// (another memfsd on this home) are left alone. It returns the paths
// recovered into the memory folder. Called at Open, before any write.
func (r *Repo) recoverLeftovers() []string {
	entries, err := r.wt.ReadDir(worktree.TempDir)
	if err != nil {
		return nil
	}
	self := procid.Self()
	var recovered []string
	for _, e := range entries {
		_, rest, _ := strings.Cut(e.Name, "-")
		id, _, ok := procid.Parse(rest)
		if !ok || id == self || id.Alive() || e.IsDir() {
			continue
		}
		rel := worktree.TempDir + "/" + e.Name
		f, err := r.wt.Read(rel)
		if err != nil || f == nil {
			continue
		}
		kind := plumbing.BlobObject
		if len(f.Data) == 0 || r.objs.Has(plumbing.ComputeHash(kind, f.Data)) {
			_ = r.wt.Remove(rel) // git has these bytes (or there are none)
			continue
		}
		dst := RecoveredDir + "/" + e.Name
		if err := r.wt.MkdirAll(RecoveredDir); err != nil {
			r.log.Warn("a crash left bytes in flight; kept where they are", "path", rel, "err", err)
			continue
		}
		if err := r.wt.Rename(rel, dst, unix.RENAME_NOREPLACE); err != nil {
			r.log.Warn("a crash left bytes in flight; kept where they are", "path", rel, "err", err)
			continue
		}
		recovered = append(recovered, dst)
	}
	if len(recovered) > 0 {
		r.log.Warn("recovered bytes a crash left in flight into the memory folder (committed as the agent's write)", "paths", recovered)
	}
	return recovered
}
