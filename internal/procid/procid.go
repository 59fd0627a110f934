// Package procid names a process so that another process can tell whether
// it still runs: its pid and its start time (field 22 of /proc/<pid>/stat,
// clock ticks since boot), so a pid the kernel gave to a new process does
// not pass for the old one. memfsd names what it leaves in a repository's
// .git (spare lock files, temporary files) with it: a live process's are
// never used or removed by another, a dead one's are recovered.
package procid

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ID is one process: its pid and start time (0 if unknown).
type ID struct {
	Pid   int
	Start uint64
}

var (
	selfOnce sync.Once
	self     ID
)

// Self is the running process.
func Self() ID {
	selfOnce.Do(func() {
		self = ID{Pid: os.Getpid()}
		self.Start, _ = startOf(self.Pid)
	})
	return self
}

// startOf reads pid's start time from /proc (ok false when there is no
// such process).
func startOf(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start at the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, true
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 { // f[0] is field 3: field 22 is f[19]
		return 0, true
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, true
	}
	return st, true
}

// Alive reports whether id still runs (the same process, not a new one
// with its pid). Without a start time (a name from an older memfsd) a live
// pid counts as alive.
func (id ID) Alive() bool {
	if id.Pid <= 0 {
		return false
	}
	st, ok := startOf(id.Pid)
	if !ok {
		return false
	}
	return id.Start == 0 || st == 0 || st == id.Start
}

// String is "<pid>-<start>", as names carry it.
func (id ID) String() string {
	return strconv.Itoa(id.Pid) + "-" + strconv.FormatUint(id.Start, 10)
}

// Parse reads "<pid>-<start>" from the start of s and returns the rest
// after the next "-" (ok false when s does not start that way).
func Parse(s string) (id ID, rest string, ok bool) {
	pid, after, found := strings.Cut(s, "-")
	if !found {
		return ID{}, "", false
	}
	start, rest, _ := strings.Cut(after, "-")
	var err error
	if id.Pid, err = strconv.Atoi(pid); err != nil {
		return ID{}, "", false
	}
	if id.Start, err = strconv.ParseUint(start, 10, 64); err != nil {
		return ID{}, "", false
	}
	return id, rest, true
}
