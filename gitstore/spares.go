package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Allocating an inode is the dearest step of a commit on ext4 here (~200 µs
// of kernel time per new file, against ~20 µs to rename or link one), and a
// commit needs about seven new files (blob, trees, commit, two locks). So
// spares keeps a pool of empty files, made ahead of time in the background,
// in .git/memfsd/spare: an object is written into a spare and renamed into
// place, and a lock is taken by link(2)ing a spare to "<name>.lock", which
// fails if the lock exists, exactly like O_CREAT|O_EXCL.
type Spares struct {
	gitDir string
	dir    string
	self   procOwner // whose spares this pool makes (see owner.go)
	target int       // 0 until the repo has taken spareWarm files
	taken  int

	mu    sync.Mutex
	names []string
	kick  chan struct{}
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// spareTarget is how many spare files are kept ready (a few bursts' worth).
const spareTarget = 64

// spareWarm is how many files a repo takes before it gets a pool: an agent
// that only ever made its first commit (a thousand of them start at once
// on a daemon's first run) costs no spare files; one that writes gets its
// pool from about its third commit on. (Measured: 64 spares for each of
// 1,000 new agents were 9 of the 12 CPU-seconds of their start-up.)
const spareWarm = 16

// NewSpares is the spare files of gitDir, not yet started (Start).
func NewSpares(gitDir string) *Spares {
	return &Spares{
		gitDir: gitDir,
		dir:    filepath.Join(gitDir, filepath.FromSlash(spareRel)),
		self:   thisProcess(),
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// Start adopts the spares a process that is gone left (each renamed to
// this process's name first, so no other process adopts it too) and starts
// the refill loop. Spares of a live process, another memfsd on this home
// (a one-shot `memfsd sync` beside the daemon) or another repo of this
// one, are never used or removed: they are that process's.
func (s *Spares) Start() {
	s.once.Do(func() {
		if entries, err := listSpares(s.gitDir); err == nil {
			for _, e := range entries {
				if name := s.adopt(e.Name()); name != "" {
					s.names = append(s.names, name)
				}
			}
		}
		s.wg.Add(1)
		go s.loop()
		// No refill yet: an agent that never writes costs no files (a
		// daemon may hold a thousand agents); the first take fills it.
	})
}

// spareRel is the spare folder, relative to the .git.
const spareRel = "memfsd/spare"

// maxSpareList bounds a listing of the spare folder: the pools of a few
// processes hold spareTarget files each, and the agent may put any number
// there (the files past the bound are not looked at).
const maxSpareList = 4096

// listSpares lists gitDir's spare folder beneath gitDir, through no link,
// at most maxSpareList entries, each lstat-ed: the folder lies in the
// agent's .git, and the agent may make it (or .git/memfsd) a link to
// another agent's, or anywhere; a link lists nothing (an error).
func listSpares(gitDir string) ([]os.FileInfo, error) {
	return readDirBeneathMax(gitDir, spareRel, maxSpareList)
}

// adopt takes over the spare file name if its process is gone: it returns
// the spare's new name, or "" when it is not free for this pool.
func (s *Spares) adopt(name string) string {
	owner, ok := spareOwner(name)
	if !ok || owner == s.self || owner.Alive() {
		return ""
	}
	path := filepath.Join(s.dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if nlink(fi) > 1 {
		// A lock the dead process held (or a crash between link and
		// unlink): its name here is how ClearStaleLocks knows the lock
		// is memfsd's, so it stays.
		return ""
	}
	if !fi.Mode().IsRegular() || fi.Size() != 0 {
		_ = os.Remove(path)
		return ""
	}
	mine := s.newName()
	if err := os.Rename(path, mine); err != nil {
		return "" // another process adopted it first
	}
	return mine
}

// newName is a new spare file name of this pool's process.
func (s *Spares) newName() string {
	return filepath.Join(s.dir, sparePrefix(s.self)+strconv.FormatInt(spareSeq.Add(1), 10))
}

// spareSeq numbers the spare files of this process, across all its pools
// (two repos of one process may share a spare folder).
var spareSeq atomic.Int64

// Stop ends the refill loop and waits for it.
func (s *Spares) Stop() {
	s.once.Do(func() {}) // never start after stop
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Spares) loop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.kick:
			s.refill()
		}
	}
}

// refillSoon asks the loop to top the pool up; it never blocks.
func (s *Spares) refillSoon() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Spares) refill() {
	for {
		select {
		case <-s.done:
			return
		default:
		}
		s.mu.Lock()
		full := len(s.names) >= s.target
		s.mu.Unlock()
		if full {
			return
		}
		name, err := s.create()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.names = append(s.names, name)
		s.mu.Unlock()
	}
}

func (s *Spares) create() (string, error) {
	name := s.newName()
	dfd, err := s.openDir()
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, filepath.Base(name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return "", &os.PathError{Op: "create", Path: name, Err: err}
	}
	return name, unix.Close(fd)
}

// openDir opens the spare folder by descriptor, each component beneath
// the .git and through no link, making what is missing. The spare folder
// lies in the agent's .git: a file, FIFO or link the agent put where it
// (or .git/memfsd) belongs is removed, never followed, and the folder made
// again. Followed, a link made memfsd write its spares (and so its
// objects and locks) into whatever folder it pointed to (found by
// TestSpares_LinkedFolderNeverWrittenThrough); left there, anything else
// failed every commit of that agent for good, even after the agent put
// its .git back (TestWalls_FuzzOneAgentsGitDir: "make spare file: ... not
// a directory").
func (s *Spares) openDir() (int, error) {
	cur, err := openBeneathAs(s.gitDir, ".", pathFlags)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", s.gitDir, err)
	}
	for _, part := range strings.Split(spareRel, "/") {
		var st unix.Stat_t
		err := unix.Fstatat(cur, part, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			_ = unix.Unlinkat(cur, part, 0)
			err = unix.ENOENT
		}
		if err == unix.ENOENT {
			if err := unix.Mkdirat(cur, part, 0o700); err != nil && err != unix.EEXIST {
				unix.Close(cur)
				return -1, &os.PathError{Op: "mkdir", Path: s.dir, Err: err}
			}
		}
		next, err := openRetry(func() (int, error) { return unix.Openat(cur, part, pathFlags, 0) })
		unix.Close(cur)
		if err != nil {
			// A link put there since the check: refused, not followed.
			return -1, &os.PathError{Op: "open", Path: s.dir, Err: err}
		}
		cur = next
	}
	return cur, nil
}

// take returns an empty file open for writing and its current name. When
// the pool is empty it makes one on the spot.
func (s *Spares) take() (*os.File, string, error) {
	s.mu.Lock()
	var name string
	if n := len(s.names); n > 0 {
		name = s.names[n-1]
		s.names = s.names[:n-1]
	}
	if s.taken++; s.taken > spareWarm {
		s.target = spareTarget
	}
	low := len(s.names) < s.target/2
	s.mu.Unlock()
	if low {
		s.refillSoon()
	}
	if name != "" {
		if f, err := s.openSpare(name); err == nil {
			return f, name, nil
		}
		// The pool lies in the agent's .git: a spare removed or replaced
		// there (the folder put back from a copy, say) is no spare, and
		// the others likely went with it. Drop them all and make one now:
		// a lost pool cost this write, and every later one, a failure
		// until the daemon restarted (found by TestWalls_FuzzOneAgentsGitDir).
		s.mu.Lock()
		s.names = nil
		s.mu.Unlock()
		s.refillSoon()
	}
	var err error
	if name, err = s.create(); err != nil {
		return nil, "", fmt.Errorf("make spare file: %w", err)
	}
	f, err := s.openSpare(name)
	if err != nil {
		return nil, "", err
	}
	return f, name, nil
}

// openSpare opens the spare file name for writing, empty. The spare lies
// in the agent's .git: never follow a link there (on any component:
// opened beneath the .git), never wait on a FIFO
// (O_NONBLOCK: ENXIO without a reader), only a regular file with no other
// name is a spare (one hard-linked to another file would truncate that
// file), and it is emptied only once it is known to be one.
func (s *Spares) openSpare(name string) (*os.File, error) {
	fd, err := openBeneathAs(s.gitDir, spareRel+"/"+filepath.Base(name), unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open spare file: %w", &os.PathError{Op: "open", Path: name, Err: err})
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || nlink(fi) != 1 {
		f.Close()
		return nil, fmt.Errorf("open spare file %s: %w", name, ErrNotRegular)
	}
	if fi.Size() != 0 {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("open spare file: %w", err)
		}
	}
	return f, nil
}

// linkExclusive gives the spare the name path too, if nothing has it yet
// (fs.ErrExist otherwise). The spare keeps its own name while the lock is
// held: a lock whose inode also has a name in the spare folder is
// memfsd's, which lets a restart tell its own dead locks from a live git.
func linkExclusive(spare, path string) error {
	if err := os.Link(spare, path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) && errors.Is(le.Err, syscall.EEXIST) {
			return fs.ErrExist
		}
		return err
	}
	return nil
}

// give returns an unused spare to the pool.
func (s *Spares) give(name string) {
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
}

func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
