package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/memfsd/memfsd/records"
	"github.com/memfsd/memfsd/rejected"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/worktree"
)

// memfsd's own records live in <home>/agents/<id>/records/, beside the
// memory folder and out of the agent's reach (its shell has the memory
// folder, .git included, never memfsd's home): every route to a decision
// (the daemon, `memfsd sync`, a restart) reads the same state from them,
// and the agent can neither forge nor remove them. Only the rejected bytes
// stay where SPEC §2 puts them, .git/memfsd/rejected/, written only into
// real folders (a symbolic link the agent put there is replaced).
const (
	// rejectedSeenFile holds the time the agent fetched its reminders while
	// rejections were shown; the next turn moves it to rejectedToldFile.
	rejectedSeenFile = "rejected-seen"
	// rejectedToldFile holds the time up to which rejections were told.
	rejectedToldFile = "rejected-told"
)

// DefaultRejectedKeep bounds the rejected files kept per agent (newest).
const DefaultRejectedKeep = 100

func (a *Agent) recordPath(name string) string {
	return filepath.Join(a.folder, "records", name)
}

// recordBook is the unit's records (package records).
func (a *Agent) recordBook() records.Book {
	return records.Book{Dir: filepath.Join(a.folder, "records"), Exists: a.workExists}
}

// readHeld reads the held-deletes record (nil when none).
func (a *Agent) readHeld() []string { return a.recordBook().Held() }

// writeHeld replaces the held-deletes record (removes it for none).
func (a *Agent) writeHeld(paths []string) error { return a.recordBook().WriteHeld(paths) }

// keepRejected stores bytes a guard took out of the work tree and prunes
// the folder to the newest DefaultRejectedKeep files (package rejected).
func (a *Agent) keepRejected(rel string, data []byte) error {
	err := a.withTree(func(wt *worktree.Dir) error {
		return rejected.Keep(wt, rel, data, DefaultRejectedKeep)
	})
	if err != nil {
		return fmt.Errorf("keep rejected %s: %w", rel, err)
	}
	return nil
}

// rejectedNames lists the rejected files of the agent, oldest first.
func (a *Agent) rejectedNames() []rejected.Name {
	var out []rejected.Name
	a.withTree(func(wt *worktree.Dir) error {
		out = rejected.Names(wt)
		return nil
	})
	return out
}

// untoldRejections lists the paths of rejections the agent was not yet told
// of (newer than the told mark).
func (a *Agent) untoldRejections() []string {
	told := readStamp(a.recordPath(rejectedToldFile))
	var out []string
	for _, n := range a.rejectedNames() {
		if n.At > told && !slices.Contains(out, n.Path) {
			out = append(out, n.Path)
		}
	}
	return out
}

// markRejectionsSeen notes that the agent fetched reminders showing
// rejections; the next turn makes them told.
func (a *Agent) markRejectionsSeen() {
	if len(a.untoldRejections()) == 0 {
		return
	}
	_ = writeRecord(a.recordPath(rejectedSeenFile), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
}

// settleRejections, at a turn, turns a "seen" mark into "told".
func (a *Agent) settleRejections() {
	seen := a.recordPath(rejectedSeenFile)
	if _, err := os.Stat(seen); err == nil {
		_ = os.Rename(seen, a.recordPath(rejectedToldFile))
	}
}

func readStamp(p string) int64 { return records.ReadStamp(p) }

// writeRecord writes a record atomically (records.Write).
func writeRecord(p string, data []byte) error { return records.Write(p, data) }

// operatorFile, outside the memory folder (the agent's shell reaches the
// folder and its .git, not this), lists the operator's accept and restore
// decisions, each bound to one tip. (Block-set approvals are in
// blocksFile; entries of paths an older memfsd wrote here are ignored.)
const operatorFile = "operator-approved.json"

// decisionsKeep bounds the accept/restore decisions kept per kind.
const decisionsKeep = 20

func (a *Agent) operatorPath() string {
	return filepath.Join(a.folder, operatorFile)
}

// readApproved reads the operator's record: decision kind → keys.
func (a *Agent) readApproved() map[string][]string {
	out := map[string][]string{}
	data, err := os.ReadFile(a.operatorPath())
	if err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

// approve records an operator decision of kind (approvePushAccept, ...)
// keyed by id (decisionKey).
func (a *Agent) approve(kind, id string) error {
	rec := a.readApproved()
	ids := append(slices.DeleteFunc(rec[kind], func(x string) bool { return x == id }), id)
	if len(ids) > decisionsKeep {
		ids = ids[len(ids)-decisionsKeep:]
	}
	rec[kind] = ids
	data, _ := json.Marshal(rec)
	if err := writeRecord(a.operatorPath(), data); err != nil {
		return fmt.Errorf("record operator decision %s: %w", kind, err)
	}
	return nil
}

// updateSecrets adds files the secret guard held and drops committed ones.
func (a *Agent) updateSecrets(held map[string]string, committed []string) error {
	return a.recordBook().UpdateSecrets(held, committed)
}

// heldRemote is a remote update the remote-deletion guard did not apply.
type heldRemote = records.Held

func (a *Agent) readHeldRemote() heldRemote { return a.recordBook().HeldRemote() }

func (a *Agent) readHeldPush() heldRemote { return a.recordBook().HeldPush() }

// writeHeldRemote records the held update (the zero value clears it).
func (a *Agent) writeHeldRemote(h heldRemote) error { return a.recordBook().WriteHeldRemote(h) }

// writeHeldPush records the held push (the zero value clears it).
func (a *Agent) writeHeldPush(h heldRemote) error { return a.recordBook().WriteHeldPush(h) }

// updateLimits records files committed over their limit and drops the
// ones committed within it again.
func (a *Agent) updateLimits(over map[string]reminders.LimitOver, committed []string) error {
	return a.recordBook().UpdateLimits(over, committed)
}
