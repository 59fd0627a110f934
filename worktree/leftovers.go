package worktree

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/internal/procid"
)

// RecoveredDir is the folder of the memory where the bytes a crash left in
// flight are put back (committed as the agent's write by the next scan).
const RecoveredDir = "memfsd-recovered"

// RecoverLeftovers deals with what a memfsd process that is gone (a kill,
// a crash, a power cut) left in TempDir: a work file taken aside
// to be removed (removeLeased, takeByRename) or a new version not yet in
// place (a write, an exchange). Bytes git already holds (store has a
// blob of that content) are dropped: nothing is lost. Any other bytes (the
// agent's writes, which nothing else has) are moved into RecoveredDir in
// the memory folder, where the next scan commits them as the agent's write
// and the agent sees them; never silently left. A live process's files
// (another memfsd on this home) are left alone. It returns the paths
// recovered into the memory folder. Called at Open, before any write.
func (wf *Files) RecoverLeftovers() []string {
	entries, err := wf.dir.ReadDir(TempDir)
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
		rel := TempDir + "/" + e.Name
		f, err := wf.dir.Read(rel)
		if err != nil || f == nil {
			continue
		}
		kind := plumbing.BlobObject
		if len(f.Data) == 0 || wf.store.Has(plumbing.ComputeHash(kind, f.Data)) {
			_ = wf.dir.Remove(rel) // git has these bytes (or there are none)
			continue
		}
		dst := RecoveredDir + "/" + e.Name
		if err := wf.dir.MkdirAll(RecoveredDir); err != nil {
			wf.log.Warn("a crash left bytes in flight; kept where they are", "path", rel, "err", err)
			continue
		}
		if err := wf.dir.Rename(rel, dst, unix.RENAME_NOREPLACE); err != nil {
			wf.log.Warn("a crash left bytes in flight; kept where they are", "path", rel, "err", err)
			continue
		}
		recovered = append(recovered, dst)
	}
	if len(recovered) > 0 {
		wf.log.Warn("recovered bytes a crash left in flight into the memory folder (committed as the agent's write)", "paths", recovered)
	}
	return recovered
}
