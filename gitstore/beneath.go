package gitstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Everything memfsd reads under an agent's .git is resolved beneath that
// .git and through no symbolic link, on every component (openBeneathAs:
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a walk by
// descriptor with O_NOFOLLOW on a kernel without it). A fan-out folder
// objects/ab the agent swapped for a link to another agent's objects (the
// daemon sees every agent's folder) led a1's socket to answer with a2's
// file; O_NOFOLLOW on the last component alone did not stop it
// (TestWalls_LinkedObjectsNeverReadAcross). What cannot be reached so is
// missing, and the repository remembers why (Refusals) for the status.

// cleanRel is name (a billy path, relative to .git) as openBeneathAs
// takes it: slash-separated, cleaned, without a leading slash.
func cleanRel(name string) string {
	return strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(name, "\\", "/")), "/")
}

// linkRefused reports whether err is what a link on the way (ELOOP), a
// ".." out of .git (EXDEV) or a file where a folder should be (ENOTDIR)
// gives: the file is then missing.
func linkRefused(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV)
}

// statBeneath is the lstat of rel beneath gitDir, reached through no
// link (a link at rel itself is what it reports, never followed).
func statBeneath(gitDir, rel string) (*unix.Stat_t, error) {
	rel = cleanRel(rel)
	dir, name := path.Split(rel)
	if name == "" {
		name = "."
	}
	dfd, err := openBeneathAs(gitDir, strings.TrimSuffix(dir, "/"), pathFlags)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

// ReadDirBeneath lists the folder rel beneath gitDir (reached through no
// link), sorted by name, each entry lstat-ed relative to the folder's
// descriptor: a link is listed as a link, never followed. A FIFO or a file
// where the folder should be is an error at once, never a wait.
func ReadDirBeneath(gitDir, rel string) ([]os.FileInfo, error) {
	return readDirBeneathMax(gitDir, rel, -1)
}

// readDirBeneathMax is ReadDirBeneath listing at most max names (all when
// max < 0): for a folder of memfsd's own under the agent's .git (the spare
// folder), which the agent may fill with any number of files.
func readDirBeneathMax(gitDir, rel string, max int) ([]os.FileInfo, error) {
	full := path.Join(gitDir, rel)
	fd, err := openBeneathAs(gitDir, cleanRel(rel), dirFlags)
	if linkRefused(err) {
		return nil, &os.PathError{Op: "open", Path: full, Err: fmt.Errorf("%w: is or goes through a symbolic link (%w)", ErrNotRegular, err)}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(fd), full)
	defer d.Close()
	names, err := d.Readdirnames(max)
	if max > 0 && errors.Is(err, io.EOF) {
		err = nil // an empty folder
	}
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: full, Err: err}
	}
	slices.Sort(names)
	out := make([]os.FileInfo, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		out = append(out, statInfo(n, &st))
	}
	return out, nil
}

// statInfo is st as an os.FileInfo named name.
func statInfo(name string, st *unix.Stat_t) os.FileInfo {
	m := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFLNK:
		m |= os.ModeSymlink
	case unix.S_IFIFO:
		m |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= os.ModeSocket
	case unix.S_IFCHR:
		m |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		m |= os.ModeDevice
	}
	return fileInfo{name: name, size: st.Size, mode: m, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), sys: toSyscallStat(st)}
}

func toSyscallStat(st *unix.Stat_t) *syscall.Stat_t {
	var out syscall.Stat_t
	out.Dev, out.Ino, out.Nlink, out.Mode = st.Dev, st.Ino, st.Nlink, st.Mode
	out.Uid, out.Gid, out.Rdev, out.Size = st.Uid, st.Gid, st.Rdev, st.Size
	out.Mtim = syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}
	return &out
}

type fileInfo struct {
	name  string
	size  int64
	mode  os.FileMode
	mtime time.Time
	sys   *syscall.Stat_t
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() os.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return f.mtime }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return f.sys }

// Refusals remembers what memfsd would not read in one agent's .git and
// why (a link on the way, alternates, an object over the cap): the last
// few, newest first, each for refusalTTL after it was last met, for the
// agent's status. Safe for concurrent use.
type Refusals struct {
	mu   sync.Mutex
	list []refusal
}

type refusal struct {
	line string
	at   time.Time
}

// maxRefusals bounds what Refusals keeps; refusalTTL is how long one is
// shown after it was last met (a link removed since drops out).
const (
	maxRefusals = 8
	refusalTTL  = 10 * time.Minute
)

// Note records that rel was refused for why.
func (r *Refusals) Note(rel, why string) {
	if r == nil {
		return
	}
	line := fmt.Sprintf(".git/%s: %s", rel, why)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = slices.DeleteFunc(r.list, func(f refusal) bool { return f.line == line })
	r.list = slices.Insert(r.list, 0, refusal{line, time.Now()})
	if len(r.list) > maxRefusals {
		r.list = r.list[:maxRefusals]
	}
}

// List is what was refused lately, newest first.
func (r *Refusals) List() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.list {
		if time.Since(f.at) < refusalTTL {
			out = append(out, f.line)
		}
	}
	return out
}

// ReadFileBeneath reads the regular file rel beneath gitDir, reached
// through no link, judging its size on the open descriptor before reading
// (over max: ErrTooLarge, nothing read) and reading at most max bytes
// whatever the file grows to meanwhile: for memfsd's own files under the
// .git an agent can write.
func ReadFileBeneath(gitDir, rel string, max int64) ([]byte, error) {
	full := path.Join(gitDir, rel)
	fd, err := openBeneath(gitDir, cleanRel(rel))
	if linkRefused(err) {
		return nil, &os.PathError{Op: "open", Path: full, Err: fmt.Errorf("%w: is or goes through a symbolic link (%w)", ErrNotRegular, err)}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: full, Err: fmt.Errorf("%w: %s", ErrNotRegular, fi.Mode().Type())}
	}
	if fi.Size() > max {
		return nil, &os.PathError{Op: "read", Path: full, Err: fmt.Errorf("%w: %d bytes, the cap is %d", ErrTooLarge, fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: full, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &os.PathError{Op: "read", Path: full, Err: fmt.Errorf("%w: grew past the cap of %d while read", ErrTooLarge, max)}
	}
	return data, nil
}
