package gitstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The agent's shell can write anything into its .git: every file memfsd
// reads there is input, read through OpenGitFile / ReadGitFile with one
// of these caps. git's own refs/files-backend.c refuses what is not a
// regular file and caps symbolic refs the same way.
const (
	// MaxRefSize caps HEAD, a loose ref and other one-line files (gc.pid).
	MaxRefSize = 4 << 10
	// MaxPackedRefsSize caps packed-refs (a million refs is ~60 MiB).
	MaxPackedRefsSize = 64 << 20
	// MaxConfigSize caps .git/config.
	MaxConfigSize = 1 << 20
	// MaxIndexSize caps the index and a shared index (git's index for
	// a million paths is ~100 MiB; memory folders are far smaller: 32 MiB
	// is some 300,000 paths). The index is read whole, and one agent's
	// file must not cost the daemon serving every agent hundreds of MiB
	// (a sparse 100 MiB index took it past 650 MiB RSS under the race
	// detector; TestWalls_FuzzOneAgentsGitDir).
	MaxIndexSize = 32 << 20
	// MaxPackIndexSize caps a pack's .idx (28 bytes an object and more:
	// 128 MiB is over four million objects), read whole by a repack.
	MaxPackIndexSize = 128 << 20
	// MaxSymrefDepth bounds a chain of symbolic refs (git's SYMREF_MAXDEPTH).
	MaxSymrefDepth = 5
)

// Errors of the reader, besides fs.ErrNotExist for a file that is not there.
var (
	// ErrNotRegular is a FIFO, device, socket, folder or symbolic link
	// where a file of git's was expected.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is a file over its cap.
	ErrTooLarge = errors.New("too large")
)

// GitFileError names the file of gitDir that could not be read.
type GitFileError struct {
	Rel string // relative to .git, slash-separated
	Err error
}

func (e *GitFileError) Error() string { return fmt.Sprintf("read .git/%s: %v", e.Rel, e.Err) }
func (e *GitFileError) Unwrap() error { return e.Err }

// OpenGitFile opens rel (slash-separated, below gitDir) for reading as
// untrusted input: no symbolic link is followed anywhere from gitDir's own
// last component down (a folder on the way the agent swapped for a link
// would lead memfsd, which sees every agent's folder, out of this one),
// the open never blocks (a FIFO or device opens at once and is then
// refused), and anything but a regular file of at most max bytes is an
// error naming the file. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist) (so is a path through a file: ENOTDIR).
// The caller closes the file; its size is fi.Size().
func OpenGitFile(gitDir, rel string, max int64) (*os.File, os.FileInfo, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(rel))
	fd, err := openBeneath(gitDir, rel)
	switch {
	case err == nil:
	case errors.Is(err, syscall.ENOTDIR):
		return nil, nil, &GitFileError{Rel: rel, Err: &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}}
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV):
		return nil, nil, &GitFileError{Rel: rel, Err: fmt.Errorf("%w: is or goes through a symbolic link", ErrNotRegular)}
	default:
		return nil, nil, &GitFileError{Rel: rel, Err: &os.PathError{Op: "open", Path: path, Err: err}}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &GitFileError{Rel: rel, Err: err}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &GitFileError{Rel: rel, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(fi.Mode()))}
	}
	if fi.Size() > max {
		f.Close()
		return nil, nil, &GitFileError{Rel: rel, Err: fmt.Errorf("%w: %d bytes, the cap is %d", ErrTooLarge, fi.Size(), max)}
	}
	return f, fi, nil
}

// ReadGitFile reads rel below gitDir whole, with OpenGitFile's checks; a
// file that grows past max while being read is refused too.
func ReadGitFile(gitDir, rel string, max int64) ([]byte, error) {
	f, fi, err := OpenGitFile(gitDir, rel, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, fi.Size()+1)
	data, err = readAllLimited(f, data, max)
	if err != nil {
		return nil, &GitFileError{Rel: rel, Err: err}
	}
	return data, nil
}

func readAllLimited(r io.Reader, buf []byte, max int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: max + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%w: grew past the cap of %d bytes", ErrTooLarge, max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}

// noOpenat2 is set once openat2 answered ENOSYS (a kernel before 5.6).
var noOpenat2 atomic.Bool

// Flags of openBeneathAs's last component.
const (
	fileFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	dirFlags  = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	pathFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// openBeneath opens rel beneath gitDir read-only and non-blocking,
// following no link: not gitDir's last component, not a folder on the
// way, not the file (ELOOP, or EXDEV for a ".." out of gitDir).
func openBeneath(gitDir, rel string) (int, error) { return openBeneathAs(gitDir, rel, fileFlags) }

// openBeneathAs is openBeneath with last as the open flags of rel's last
// component (dirFlags for a folder to list, pathFlags for a folder to
// stat in); rel "" or "." is gitDir itself.
func openBeneathAs(gitDir, rel string, last int) (int, error) {
	dfd, err := openRetry(func() (int, error) { return unix.Open(gitDir, dirFlags, 0) })
	if err == unix.ENOTDIR {
		// O_DIRECTORY answers a link ENOTDIR, before O_NOFOLLOW's ELOOP.
		if fi, lerr := os.Lstat(gitDir); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			err = unix.ELOOP
		}
	}
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	if rel == "" || rel == "." {
		if last&unix.O_PATH != 0 || last&unix.O_DIRECTORY != 0 {
			return unix.Dup(dfd)
		}
		return -1, unix.EISDIR
	}
	if !noOpenat2.Load() {
		how := &unix.OpenHow{Flags: uint64(last), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := openRetry(func() (int, error) { return unix.Openat2(dfd, rel, how) })
		if err != unix.ENOSYS {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	// The walk: each folder opened with O_NOFOLLOW relative to the last.
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dfd)
	if err != nil {
		return -1, err
	}
	for i, part := range parts {
		if part == "" || part == "." || part == ".." {
			unix.Close(cur)
			return -1, unix.EXDEV
		}
		fl := dirFlags
		if i == len(parts)-1 {
			fl = last
		}
		next, err := openRetry(func() (int, error) { return unix.Openat(cur, part, fl, 0) })
		if err == unix.ENOTDIR && fl&unix.O_DIRECTORY != 0 {
			var st unix.Stat_t
			if unix.Fstatat(cur, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// StatGitFile is the lstat of rel below gitDir, never followed and never
// opened (a FIFO does not block it): what is there, of whatever kind. Used
// where only a file's presence and age count (a person's REVERT_HEAD, a
// rebase-merge/ folder). A path through a file is fs.ErrNotExist.
func StatGitFile(gitDir, rel string) (os.FileInfo, error) {
	fi, err := os.Lstat(filepath.Join(gitDir, filepath.FromSlash(rel)))
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, &GitFileError{Rel: rel, Err: &os.PathError{Op: "lstat", Path: rel, Err: syscall.ENOENT}}
	}
	if err != nil {
		return nil, &GitFileError{Rel: rel, Err: err}
	}
	return fi, nil
}
