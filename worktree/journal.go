package worktree

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// replaceJournal records each in-place replace (see replaceWorkFile) before
// it writes: a write into a file's own inode is not atomic, and a memfsd
// killed in the middle of one would leave the file holding the start of the
// new version and the rest of the old. RecoverTorn, at the next start,
// finds such a torn file from the journal and finishes the write. The
// journal goes when the section under the repository's lock that wrote it
// ends (Files.Done): by then every write is whole.
//
// A process kill leaves the page cache intact, so the journal is not
// fsynced; after a power loss the work tree is what the filesystem kept,
// as for any program's files.
type replaceJournal struct {
	wt *Dir // the work tree: the journal lives in its .git
	f  *os.File
}

// JournalRel is the replace journal, relative to the work tree: inside the .git
// the agent's shell reaches, so it is opened through the work tree's
// descriptor, never through a link, never a FIFO.
const JournalRel = ".git/memfsd/replacing"

// JournalEntry is one line of the journal: a replace of Path, from Old to New.
type JournalEntry struct {
	Path string `json:"path"`
	Old  []byte `json:"old"`
	New  []byte `json:"new"`
}

// record notes that rel, holding old, is about to be overwritten with new.
// The journal holds only the write in progress (cleared once it is done),
// so what a crash leaves is exactly the write it cut short.
func (j *replaceJournal) record(rel string, old, new []byte) error {
	if j.f == nil {
		if j.wt == nil {
			return errors.New("journal: no work tree")
		}
		f, err := j.wt.OpenFile(JournalRel, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, ErrNotFile) || errors.Is(err, unix.ELOOP) {
			// A link, FIFO or such put at its name (the agent's shell
			// reaches .git): removed (the name itself), then made anew.
			_ = j.wt.Remove(JournalRel)
			f, err = j.wt.OpenFile(JournalRel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		j.f = f
	}
	line, err := json.Marshal(JournalEntry{Path: rel, Old: old, New: new})
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

// done removes the journal at the end of a section (Files.Done).
func (j *replaceJournal) done() {
	if j.f == nil {
		return
	}
	j.f.Close()
	j.f = nil
	if j.wt != nil {
		_ = j.wt.Remove(JournalRel)
	}
}

// RecoverTorn finishes the in-place write a killed memfsd left half done
// and removes the journal; it returns the paths it repaired. The caller
// runs it only when no other memfsd process uses the repo (a live
// daemon's journal is its own). A file that holds anything other than a mix of the recorded
// old and new versions (the agent wrote it since) is left alone; a
// journal that cannot be read is reported and removed, never fatal.
func (wf *Files) RecoverTorn() []string {
	f, err := wf.dir.Read(JournalRel)
	if err != nil || f == nil {
		if err != nil {
			wf.log.Warn("the replace journal is not a plain file; removed", "err", err)
			_ = wf.dir.Remove(JournalRel)
		}
		return nil
	}
	var fixed []string
	sc := bufio.NewScanner(bytes.NewReader(f.Data))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var e JournalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // the line being written when memfsd died: its write had not begun
		}
		if _, err := Clean(e.Path); err != nil || wf.symlinkedParent(e.Path) != "" {
			continue
		}
		cur, err := wf.readDisplacedAt(e.Path)
		if err != nil || !cur.Existed || cur.Mode == Symlink || !torn(cur.Data, e.Old, e.New) {
			continue
		}
		if _, _, _, err := wf.replaceWorkFile(e.Path, func(now Displaced) ([]byte, Mode, bool) {
			return e.New, now.Mode, now.Existed && bytes.Equal(now.Data, cur.Data)
		}); err != nil {
			wf.log.Warn("could not finish a replace a crash cut short", "path", e.Path, "err", err)
			continue
		}
		fixed = append(fixed, e.Path)
	}
	wf.journal.done()
	_ = wf.dir.Remove(JournalRel)
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
