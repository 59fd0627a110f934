package gitmem

import (
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/worktree"
)

// displaced is what stood at a work-tree path at the instant memfsd
// replaced or removed it.
type displaced struct {
	existed bool
	data    []byte
	mode    filemode.FileMode
}

// is reports whether the displaced file was exactly the blob h with mode
// (absent matches a zero hash).
func (d displaced) is(h plumbing.Hash, mode filemode.FileMode) bool {
	if !d.existed {
		return h.IsZero()
	}
	return !h.IsZero() && blobHash(d.data) == h && d.mode == mode
}

// exchangeWorkFile puts data at rel and returns exactly what it displaced:
// under a lease in place (replaceWorkFile), else by renameByExchange.
func (r *Repo) exchangeWorkFile(rel string, data []byte, mode filemode.FileMode) (displaced, *syscall.Stat_t, error) {
	got, _, st, err := r.replaceWorkFile(rel, func(displaced) ([]byte, filemode.FileMode, bool) { return data, mode, true })
	return got, st, err
}

// takeWorkFile removes rel and returns what it removed (see
// removeWorkFile); folders it leaves empty go too.
func (r *Repo) takeWorkFile(rel string) (displaced, error) {
	got, _, err := r.removeWorkFile(rel, func(displaced) bool { return true })
	return got, err
}

// putBack restores an agent's bytes d that a replace or delete displaced
// although they were not the version expected; ours is what that replace
// put in their place. Each exchange must displace exactly what was put
// there before; anything else is a write the agent made meanwhile, which is
// newer and goes back in turn. Should the agent keep winning for ten
// rounds, the bytes last displaced are kept beside the file as a conflict
// copy: nothing is dropped.
func (r *Repo) putBack(rel string, d displaced, ours plumbing.Hash, oursMode filemode.FileMode) error {
	expect, expectMode := ours, oursMode
	for attempt := 0; attempt < 10; attempt++ {
		if !d.existed {
			return nil
		}
		got, _, err := r.renameByExchange(rel, d.data, d.mode)
		if err != nil {
			return err
		}
		if got.is(expect, expectMode) || !got.existed {
			return nil // what went out is what we had put there
		}
		// A newer write landed on what we had put there: it goes back in,
		// displacing the older bytes we just placed.
		expect, expectMode = blobHash(d.data), d.mode
		d = got
	}
	if !d.existed {
		return nil
	}
	copyRel, err := r.keepCopy(rel, d.data, d.mode)
	if err != nil {
		return err
	}
	r.log.Warn("a file kept changing while memfsd replaced it; the last displaced version is kept beside it", "path", rel, "copy", copyRel)
	return nil
}

// RestoreMissing writes HEAD's version of each path that is missing from
// the work tree (a file that is there, whoever wrote it, is left alone) and
// returns the paths it wrote back. The caller holds opts.WorkLock.
func (r *Repo) RestoreMissing(paths []string) ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return nil, err
	}
	tree, err := r.objs.CommitTree(head)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		p, err := worktree.Clean(p)
		if err != nil {
			return out, err
		}
		e, ok, err := r.objs.entryAt(tree, p)
		if err != nil {
			return out, err
		}
		if _, err := r.wt.Lstat(p); !ok || err == nil {
			continue
		}
		data, err := r.objs.Blob(e.Hash)
		if err != nil {
			return out, err
		}
		st, err := r.writeIfAbsent(p, data, e.Mode)
		if err != nil {
			return out, err
		}
		if st != nil {
			out = append(out, p)
		}
	}
	return out, nil
}
