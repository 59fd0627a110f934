package gitstore

import (
	"strconv"
	"strings"

	"github.com/memfsd/memfsd/internal/procid"
)

// A spare file's name says which process made it: s<pid>-<start>-<seq>
// (see internal/procid). A process uses and removes only its own spares
// and those of a process that is gone (issue 27: a one-shot `memfsd sync`
// beside the daemon took the daemon's spares and removed them under it).

// procOwner is one process (see internal/procid).
type procOwner = procid.ID

// thisProcess is the running process.
func thisProcess() procOwner { return procid.Self() }

// sparePrefix starts the names of o's spare files.
func sparePrefix(o procOwner) string { return "s" + o.String() + "-" }

// spareOwner parses a spare file's name: s<pid>-<start>-<seq>, or an older
// memfsd's s<pid>-<seq> (start unknown). ok is false for any other name.
func spareOwner(name string) (procOwner, bool) {
	rest, found := strings.CutPrefix(name, "s")
	if !found {
		return procOwner{}, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 2 && len(parts) != 3 {
		return procOwner{}, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil {
		return procOwner{}, false
	}
	o := procOwner{Pid: pid}
	if len(parts) == 3 {
		if o.Start, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
			return procOwner{}, false
		}
	}
	return o, true
}
