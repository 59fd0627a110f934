// Package fsperm holds the modes memfsd gives what it makes for the agent:
// private by default (folders 0700, files 0600, sockets 0600), or shared
// with memfsd's group on request (--share-group: the memory folder's
// folders 0770 and files 0660, the agent's sockets 0660, and <home>,
// agents/ and agents/<id>/ 0710 so the group can reach them but not list
// them), for a sidecar and an agent that run as different users in one
// group. What is memfsd's alone (records, the embedded remote, the admin
// socket, token files) stays private in both modes. The mode is set once,
// before anything is made, for the whole process.
package fsperm

import (
	"os"
	"sync/atomic"
)

var group atomic.Bool

// ShareGroup sets the process's mode: true shares the agent's folders,
// files and sockets with memfsd's group.
func ShareGroup(on bool) { group.Store(on) }

// Shared reports whether the agent's things are shared with the group.
func Shared() bool { return group.Load() }

// Dir is the mode of a folder in the memory (0700, shared 0770).
func Dir() os.FileMode {
	if group.Load() {
		return 0o770
	}
	return 0o700
}

// Root is the mode of the memory folder itself: Dir, and shared also
// set-group-ID, so every folder and file made in it (by the agent too,
// whatever its primary group) belongs to memfsd's group, which memfsd
// reads and writes through.
func Root() os.FileMode {
	if group.Load() {
		return 0o770 | os.ModeSetgid
	}
	return 0o700
}

// File is the mode of a memory file (0600, shared 0660).
func File() os.FileMode {
	if group.Load() {
		return 0o660
	}
	return 0o600
}

// Exec is the mode of an executable memory file (0700, shared 0770).
func Exec() os.FileMode {
	if group.Load() {
		return 0o770
	}
	return 0o700
}

// Path is the mode of the folders on the way to an agent's memory and
// socket: <home>, agents/, agents/<id>/ (0700, shared 0710: the group
// may pass, not list or write).
func Path() os.FileMode {
	if group.Load() {
		return 0o710
	}
	return 0o700
}

// Socket is the mode of a socket given to the agent (0600, shared 0660:
// connecting needs write permission).
func Socket() os.FileMode {
	if group.Load() {
		return 0o660
	}
	return 0o600
}
