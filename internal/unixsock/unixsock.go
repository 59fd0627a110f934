// Package unixsock binds and dials unix sockets at paths of any length.
// A socket address holds at most 107 bytes of path (sun_path is 108 with
// its NUL), and <home>/agents/<128-char id>/memfsd.sock is longer than
// that. A longer path is reached through its folder's descriptor:
// /proc/self/fd/<dir>/<name> is short, and bind and connect resolve the
// folder through the descriptor (Linux).
package unixsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxPath is the longest path a socket address holds directly.
const MaxPath = 107

// Listener is a unix socket listener that removes its file on Close
// (only while the file is still the socket it bound and no one serves it).
type Listener struct {
	net.Listener
	path string
	dev  uint64
	ino  uint64
	once sync.Once
	err  error
}

// Listen binds a unix socket at path with mode 0600, creating its folder
// (0700) when missing. A file left at path by a process that is gone (a
// SIGKILLed daemon's socket) is replaced; a socket someone serves is not.
func Listen(path string) (*Listener, error) { return ListenMode(path, 0o600) }

// ListenMode is Listen with the socket's mode given (0660 for a socket
// shared with memfsd's group, fsperm.Socket).
func ListenMode(path string, mode os.FileMode) (*Listener, error) {
	dir, name := filepath.Split(path)
	if name == "" {
		return nil, fmt.Errorf("listen unix://%s: not a file path", path)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("listen unix://%s: %w", path, err)
	}
	var l *Listener
	err := withShortPath(path, func(short string) error {
		if _, err := os.Lstat(path); err == nil {
			if c, err := net.DialTimeout("unix", short, time.Second); err == nil {
				c.Close()
				return errors.New("another memfsd is serving it")
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove the stale socket file: %w", err)
			}
		}
		ln, err := net.Listen("unix", short)
		if err != nil {
			return err
		}
		// The file is removed by path in Close, after checking it is
		// still ours: the /proc name dies with the descriptor.
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		// The folder is 0700 (or, shared, the group's), so no one else
		// reaches the socket before its mode is narrowed.
		var st unix.Stat_t
		if err := os.Chmod(path, mode); err != nil {
			ln.Close()
			return err
		}
		if err := unix.Lstat(path, &st); err != nil {
			ln.Close()
			return err
		}
		l = &Listener{Listener: ln, path: path, dev: st.Dev, ino: st.Ino}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listen unix://%s: %w", path, err)
	}
	return l, nil
}

// Addr is the socket's real path (not the short name it was bound by).
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Path is the socket file's path.
func (l *Listener) Path() string { return l.path }

// Close stops listening and removes the socket file, unless another
// process has put its own socket there since.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.err = l.Listener.Close()
		// An inode number is reused at once, so a file with ours may be a
		// new socket: one someone answers on is not ours to remove.
		var st unix.Stat_t
		if unix.Lstat(l.path, &st) != nil || st.Dev != l.dev || st.Ino != l.ino {
			return
		}
		_ = withShortPath(l.path, func(short string) error {
			if c, err := net.DialTimeout("unix", short, time.Second); err == nil {
				c.Close()
				return nil
			}
			return os.Remove(l.path)
		})
	})
	return l.err
}

// Dial connects to the unix socket at path, however long.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var c net.Conn
	err := withShortPath(path, func(short string) error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "unix", short)
		return err
	})
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: path, Net: "unix"}, Err: unwrapOp(err)}
	}
	return c, nil
}

// unwrapOp keeps the cause of a net.OpError (so a dial error names the
// real path, not the /proc one).
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// withShortPath calls fn with a name for path that fits a socket
// address: path itself, or /proc/self/fd/<dir>/<name> while the folder is
// held open.
func withShortPath(path string, fn func(short string) error) error {
	if len(path) <= MaxPath {
		return fn(path)
	}
	dir, name := filepath.Split(path)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	short := fmt.Sprintf("/proc/self/fd/%d/%s", fd, name)
	if len(short) > MaxPath {
		return fmt.Errorf("socket name %q: %d bytes, longer than a socket address holds (%d): use a shorter name", name, len(name), MaxPath)
	}
	if err := fn(short); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			if _, serr := os.Stat("/proc/self/fd"); serr != nil {
				return fmt.Errorf("%w (a path over %d bytes is reached through /proc/self/fd, which is not mounted: mount /proc or use a shorter --home)", err, MaxPath)
			}
		}
		return err
	}
	return nil
}
