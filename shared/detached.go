package shared

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/reminders"
)

// A view left behind: when an agent's attachment of a shared repository
// ends (detached while the daemon runs, or found at start with no
// attachment), its view folder would keep the shared files and take the
// agent's writes to nowhere, without a word. It is moved aside instead,
// to <home>/agents/<id>/shared/<name>@detached-<UTC stamp> (nothing lost;
// "@" is not in a shared repository's name, so it never collides with a
// view), its view record goes (a later attach makes the view again from
// the shared tip, not from what the old folder was given), and the agent
// is told once (shared_detached).

// detachedSuffix marks a moved-aside view folder.
const detachedSuffix = "@detached-"

// detachedNotesFile lists the moved-aside views the agent is not told of yet.
const detachedNotesFile = "shared-detached.json"

type detachedNote struct {
	Name    string `json:"name"`
	MovedTo string `json:"moved_to"` // as the agent sees it
}

// MoveDetachedView moves agent id's view folder of name aside (an empty
// one is removed), drops its view record and records the reminder. It
// reports where the folder went ("" when there was none or it was empty).
// The caller has stopped serving the view.
func MoveDetachedView(cfg *agent.Config, id, name string) (string, error) {
	dir := cfg.ViewDir(id, name)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(viewRecordPath(cfg, id, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("move the detached view %s of %s aside: %w", name, id, err)
	}
	if err := os.Remove(viewRecordPath(cfg, id, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("move the detached view %s of %s aside: %w", name, id, err)
	}
	if fi.IsDir() {
		if err := os.Remove(dir); err == nil { // empty: nothing to keep
			return "", nil
		}
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	to := dir + detachedSuffix + stamp
	for i := 2; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s%s%s-%d", dir, detachedSuffix, stamp, i)
	}
	if err := os.Rename(dir, to); err != nil {
		return "", fmt.Errorf("move the detached view %s of %s aside: %w", name, id, err)
	}
	moved := reminders.ViewFolder(filepath.Base(to))
	notes := readDetachedNotes(cfg, id)
	notes = append(notes, detachedNote{Name: name, MovedTo: moved})
	if data, err := json.Marshal(notes); err == nil {
		if err := agent.WriteRecord(detachedNotesPath(cfg, id), data); err != nil {
			return moved, fmt.Errorf("record the detached view %s of %s: %w", name, id, err)
		}
	}
	return moved, nil
}

// MoveUnattachedViews moves aside agent id's view folders of shared
// repositories it is not attached to (attached: the names it is), as
// found at start: detached while no daemon ran.
func MoveUnattachedViews(cfg *agent.Config, id string, attached []string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(cfg.Home, "agents", id, "shared"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var moved []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.Contains(name, "@") || strings.HasPrefix(name, ".") || ValidateSharedName(name) != nil {
			continue // moved aside already, memfsd's temporary folder, not a view
		}
		if slices.Contains(attached, name) {
			continue
		}
		to, err := MoveDetachedView(cfg, id, name)
		if err != nil {
			errs = append(errs, err)
		}
		if to != "" {
			moved = append(moved, to)
		}
	}
	return moved, errors.Join(errs...)
}

func detachedNotesPath(cfg *agent.Config, id string) string {
	return filepath.Join(cfg.Home, "agents", id, "records", detachedNotesFile)
}

func readDetachedNotes(cfg *agent.Config, id string) []detachedNote {
	data, err := os.ReadFile(detachedNotesPath(cfg, id))
	if err != nil {
		return nil
	}
	var notes []detachedNote
	json.Unmarshal(data, &notes)
	return notes
}

// DetachedViewReminders are agent id's shared_detached reminders; fetching
// them tells them (they are not repeated).
func DetachedViewReminders(cfg *agent.Config, id string) []reminders.Reminder {
	notes := readDetachedNotes(cfg, id)
	if len(notes) == 0 {
		return nil
	}
	out := make([]reminders.Reminder, 0, len(notes))
	for _, n := range notes {
		out = append(out, reminders.SharedDetached(n.Name, n.MovedTo))
	}
	os.Remove(detachedNotesPath(cfg, id))
	return out
}

// moveDetachedClone moves the shared clone aside when its HEAD is not on
// the shared branch (detached by a person's `git checkout <sha>`, or on
// another branch): memfsd never commits there, so every view write would
// fail and be tried again for good while the agents' writes went nowhere.
// The clone goes to <home>/shared/<name>@detached-<UTC stamp>, whole
// (commits not pushed yet included: nothing lost), and the sync loop
// clones the remote again; each view attached in this process's life is
// told once (shared_head_detached). Run at Open, before the clone is
// opened.
func (a *Unit) moveDetachedClone() {
	gitDir := filepath.Join(a.Dir(), ".git")
	if _, err := os.Lstat(gitDir); err != nil {
		return // no clone yet: the sync loop makes it
	}
	branch, err := gitstore.HeadBranch(gitDir)
	if err != nil || branch == "refs/heads/"+gitmem.DefaultBranch {
		return // an unreadable HEAD is the open's to report
	}
	to := a.folder + detachedSuffix + time.Now().UTC().Format("20060102T150405Z")
	if _, err := os.Lstat(to); err == nil {
		to += fmt.Sprintf("-%d", time.Now().UnixNano())
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		a.log.Error("the shared clone is not on its branch and could not be moved aside", "head", branch, "err", err)
		return
	}
	if err := os.Rename(a.Dir(), filepath.Join(to, "memory")); err != nil {
		os.Remove(to)
		a.log.Error("the shared clone is not on its branch and could not be moved aside", "head", branch, "err", err)
		return
	}
	head := branch
	if head == "" {
		head = "detached"
	}
	a.log.Warn("the shared clone was not on its branch (a person's git checkout?): moved aside whole, cloned again from the remote", "head", head, "moved_to", to)
	a.viewsMovedAside.Store(true)
}
