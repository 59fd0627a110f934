package agent

import "github.com/memfsd/memfsd/status"

// The mirror remote (issue 22): a second git URL that receives a copy of
// the primary's branch after each push, asynchronously. Its loop, settings
// and records are package mirror's, which sits above agent; what is here
// is the seam the agent calls it through and what its status shows.

// Mirror is the agent's mirror as the agent sees it (package mirror's
// Mirror, set by the daemon before Open): Open starts its loop (with
// Background), each sync kicks it, Close stops it; Status is its part of
// the agent's status (nil when the agent has no mirror).
type Mirror interface {
	Start()
	Kick()
	Stop()
	Status(withLog bool) *MirrorStatus
}

// MirrorStatus is an agent's mirror as status shows it.
type MirrorStatus = status.MirrorStatus

// MirrorPush is one entry of the mirror push log.
type MirrorPush = status.MirrorPush

// startMirror starts the mirror's loop, when the agent has a mirror.
func (a *Agent) startMirror() {
	if a.Mirror != nil {
		a.Mirror.Start()
	}
}

// stopMirror stops the mirror's loop and waits for it.
func (a *Agent) stopMirror() {
	if a.Mirror != nil {
		a.Mirror.Stop()
	}
}

// kickMirror tells the mirror's loop the primary may have moved (after
// each successful sync). It never blocks.
func (a *Agent) kickMirror() {
	if a.Mirror != nil {
		a.Mirror.Kick()
	}
}

// mirrorStatus is the agent's mirror as status shows it (nil without one).
func (a *Agent) mirrorStatus() *MirrorStatus {
	if a.Mirror == nil {
		return nil
	}
	return a.Mirror.Status(false)
}
