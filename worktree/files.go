package worktree

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/gitfmt/codec"
)

// Files is the whole life of the engine's work files on top of a Dir:
// what the repository decides a file should become, Files makes so
// without losing a byte the agent writes meanwhile (under a write lease,
// else by rename-exchange, with a journal for a write a crash cuts
// short), moving aside what stands in the way as a conflict copy. One
// Files per repository; its steps run under the repository's lock, and
// Done ends each such section.
type Files struct {
	dir     *Dir
	store   Store
	log     *slog.Logger
	journal *replaceJournal
	// leaseWaited is how long this section waited for leases.
	leaseWaited time.Duration
}

// Store is what Files asks of the object store: a pull's base version,
// to merge with an agent's write, and whether git already has some bytes.
type Store interface {
	Blob(h plumbing.Hash) ([]byte, error)
	Has(h plumbing.Hash) bool
}

// NewFiles is the work files of the folder d, reading store and logging
// to log.
func NewFiles(d *Dir, store Store, log *slog.Logger) *Files {
	return &Files{dir: d, store: store, log: log, journal: &replaceJournal{wt: d}}
}

// Done ends a section of work-file steps: the journal goes (every write
// is whole by now) and the lease wait starts again from zero.
func (wf *Files) Done() {
	if wf == nil {
		return
	}
	wf.journal.done()
	wf.leaseWaited = 0
}

// Displaced is what stood at a work-tree path at the instant memfsd
// replaced or removed it.
type Displaced struct {
	Existed bool
	Data    []byte
	Mode    Mode
}

// Is reports whether the displaced file was exactly the blob h with mode
// (absent matches a zero hash).
func (d Displaced) Is(h plumbing.Hash, mode Mode) bool {
	if !d.Existed {
		return h.IsZero()
	}
	return !h.IsZero() && blobHash(d.Data) == h && d.Mode == mode
}

func blobHash(data []byte) plumbing.Hash { return codec.Hash(plumbing.BlobObject, data) }

// ConflictName is where the local side of a true conflict is kept:
// "notes/today.md" → "notes/today.conflict-1a2b3c4.md".
func ConflictName(p string, commit plumbing.Hash) string {
	dir, file := path.Split(p)
	ext := path.Ext(file)
	if ext == file { // ".profile": the whole name is the stem
		ext = ""
	}
	return dir + strings.TrimSuffix(file, ext) + ".conflict-" + commit.String()[:7] + ext
}

// IsConflictCopy reports whether p is a conflict copy made by memfsd.
func IsConflictCopy(p string) bool {
	file := path.Base(p)
	i := strings.LastIndex(file, ".conflict-")
	if i < 0 || len(file) < i+len(".conflict-")+7 {
		return false
	}
	hex := file[i+len(".conflict-") : i+len(".conflict-")+7]
	return strings.Trim(hex, "0123456789abcdef") == ""
}

// Every read, write, exchange and removal of a work file goes through r.wt,
// the memory folder held open (Dir): relative to its descriptor,
// never through a symbolic link the agent may swap in between a check and
// an act. This file holds the engine's work-file steps on top of it.

func toDisplaced(f *File) Displaced {
	if f == nil {
		return Displaced{}
	}
	data := f.Data
	if data == nil {
		data = []byte{}
	}
	return Displaced{Existed: true, Data: data, Mode: f.Mode}
}

func isDirStat(st *syscall.Stat_t) bool {
	return st != nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

// parentOf is rel's folder ("" for the root).
func parentOf(rel string) string {
	d := path.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

// readDisplacedAt reads what stands at rel; absent is not an error.
func (wf *Files) readDisplacedAt(rel string) (Displaced, error) {
	f, err := wf.dir.Read(rel)
	return toDisplaced(f), err
}

// writeWorkFile writes a blob into the work tree in one step (mode 0600,
// or 0700 for executables; folders 0700) and returns its stat for the
// index. A folder standing where the file goes is removed when empty and
// moved aside when it holds the agent's files; so is a file standing where
// a folder goes.
func (wf *Files) writeWorkFile(rel string, data []byte, mode Mode) (*syscall.Stat_t, error) {
	if err := wf.makeWay(rel); err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, err := wf.dir.WriteFile(rel, data, mode, false)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	return st, nil
}

// makeWay readies rel's place for a file: real folders up to it (a link or
// a file standing where one goes is moved aside), and no folder at it.
func (wf *Files) makeWay(rel string) error {
	if err := wf.realParents(rel); err != nil {
		return err
	}
	if dir := parentOf(rel); dir != "" {
		if err := wf.dir.MkdirAll(dir); err != nil {
			if err := wf.replaceFileWithDir(dir); err != nil {
				return err
			}
		}
	}
	if st, err := wf.dir.Lstat(rel); err == nil && isDirStat(st) {
		return wf.clearDir(rel)
	}
	return nil
}

// replaceFileWithDir makes the folder dir where a file stands on its path:
// the tree's deletion of that file came first and it is back, so it is the
// agent's, kept beside as a conflict copy.
func (wf *Files) replaceFileWithDir(dir string) error {
	for p := dir; p != ""; p = parentOf(p) {
		if st, err := wf.dir.Lstat(p); err == nil && !isDirStat(st) {
			if err := wf.moveAside(p); err != nil {
				return err
			}
			break
		}
	}
	return wf.dir.MkdirAll(dir)
}

// clearDir makes way for a file where a folder stands: an empty folder is
// removed, one still holding files (the agent's) is moved aside.
func (wf *Files) clearDir(rel string) error {
	if err := wf.dir.Remove(rel); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return wf.moveAside(rel)
}

// moveAside renames what stands at rel (a file, a link, or a folder holding
// the agent's files) to a conflict-copy name beside it, so the tree can put
// something else there without destroying it; the copy is committed next.
func (wf *Files) moveAside(rel string) error {
	seed := blobHash([]byte(fmt.Sprintf("%s %d", rel, time.Now().UnixNano())))
	if err := wf.dir.Rename(rel, ConflictName(rel, seed), unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("move %s aside: %w", rel, err)
	}
	return nil
}

// symlinkedParent returns the first folder on rel's path that is a symbolic
// link (relative to the work tree), "" when none: a write through it would
// land outside the work tree (an agent's `ln -s .. esc`).
func (wf *Files) symlinkedParent(rel string) string {
	for p, rest := "", rel; ; {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return ""
		}
		if p == "" {
			p = rest[:i]
		} else {
			p += "/" + rest[:i]
		}
		rest = rest[i+1:]
		st, err := wf.dir.Lstat(p)
		if err != nil {
			return "" // missing from here on: MkdirAll makes real folders
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return p
		}
		if !isDirStat(st) {
			return ""
		}
	}
}

// realParents makes sure nothing written at rel goes through a symbolic
// link: a link standing where a folder of the tree goes is moved aside (it
// is committed next as the agent's), then the folder is made for real. The
// writes themselves refuse any link on the path (Dir); this turns
// that refusal into a tree that can be written.
func (wf *Files) realParents(rel string) error {
	for i := 0; i < 64; i++ {
		link := wf.symlinkedParent(rel)
		if link == "" {
			return nil
		}
		if err := wf.moveAside(link); err != nil {
			return err
		}
		wf.log.Warn("a symbolic link stood where the tree has a folder; moved aside", "link", link)
	}
	return fmt.Errorf("%s: too many symbolic links on the path", rel)
}

// noExchange is set once the filesystem refuses RENAME_EXCHANGE; from then
// on the fallback replace reads first and renames over (a small window in
// which an agent's write can be displaced unseen).
var noExchange atomic.Bool

// renameByExchange puts data at rel in one step and returns exactly what it
// displaced: the new version is written to a temporary file beside it and
// swapped in with renameat2(RENAME_EXCHANGE), so a write that finished
// before is displaced (and returned, for the caller to check and put back)
// or lands on the new version afterwards. A write through a descriptor
// opened before the swap lands in the displaced file: the lease
// (replaceWorkFile) is what closes that window.
func (wf *Files) renameByExchange(rel string, data []byte, mode Mode) (Displaced, *syscall.Stat_t, error) {
	if err := wf.makeWay(rel); err != nil {
		return Displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	for {
		if noExchange.Load() {
			old, err := wf.readDisplacedAt(rel)
			if err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			st, err := wf.dir.WriteFile(rel, data, mode, false)
			if err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			return old, st, nil
		}
		f, st, err := wf.dir.Exchange(rel, data, mode)
		if errors.Is(err, ErrNoExchange) {
			if !noExchange.Swap(true) {
				wf.log.Warn("the filesystem has no rename-exchange: replacing work-tree files by read-then-rename", "err", err)
			}
			continue
		}
		if err != nil {
			return Displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
		}
		return toDisplaced(f), st, nil
	}
}

// takeByRename removes rel in one step (renamed aside, then read) and
// returns what it removed; folders it leaves empty go too.
func (wf *Files) takeByRename(rel string) (Displaced, error) {
	if wf.symlinkedParent(rel) != "" {
		return Displaced{}, nil // not in the work tree: nothing of ours to take
	}
	if st, err := wf.dir.Lstat(rel); err != nil || isDirStat(st) {
		return Displaced{}, nil
	}
	aside := wf.asideName(rel)
	if err := wf.dir.Rename(rel, aside, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return Displaced{}, nil
		}
		return Displaced{}, fmt.Errorf("delete %s: %w", rel, err)
	}
	old, err := wf.readDisplacedAt(aside)
	if err != nil {
		// Put it back rather than lose it.
		_ = wf.dir.Rename(aside, rel, unix.RENAME_NOREPLACE)
		return old, fmt.Errorf("delete %s: %w", rel, err)
	}
	wf.dir.Remove(aside)
	wf.removeEmptyParents(rel)
	return old, nil
}

// asideName is a temporary name for rel taken aside: in TempDir,
// where no tree path can be (a crash leaves it to RecoverLeftovers).
func (wf *Files) asideName(rel string) string {
	return TempDir + "/" + TempName("take")
}

// removeEmptyParents removes the folders above rel that it left empty.
func (wf *Files) removeEmptyParents(rel string) {
	for d := parentOf(rel); d != ""; d = parentOf(d) {
		if wf.dir.Remove(d) != nil {
			break
		}
	}
}

// sameFile reports whether rel names the file whose stat is st.
func (wf *Files) sameFile(rel string, st *syscall.Stat_t) bool {
	now, err := wf.dir.Lstat(rel)
	return err == nil && now.Dev == st.Dev && now.Ino == st.Ino
}

// keepCopy puts data beside rel as a conflict copy (unless one with the same
// bytes is there already) and returns its path.
func (wf *Files) keepCopy(rel string, data []byte, mode Mode) (string, error) {
	copyRel := ConflictName(rel, blobHash(data))
	if _, _, err := wf.dir.Create(copyRel, data, mode); err != nil {
		return copyRel, fmt.Errorf("keep %s: %w", copyRel, err)
	}
	return copyRel, nil
}
