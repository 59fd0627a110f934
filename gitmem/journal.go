package gitmem

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/memfsd/memfsd/worktree"
	"golang.org/x/sys/unix"
)

// replaceJournal records each in-place replace (see replaceWorkFile) before
// it writes: a write into a file's own inode is not atomic, and a memfsd
// killed in the middle of one would leave the file holding the start of the
// new version and the rest of the old. Open finds such a torn file from the
// journal and finishes the write. The journal goes when the section under
// r.mu that wrote it ends (Repo.unlock): by then every write is whole.
//
// A process kill leaves the page cache intact, so the journal is not
// fsynced; after a power loss the work tree is what the filesystem kept,
// as for any program's files.
type replaceJournal struct {
	wt *worktree.Dir // the work tree: the journal lives in its .git
	f  *os.File
}

// journalRel is the journal, relative to the work tree: inside the .git
// the agent's shell reaches, so it is opened through the work tree's
// descriptor, never through a link, never a FIFO.
const journalRel = ".git/memfsd/replacing"

type journalEntry struct {
	Path string `json:"path"`
	Old  []byte `json:"old"`
	New  []byte `json:"new"`
}

func newReplaceJournal() *replaceJournal { return &replaceJournal{} }

// record notes that rel, holding old, is about to be overwritten with new.
// The journal holds only the write in progress (cleared once it is done),
// so what a crash leaves is exactly the write it cut short.
func (j *replaceJournal) record(rel string, old, new []byte) error {
	if j.f == nil {
		if j.wt == nil {
			return errors.New("journal: no work tree")
		}
		f, err := j.wt.OpenFile(journalRel, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, worktree.ErrNotFile) || errors.Is(err, unix.ELOOP) {
			// A link, FIFO or such put at its name (the agent's shell
			// reaches .git): removed (the name itself), then made anew.
			_ = j.wt.Remove(journalRel)
			f, err = j.wt.OpenFile(journalRel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		j.f = f
	}
	line, err := json.Marshal(journalEntry{Path: rel, Old: old, New: new})
	if err != nil {
		return err
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := j.f.WriteAt(append(line, '\n'), 0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// written notes that the write last recorded is whole.
func (j *replaceJournal) written() {
	if j.f != nil {
		_ = j.f.Truncate(0)
	}
}

// done removes the journal at the end of a section under r.mu.
func (j *replaceJournal) done() {
	if j.f == nil {
		return
	}
	j.f.Close()
	j.f = nil
	if j.wt != nil {
		_ = j.wt.Remove(journalRel)
	}
}

// recoverTorn finishes the in-place write a killed memfsd left half done
// and removes the journal; it returns the paths it repaired. It runs only
// when no other memfsd process uses the repo (a live daemon's journal is
// its own). A file that holds anything other than a mix of the recorded
// old and new versions (the agent wrote it since) is left alone; a
// journal that cannot be read is reported and removed, never fatal.
func (r *Repo) recoverTorn() []string {
	if !r.soleOwner {
		return nil
	}
	f, err := r.wt.Read(journalRel)
	if err != nil || f == nil {
		if err != nil {
			r.log.Warn("the replace journal is not a plain file; removed", "err", err)
			_ = r.wt.Remove(journalRel)
		}
		return nil
	}
	var fixed []string
	sc := bufio.NewScanner(bytes.NewReader(f.Data))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // the line being written when memfsd died: its write had not begun
		}
		if _, err := worktree.Clean(e.Path); err != nil || r.symlinkedParent(e.Path) != "" {
			continue
		}
		cur, err := r.readDisplacedAt(e.Path)
		if err != nil || !cur.existed || cur.mode == filemode.Symlink || !torn(cur.data, e.Old, e.New) {
			continue
		}
		if _, _, _, err := r.replaceWorkFile(e.Path, func(now displaced) ([]byte, filemode.FileMode, bool) {
			return e.New, now.mode, now.existed && bytes.Equal(now.data, cur.data)
		}); err != nil {
			r.log.Warn("could not finish a replace a crash cut short", "path", e.Path, "err", err)
			continue
		}
		fixed = append(fixed, e.Path)
	}
	r.journal.done()
	_ = r.wt.Remove(journalRel)
	return fixed
}

// torn reports whether cur is what an in-place write of new over old leaves
// when it stops part way: new's first k bytes, then old's from k on (the
// write done, the truncate not yet, is k = len(new)).
func torn(cur, old, new []byte) bool {
	if bytes.Equal(cur, old) || bytes.Equal(cur, new) {
		return false
	}
	k := 0
	for k < len(cur) && k < len(new) && cur[k] == new[k] {
		k++
	}
	switch {
	case len(cur) > len(old):
		return k == len(cur) // new's start, longer than all of old
	case len(cur) < len(old):
		return false
	}
	// Same length as old: new's first k' bytes (k' <= k), then old's.
	s := 0
	for s < len(cur) && cur[len(cur)-1-s] == old[len(old)-1-s] {
		s++
	}
	return len(cur)-s <= k
}
