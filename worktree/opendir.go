package worktree

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirNoFollow opens the folder at path as OpenDir does, but refuses a
// symbolic link at its last part: a folder the agent may swap for a link
// (a shared repository's view) is held open only when it is a real one.
func OpenDirNoFollow(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{path: path, fd: fd}, nil
}
