package gitmem

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/filemode"
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
	path string
	f    *os.File
}

type journalEntry struct {
	Path string `json:"path"`
	Old  []byte `json:"old"`
	New  []byte `json:"new"`
}

func newReplaceJournal(gitDir string) *replaceJournal {
	return &replaceJournal{path: filepath.Join(gitDir, "memfsd", "replacing")}
}

// record notes that rel, holding old, is about to be overwritten with new.
func (j *replaceJournal) record(rel string, old, new []byte) error {
	if j.f == nil {
		if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		j.f = f
	}
	line, err := json.Marshal(journalEntry{Path: rel, Old: old, New: new})
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// done removes the journal: every write it recorded finished.
func (j *replaceJournal) done() {
	if j.f == nil {
		return
	}
	j.f.Close()
	j.f = nil
	os.Remove(j.path)
}

// recoverTorn finishes the in-place writes a killed memfsd left half done
// and removes the journal; it returns the paths it repaired. A file that
// holds anything other than a mix of the recorded old and new versions
// (the agent wrote it since) is left alone.
func (r *Repo) recoverTorn() ([]string, error) {
	data, err := os.ReadFile(r.journal.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.journal.path, err)
	}
	var fixed []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // the line being written when memfsd died: its write had not begun
		}
		if _, err := cleanPath(e.Path); err != nil {
			continue
		}
		if r.symlinkedParent(e.Path) != "" {
			continue
		}
		cur, err := r.readDisplacedAt(e.Path)
		if err != nil || !cur.existed || cur.mode == filemode.Symlink || !torn(cur.data, e.Old, e.New) {
			continue
		}
		if _, _, _, err := r.replaceWorkFile(e.Path, func(now displaced) ([]byte, filemode.FileMode, bool) {
			return e.New, now.mode, now.existed && bytes.Equal(now.data, cur.data)
		}); err != nil {
			return fixed, err
		}
		fixed = append(fixed, e.Path)
	}
	r.journal.done()
	os.Remove(r.journal.path)
	return fixed, nil
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
