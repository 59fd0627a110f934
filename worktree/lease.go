package worktree

// File leases: how memfsd replaces a file the agent may be writing without
// losing a byte, whatever the writer's pattern.
//
// A Linux write lease (fcntl F_SETLEASE, F_WRLCK) is granted only while no
// other descriptor has the file open, and while it is held another
// process's open(2) or truncate(2) of the file waits (up to
// /proc/sys/fs/lease-break-time) until the holder lets go. So memfsd opens
// the file, takes the lease, reads what is there, decides, and writes the
// new version into the same inode, in place; then lets go. A writer that
// truncates and writes (Node's fs.writeFile, Python's open(p, "w"), the
// shell's >) or appends (>>) either finished before the lease (memfsd read
// its bytes) or opens after it, on the file at the name, holding the new
// version: no write lands on a file that has left the folder. A writer
// that renames a temporary file over the name replaces the inode memfsd
// holds; the caller sees that (the name no longer holds its inode) and
// leaves the agent's file alone. A file with a second hard link is not
// leased (ErrNotFile): writing in place would change the other name too.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// ErrNoLease is returned where the filesystem (or the file's owner) gives
// no write lease: the caller replaces by rename-exchange instead.
var ErrNoLease = errors.New("no file lease")

// ErrNotOwner is returned for a file that belongs to another user: only
// its owner (or a process with CAP_LEASE) may lease it.
var ErrNotOwner = errors.New("file belongs to another user; no lease")

// ErrBusy is returned when another process kept the file open for the whole
// wait (a long-running reader or writer).
var ErrBusy = errors.New("file kept open by another process")

// ErrNotFile is returned when the path is a folder, a symbolic link or
// something else that is not a regular file.
var ErrNotFile = errors.New("not a regular file")

// Leased is a work file opened beneath the memory folder and held under a
// write lease: no other descriptor has it open, and an open(2) by another
// process waits until Release.
type Leased struct {
	fd   int
	rel  string
	max  int64 // the cap of Read
	stat syscall.Stat_t
}

// leaseFd takes the write lease on fd, an open work file (closed on error);
// Read reads at most max bytes of it.
func leaseFd(fd int, rel string, wait time.Duration, max int64) (*Leased, error) {
	l := &Leased{fd: fd, rel: rel, max: max}
	if err := syscall.Fstat(fd, &l.stat); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if l.stat.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", rel, ErrNotFile)
	}
	if l.stat.Nlink != 1 {
		// Another name (maybe outside the folder) shares the inode: an
		// in-place write would change it too. The exchange breaks the link.
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w (%d links)", rel, ErrNotFile, l.stat.Nlink)
	}
	deadline := time.Now().Add(wait)
	pause := 200 * time.Microsecond
	for {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, unix.EAGAIN) {
			unix.Close(fd)
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return nil, fmt.Errorf("%s: %w: %v", rel, ErrNotOwner, err)
			}
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
				return nil, fmt.Errorf("%s: %w: %v", rel, ErrNoLease, err)
			}
			return nil, fmt.Errorf("lease %s: %w", rel, err)
		}
		if time.Now().After(deadline) {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", rel, ErrBusy)
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// Stat is the file's stat as last read or written through the lease.
func (l *Leased) Stat() *syscall.Stat_t { s := l.stat; return &s }

// Executable reports whether the file has an execute bit.
func (l *Leased) Executable() bool { return l.stat.Mode&0o111 != 0 }

// Read returns the whole file: one over the folder's cap (by its fstat, or
// grown past it) is a *TooLargeError, never read whole.
func (l *Leased) Read() ([]byte, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(l.fd, &st); err != nil {
		return nil, err
	}
	if st.Size > l.max {
		return nil, &TooLargeError{Path: l.rel, Size: st.Size, Max: l.max, Stat: &st}
	}
	data := make([]byte, 0, st.Size)
	buf := make([]byte, min(max(st.Size+1, 512), l.max+1))
	var off int64
	for {
		n, err := unix.Pread(l.fd, buf, off)
		if n > 0 {
			data = append(data, buf[:n]...)
			off += int64(n)
			if off > l.max {
				return nil, &TooLargeError{Path: l.rel, Size: off, Max: l.max, Stat: &st}
			}
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return data, nil
		}
	}
}

// Write makes the file hold exactly data with the execute bits of exec (0700
// or 0600), in place, and returns its new stat. No other process sees a
// half-written file: none can open it until Release.
func (l *Leased) Write(data []byte, exec bool) (*syscall.Stat_t, error) {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(l.fd, data[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, io.ErrShortWrite
		}
		off += n
	}
	if err := unix.Ftruncate(l.fd, int64(len(data))); err != nil {
		return nil, err
	}
	perm := uint32(fsperm.File())
	if exec {
		perm = uint32(fsperm.Exec())
	}
	if l.stat.Mode&0o777 != perm {
		if err := unix.Fchmod(l.fd, perm); err != nil {
			return nil, err
		}
	}
	if err := syscall.Fstat(l.fd, &l.stat); err != nil {
		return nil, err
	}
	return l.Stat(), nil
}

// BreakPending reports whether another process is waiting to open the
// file (the lease is being broken).
func (l *Leased) BreakPending() bool {
	t, err := unix.FcntlInt(uintptr(l.fd), unix.F_GETLEASE, 0)
	return err == nil && t != unix.F_WRLCK
}

// Release lets go of the lease (an open waiting on it goes on) and closes
// the file.
func (l *Leased) Release() error {
	if l.fd < 0 {
		return nil
	}
	_, err := unix.FcntlInt(uintptr(l.fd), unix.F_SETLEASE, unix.F_UNLCK)
	if cerr := unix.Close(l.fd); err == nil {
		err = cerr
	}
	l.fd = -1
	return err
}

// ProbeLeases reports whether files in the folder dir beneath d (a folder
// of the memory's filesystem, e.g. its .git) can be leased: nil, or why
// not. The probe file is made and removed through d, never by name.
func ProbeLeases(d *Dir, dir string) error {
	rel := dir + "/" + TempName("lease")
	f, err := d.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	defer d.Remove(rel)
	l, err := d.Lease(rel, 0)
	if err != nil {
		return err
	}
	return l.Release()
}

var noOpenat2 bool

func openAt(dirFd int, rel string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if !noOpenat2 {
		fd, err := unix.Openat2(dirFd, rel, &unix.OpenHow{
			Flags:   uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		for err == unix.EINTR || err == unix.EAGAIN {
			fd, err = unix.Openat2(dirFd, rel, &unix.OpenHow{
				Flags:   uint64(flags),
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
			})
		}
		if err != unix.ENOSYS {
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: rel, Err: err}
			}
			return fd, nil
		}
		noOpenat2 = true
	}
	// The walk: each folder opened with O_NOFOLLOW relative to the last.
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dirFd)
	if err != nil {
		return -1, err
	}
	for i, part := range parts {
		if part == "" || part == "." || part == ".." {
			unix.Close(cur)
			return -1, &os.PathError{Op: "open", Path: rel, Err: unix.EXDEV}
		}
		fl := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			fl = flags
		}
		next, err := unix.Openat(cur, part, fl, 0)
		unix.Close(cur)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: rel, Err: err}
		}
		cur = next
	}
	return cur, nil
}
