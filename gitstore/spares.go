package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Allocating an inode is the dearest step of a commit on ext4 here (~200 µs
// of kernel time per new file, against ~20 µs to rename or link one), and a
// commit needs about seven new files (blob, trees, commit, two locks). So
// spares keeps a pool of empty files, made ahead of time in the background,
// in .git/memfsd/spare: an object is written into a spare and renamed into
// place, and a lock is taken by link(2)ing a spare to "<name>.lock", which
// fails if the lock exists, exactly like O_CREAT|O_EXCL.
type Spares struct {
	dir    string
	target int // 0 until the repo has taken spareWarm files
	taken  int

	mu    sync.Mutex
	names []string
	seq   int
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
		dir:  filepath.Join(gitDir, "memfsd", "spare"),
		kick: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
}

// Start adopts spares left by an earlier run and starts the refill loop.
func (s *Spares) Start() {
	s.once.Do(func() {
		if entries, err := os.ReadDir(s.dir); err == nil {
			for _, e := range entries {
				// A spare that also has another name (a crash between link
				// and unlink) is not free: drop our name for it.
				if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 && nlink(fi) == 1 {
					s.names = append(s.names, filepath.Join(s.dir, e.Name()))
				} else {
					_ = os.Remove(filepath.Join(s.dir, e.Name()))
				}
			}
		}
		s.wg.Add(1)
		go s.loop()
		// No refill yet: an agent that never writes costs no files (a
		// daemon may hold a thousand agents); the first take fills it.
	})
}

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
	s.mu.Lock()
	s.seq++
	name := filepath.Join(s.dir, "s"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(s.seq))
	s.mu.Unlock()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return "", err
		}
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", err
	}
	return name, f.Close()
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
	if name == "" {
		var err error
		if name, err = s.create(); err != nil {
			return nil, "", fmt.Errorf("make spare file: %w", err)
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open spare file: %w", err)
	}
	return f, name, nil
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
