package worktree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memfsd/memfsd/internal/procid"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// TempDir is where memfsd makes its temporary files for a memory folder:
// inside the folder's .git, a place no tree path can be (git never tracks
// .git), on the folder's own filesystem (a rename from there into the tree
// is one step). A file of any name in the tree is the agent's, never
// mistaken for memfsd's. Names there are <kind>-<pid>-<start>-<seq> (see
// internal/procid): what a process that is gone left is a crash leftover
// (RecoverLeftovers).
const TempDir = ".git/memfsd/tmp"

// TempName is a new name in TempDir for a temporary file of kind (w: a
// file being written; take: a work file taken aside to be removed).
func TempName(kind string) string {
	return kind + "-" + procid.Self().String() + "-" + strconv.FormatInt(tmpSeq.Add(1), 10)
}

// openTempDir opens TempDir beneath d, made when missing.
func (d *Dir) openTempDir() (int, error) {
	if d.temp != "" {
		if err := os.MkdirAll(d.temp, 0o700); err != nil {
			return -1, err
		}
		fd, err := unix.Open(d.temp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: d.temp, Err: err}
		}
		return fd, nil
	}
	fd, _, err := d.openParent(TempDir+"/x", true)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		// A link or a file where memfsd's folder belongs (the agent's
		// shell reaches .git): removed, never followed, and made again.
		_ = d.Remove(TempDir)
		fd, _, err = d.openParent(TempDir+"/x", true)
	}
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", TempDir, err)
	}
	return fd, nil
}

// Mode is what a work file is, as git records it.
type Mode int

// The kinds of work file git tracks.
const (
	Regular Mode = iota
	Executable
	Symlink
	// Other is a file git records with a mode of its own (0100664, go-git's
	// filemode.Deprecated, which an agent's git can make): written as a
	// Regular file, and never what a read finds, so a file read back from
	// the folder is never taken for that tree entry.
	Other
)

// File is a work file as read: its bytes (a link's target for a Symlink)
// and the stat taken as it was read.
type File struct {
	Data []byte
	Mode Mode
	Stat *syscall.Stat_t
}

// Dir is the agent's memory folder, held open. Every operation is relative
// to its descriptor (or to a folder opened beneath it) and never follows a
// symbolic link the agent may have put anywhere on the path: a name the
// agent swaps for a link between memfsd's check and its act is refused by
// the kernel, not by a check that came before.
type Dir struct {
	path string
	fd   int
	// temp, when set, is the folder (an absolute path outside the tree,
	// on its filesystem) for temporary files instead of TempDir beneath
	// the root: for a folder with no .git of its own (a shared view).
	temp string
	// maxRead caps a file read whole (DefaultMaxRead when zero).
	maxRead int64
}

// DefaultMaxRead caps a work file read whole when the folder's owner set
// no cap (SetMaxRead). The agent writes any bytes into its folder: a
// sparse 1 TB file costs it no disk, and reading it whole (or only
// allocating its st_size) killed the daemon serving every agent with
// "fatal error: out of memory" (TestWalls_SparseFileHeldTooLarge).
const DefaultMaxRead = 64 << 20

// ErrTooLarge is a work file over the cap of the read (TooLargeError).
var ErrTooLarge = errors.New("too large")

// TooLargeError is a work file left unread because it is over the cap: its
// size from fstat, or what the read found past the cap when it grew
// meanwhile.
type TooLargeError struct {
	Path string
	Size int64 // bytes (at least Max+1 when it grew while being read)
	Max  int64
	Stat *syscall.Stat_t // the file's fstat
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("read %s: %v: %d bytes, the cap is %d (not read; make it smaller or remove it)", e.Path, ErrTooLarge, e.Size, e.Max)
}
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// SetMaxRead caps every file d reads whole at n bytes (n <= 0: the
// default): a larger one is an error (*TooLargeError) and is never read.
func (d *Dir) SetMaxRead(n int64) { d.maxRead = n }

// MaxRead is the cap of d's reads.
func (d *Dir) MaxRead() int64 {
	if d.maxRead > 0 {
		return d.maxRead
	}
	return DefaultMaxRead
}

// SetTempDir makes abs, a folder outside d on d's filesystem, the place
// of d's temporary files (made when missing; a link there is refused).
// For a folder that has no .git: TempDir would make one in it.
func (d *Dir) SetTempDir(abs string) { d.temp = abs }

// OpenDir opens the memory folder at path.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{path: path, fd: fd}, nil
}

// Path is the folder's path (for messages; operations use the descriptor).
func (d *Dir) Path() string { return d.path }

// Close lets the folder go.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// split returns rel's folder part ("" for the root) and its base name.
func split(rel string) (string, string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

// openParent opens the folder holding rel beneath d (creating missing
// folders 0700 when create) and returns its descriptor and rel's base name.
func (d *Dir) openParent(rel string, create bool) (int, string, error) {
	dir, name := split(rel)
	if name == "" || name == "." || name == ".." {
		return -1, "", &os.PathError{Op: "open", Path: rel, Err: unix.EINVAL}
	}
	if dir == "" {
		fd, err := unix.Dup(d.fd)
		return fd, name, err
	}
	fd, err := openAt(d.fd, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || !create || !errors.Is(err, unix.ENOENT) {
		return fd, name, err
	}
	if err := d.MkdirAll(dir); err != nil {
		return -1, "", err
	}
	fd, err = openAt(d.fd, dir, unix.O_PATH|unix.O_DIRECTORY)
	return fd, name, err
}

// MkdirAll makes the folder rel and its missing parents (0700) beneath d,
// refusing to go through a symbolic link or a file.
func (d *Dir) MkdirAll(rel string) error {
	cur, err := unix.Dup(d.fd)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return &os.PathError{Op: "mkdir", Path: rel, Err: unix.EINVAL}
		}
		if err := unix.Mkdirat(cur, part, uint32(fsperm.Dir())); err != nil && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "mkdir", Path: rel, Err: err}
		}
		next, err := unix.Openat(cur, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "mkdir", Path: rel, Err: err}
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// Lstat stats rel without following a link (on the path or at its end).
func (d *Dir) Lstat(rel string) (*syscall.Stat_t, error) {
	pfd, name, err := d.openParent(rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return toSyscall(&st), nil
}

func toSyscall(st *unix.Stat_t) *syscall.Stat_t {
	var out syscall.Stat_t
	out.Dev, out.Ino, out.Nlink, out.Mode = st.Dev, st.Ino, st.Nlink, st.Mode
	out.Uid, out.Gid, out.Rdev, out.Size = st.Uid, st.Gid, st.Rdev, st.Size
	out.Blksize, out.Blocks = st.Blksize, st.Blocks
	out.Atim = syscall.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec}
	out.Mtim = syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}
	out.Ctim = syscall.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec}
	return &out
}

// Read reads the work file rel: a regular file's bytes, or a link's target
// (the link itself is never followed). A missing file, or a folder where
// the file was, is (nil, nil); so is a path through a link or a file. A
// file over d's cap (MaxRead) is a *TooLargeError and is not read.
func (d *Dir) Read(rel string) (*File, error) { return d.ReadLimit(rel, d.MaxRead()) }

// ReadLimit is Read with a cap of max bytes: a file over it, by its fstat
// before the read or by what the read finds, is a *TooLargeError (errors.Is
// ErrTooLarge), never held whole.
func (d *Dir) ReadLimit(rel string, max int64) (*File, error) {
	pfd, name, err := d.openParent(rel, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	return readAt(pfd, name, rel, max)
}

// maxLinkTarget bounds a link's target as read (Linux's PATH_MAX is 4096;
// st_size is whatever the filesystem says).
const maxLinkTarget = 64 << 10

// readAt is ReadLimit of name in the folder pfd.
func readAt(pfd int, name, rel string, limit int64) (*File, error) {
	for attempt := 0; ; attempt++ {
		var st unix.Stat_t
		if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil, nil
			}
			return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return nil, nil
		case unix.S_IFLNK:
			buf := make([]byte, min(max(st.Size, 0), maxLinkTarget)+1)
			n, err := unix.Readlinkat(pfd, name, buf)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
				continue // replaced meanwhile: look again
			}
			if err != nil {
				return nil, &os.PathError{Op: "readlink", Path: rel, Err: err}
			}
			return &File{Data: buf[:n], Mode: Symlink, Stat: toSyscall(&st)}, nil
		case unix.S_IFREG:
		default:
			return nil, fmt.Errorf("read %s: %w (%o)", rel, ErrNotFile, st.Mode&unix.S_IFMT)
		}
		fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		if errors.Is(err, unix.ELOOP) && attempt < 3 {
			continue // became a link meanwhile
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: rel, Err: err}
		}
		f := os.NewFile(uintptr(fd), rel)
		var fst unix.Stat_t
		if err := unix.Fstat(fd, &fst); err != nil {
			f.Close()
			return nil, err
		}
		if fst.Size > limit {
			// Judged by fstat before a byte is read: a sparse file of any
			// size costs nothing.
			f.Close()
			return nil, &TooLargeError{Path: rel, Size: fst.Size, Max: limit, Stat: toSyscall(&fst)}
		}
		data, err := readAll(f, fst.Size, limit)
		f.Close()
		if tl, ok := err.(*TooLargeError); ok {
			tl.Path, tl.Stat = rel, toSyscall(&fst)
			return nil, tl
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: rel, Err: err}
		}
		// A write between the stat and the read would leave a stat that
		// describes content the bytes do not hold: read again.
		var after unix.Stat_t
		if unix.Fstatat(pfd, name, &after, unix.AT_SYMLINK_NOFOLLOW) == nil && attempt < 3 &&
			(after.Ino != fst.Ino || after.Size != fst.Size || after.Mtim != fst.Mtim || after.Ctim != fst.Ctim) {
			continue
		}
		mode := Regular
		if fst.Mode&0o111 != 0 {
			mode = Executable
		}
		return &File{Data: data, Mode: mode, Stat: toSyscall(&fst)}, nil
	}
}

// readAll reads f, whose fstat said size (at most max), through a limit of
// max+1 bytes: a file that grew past max meanwhile is a *TooLargeError.
func readAll(f *os.File, size, max int64) ([]byte, error) {
	r := &io.LimitedReader{R: f, N: max + 1}
	data := make([]byte, 0, min(size, max)+512)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > max {
			return nil, &TooLargeError{Size: int64(len(data)), Max: max}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return data, nil
			}
			return data, err
		}
		if n == 0 {
			return data, nil
		}
	}
}

var tmpSeq atomic.Int64

// writeTemp makes a new temporary file (or link) holding data in the folder
// pfd (TempDir) and returns its name there.
func writeTemp(pfd int, data []byte, mode Mode, sync bool) (string, error) {
	for {
		name := TempName("w")
		if mode == Symlink {
			err := unix.Symlinkat(string(data), pfd, name)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			return name, err
		}
		perm := uint32(fsperm.File())
		if mode == Executable {
			perm = uint32(fsperm.Exec())
		}
		fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", err
		}
		f := os.NewFile(uintptr(fd), name)
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(os.FileMode(perm)) // whatever the umask
		}
		if err == nil && sync {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			unix.Unlinkat(pfd, name, 0)
			return "", err
		}
		return name, nil
	}
}

// WriteFile puts data at rel in one step (a temporary file beside it, then
// a rename over it; missing folders made 0700) and returns the new file's
// stat.
func (d *Dir) WriteFile(rel string, data []byte, mode Mode, sync bool) (*syscall.Stat_t, error) {
	pfd, name, err := d.openParent(rel, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	tfd, err := d.openTempDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(tfd)
	tmp, err := writeTemp(tfd, data, mode, sync)
	if err != nil {
		return nil, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := unix.Renameat(tfd, tmp, pfd, name); err != nil {
		unix.Unlinkat(tfd, tmp, 0)
		return nil, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, nil
	}
	return toSyscall(&st), nil
}

// Remove removes the file (or empty folder) rel.
func (d *Dir) Remove(rel string) error {
	pfd, name, err := d.openParent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	err = unix.Unlinkat(pfd, name, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// Lease takes a write lease on the work file rel (see Lease).
func (d *Dir) Lease(rel string, wait time.Duration) (*Leased, error) {
	fd, err := openAt(d.fd, rel, unix.O_RDWR|unix.O_NONBLOCK)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		// Not writable for memfsd (the agent's chmod 0444): replaced by
		// the exchange, which needs no write permission on the file.
		return nil, fmt.Errorf("%s: %w: %v", rel, ErrNotOwner, err)
	}
	if errors.Is(err, unix.EAGAIN) {
		// Another process holds a lease on it (O_NONBLOCK: not waiting).
		return nil, fmt.Errorf("%s: %w: %v", rel, ErrBusy, err)
	}
	if err != nil {
		return nil, err
	}
	return leaseFd(fd, rel, wait, d.MaxRead())
}

// ErrNoExchange is returned where the filesystem has no rename-exchange.
var ErrNoExchange = errors.New("no rename-exchange on this filesystem")

// Exchange puts data at rel in one step and returns exactly what it
// displaced (nil when nothing stood there) and the new file's stat: the new
// version is written beside it and swapped in with
// renameat2(RENAME_EXCHANGE).
func (d *Dir) Exchange(rel string, data []byte, mode Mode) (*File, *syscall.Stat_t, error) {
	pfd, name, err := d.openParent(rel, true)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(pfd)
	tfd, err := d.openTempDir()
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(tfd)
	tmp, err := writeTemp(tfd, data, mode, false)
	if err != nil {
		return nil, nil, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	keep := false // the displaced file, too large to read, kept
	defer func() {
		if !keep {
			unix.Unlinkat(tfd, tmp, 0) // after an exchange it holds the displaced file
		}
	}()
	var old *File
	for attempt := 0; ; attempt++ {
		err = unix.Renameat2(tfd, tmp, pfd, name, unix.RENAME_EXCHANGE)
		if err == nil {
			if old, err = readAt(tfd, tmp, rel, d.MaxRead()); err != nil {
				if errors.Is(err, ErrTooLarge) {
					// Not read, and not lost: swapped back into its place
					// (memfsd's version goes), or kept where it is.
					if unix.Renameat2(tfd, tmp, pfd, name, unix.RENAME_EXCHANGE) != nil {
						keep = true
					}
				}
				return nil, nil, fmt.Errorf("write %s: read what it displaced: %w", rel, err)
			}
			if old == nil {
				old = &File{Data: []byte{}} // a folder cannot be exchanged; never here
			}
			break
		}
		if errors.Is(err, unix.ENOENT) {
			err = unix.Renameat2(tfd, tmp, pfd, name, unix.RENAME_NOREPLACE)
			if err == nil {
				break
			}
			if errors.Is(err, unix.EEXIST) && attempt < 10 {
				continue // created meanwhile: exchange instead
			}
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil, fmt.Errorf("write %s: %w: %v", rel, ErrNoExchange, err)
		}
		return nil, nil, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return old, nil, nil
	}
	return old, toSyscall(&st), nil
}

// Create puts data at rel only if nothing stands there, and says whether it
// did.
func (d *Dir) Create(rel string, data []byte, mode Mode) (*syscall.Stat_t, bool, error) {
	pfd, name, err := d.openParent(rel, true)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(pfd)
	tfd, err := d.openTempDir()
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(tfd)
	tmp, err := writeTemp(tfd, data, mode, false)
	if err != nil {
		return nil, false, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	defer unix.Unlinkat(tfd, tmp, 0)
	if err := unix.Renameat2(tfd, tmp, pfd, name, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, false, nil
		}
		return nil, false, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, true, nil
	}
	return toSyscall(&st), true, nil
}

// Rename moves oldRel to newRel, both beneath d (flags as renameat2's, e.g.
// unix.RENAME_NOREPLACE); the names' own links are moved, never followed.
func (d *Dir) Rename(oldRel, newRel string, flags uint) error {
	opfd, oname, err := d.openParent(oldRel, false)
	if err != nil {
		return err
	}
	defer unix.Close(opfd)
	npfd, nname, err := d.openParent(newRel, true)
	if err != nil {
		return err
	}
	defer unix.Close(npfd)
	if err := unix.Renameat2(opfd, oname, npfd, nname, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: oldRel, New: newRel, Err: err}
	}
	return nil
}

// Entry is one name in a folder, with its lstat.
type Entry struct {
	Name string
	Stat *syscall.Stat_t
}

// IsDir reports whether the entry is a folder (a link to one is not).
func (e Entry) IsDir() bool { return e.Stat.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// IsLink reports whether the entry is a symbolic link.
func (e Entry) IsLink() bool { return e.Stat.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// ReadDir lists the folder rel ("" for the root) beneath d, sorted by name,
// each entry lstat-ed relative to the folder's descriptor.
func (d *Dir) ReadDir(rel string) ([]Entry, error) {
	var fd int
	var err error
	if rel == "" {
		fd, err = unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	} else {
		fd, err = openAt(d.fd, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: rel, Err: err}
	}
	slices.Sort(names)
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		out = append(out, Entry{Name: n, Stat: toSyscall(&st)})
	}
	return out, nil
}

// RemoveAll removes rel and, for a folder, everything below it, without
// following any link (a link is removed, never what it points to).
func (d *Dir) RemoveAll(rel string) error {
	pfd, name, err := d.openParent(rel, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := removeAllAt(pfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

func removeAllAt(pfd int, name string, depth int) error {
	err := unix.Unlinkat(pfd, name, 0)
	if err == nil || !(errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM)) {
		return err
	}
	if depth > 256 {
		return unix.ELOOP
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return err
	}
	for _, n := range names {
		if err := removeAllAt(fd, n, depth+1); err != nil && !errors.Is(err, unix.ENOENT) {
			f.Close()
			return err
		}
	}
	f.Close()
	return unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
}

// Stat stats the memory folder itself (through its descriptor).
func (d *Dir) Stat() (*syscall.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return toSyscall(&st), nil
}

// RemoveDir removes the folder rel only if it is an empty folder: a file
// or a link that took its name meanwhile is left alone (unlike Remove).
func (d *Dir) RemoveDir(rel string) error {
	pfd, name, err := d.openParent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: rel, Err: err}
	}
	return nil
}

// OpenFile opens the regular file rel beneath d with flags (O_NOFOLLOW,
// O_NONBLOCK and O_CLOEXEC added; with O_CREAT, perm for a new file):
// never through a link, never a FIFO or device (ErrNotFile).
func (d *Dir) OpenFile(rel string, flags int, perm uint32) (*os.File, error) {
	pfd, name, err := d.openParent(rel, flags&unix.O_CREAT != 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", rel, ErrNotFile)
	}
	return os.NewFile(uintptr(fd), rel), nil
}
