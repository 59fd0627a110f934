package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// heldDeletesFile lists the deletions the mass-delete guard held.
	heldDeletesFile = "held-deletes.json"
	// secretHeldFile maps files held by the secret guard to the pattern.
	secretHeldFile = "secret-held.json"
	// heldRemoteFile is the remote update held by the remote-deletion guard.
	heldRemoteFile = "held-remote.json"
	// limitsFile lists files committed over their front matter's limit.
	limitsFile = "limit-exceeded.json"
	// heldPushFile is the local tip whose push the outgoing check held (a
	// committed mass deletion) and the files it deletes.
	heldPushFile = "held-push.json"
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

// readHeld reads the held-deletes record (nil when none).
func (a *Agent) readHeld() []string {
	data, err := os.ReadFile(a.recordPath(heldDeletesFile))
	if err != nil {
		return nil
	}
	var paths []string
	if json.Unmarshal(data, &paths) != nil {
		return nil
	}
	return paths
}

// writeHeld replaces the held-deletes record (removes it for none).
func (a *Agent) writeHeld(paths []string) error {
	p := a.recordPath(heldDeletesFile)
	if len(paths) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held deletes: %w", err)
		}
		return nil
	}
	slices.Sort(paths)
	data, _ := json.Marshal(slices.Compact(paths))
	return writeRecord(p, data)
}

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

func readStamp(p string) int64 {
	data, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// writeRecord writes a record atomically (temporary file, rename), 0600.
func writeRecord(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

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
	rec := a.readSecrets()
	changed := false
	for p := range rec {
		if !a.workExists(p) {
			delete(rec, p) // deleted: no longer held
			changed = true
		}
	}
	for p, pattern := range held {
		if rec[p] != pattern {
			rec[p], changed = pattern, true
		}
	}
	for _, p := range committed {
		if _, ok := rec[p]; ok {
			delete(rec, p)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return a.writeSecrets(rec)
}

func (a *Agent) readSecrets() map[string]string {
	rec := map[string]string{}
	if data, err := os.ReadFile(a.recordPath(secretHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

func (a *Agent) writeSecrets(rec map[string]string) error {
	p := a.recordPath(secretHeldFile)
	if len(rec) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held secrets: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	return writeRecord(p, data)
}

// heldRemote is a remote update the remote-deletion guard did not apply.
type heldRemote struct {
	Remote string   `json:"remote"`
	Paths  []string `json:"paths"`
}

func (a *Agent) readHeldRemote() heldRemote { return a.readHeldRecord(heldRemoteFile) }

func (a *Agent) readHeldPush() heldRemote { return a.readHeldRecord(heldPushFile) }

func (a *Agent) readHeldRecord(name string) heldRemote {
	var h heldRemote
	if data, err := os.ReadFile(a.recordPath(name)); err == nil {
		_ = json.Unmarshal(data, &h)
	}
	return h
}

// writeHeldRemote records the held update (the zero value clears it).
func (a *Agent) writeHeldRemote(h heldRemote) error { return a.writeHeldRecord(heldRemoteFile, h) }

// writeHeldPush records the held push (the zero value clears it).
func (a *Agent) writeHeldPush(h heldRemote) error { return a.writeHeldRecord(heldPushFile, h) }

func (a *Agent) writeHeldRecord(name string, h heldRemote) error {
	p := a.recordPath(name)
	if h.Remote == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record %s: %w", name, err)
		}
		return nil
	}
	slices.Sort(h.Paths)
	data, _ := json.Marshal(h)
	return writeRecord(p, data)
}

// updateLimits records files committed over their limit and drops the
// ones committed within it again.
func (a *Agent) updateLimits(over map[string]reminders.LimitOver, committed []string) error {
	rec := a.readLimits()
	changed := false
	for _, p := range committed {
		if l, ok := over[p]; ok {
			rec[p], changed = l, true
		} else if _, ok := rec[p]; ok {
			delete(rec, p)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	p := a.recordPath(limitsFile)
	if len(rec) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record limits: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	return writeRecord(p, data)
}

func (a *Agent) readLimits() map[string]reminders.LimitOver {
	rec := map[string]reminders.LimitOver{}
	if data, err := os.ReadFile(a.recordPath(limitsFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}
