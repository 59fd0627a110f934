package agent

import (
	"slices"
	"time"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/status"
)

// Agent states (SPEC §6; package status).
const (
	StateClean     = status.StateClean
	StateDirty     = status.StateDirty
	StateAhead     = status.StateAhead
	StateConflict  = status.StateConflict
	StateDegraded  = status.StateDegraded
	StateError     = status.StateError
	StateUnmanaged = status.StateUnmanaged
)

// Turn outcomes.
const (
	OutcomePushed   = status.OutcomePushed
	OutcomeClean    = status.OutcomeClean
	OutcomeConflict = status.OutcomeConflict
	OutcomeDelayed  = status.OutcomeDelayed
	OutcomeFailed   = status.OutcomeFailed
)

// LastError is the last sync failure of an agent.
type LastError = status.LastError

// Status is an agent's state as the API and `memfsd status` show it.
type Status = status.Status

// TurnResult is the answer to a turn.
type TurnResult = status.TurnResult

// readStatus reads the agent's state from its repository and memfsd's
// records on disk (never from one process's memory, so the daemon and
// `memfsd sync` agree), plus this process's last sync error. With scan the
// work tree is walked for dirty paths; without, dirty is the pending
// writes, so the cost does not grow with the number of files. Status is
// the bounded answer built on it (isolate.go).
func (a *Agent) readStatus(scan bool) Status {
	st := Status{
		Agent:     a.ID,
		Dir:       a.Dir(),
		Remote:    RedactURL(a.remote().URL),
		Branch:    gitmem.DefaultBranch,
		Dirty:     []string{},
		Conflicts: []string{},
		Backups:   []string{},
	}
	if c := a.cfg.Credentials(); c != nil {
		st.TokenFileProblem = c.Problem()
	}
	a.mu.Lock()
	repo := a.repo
	st.Ready = repo != nil
	if a.lastErr != nil {
		e := *a.lastErr
		st.LastError = &e
	}
	if !a.lastPush.IsZero() {
		t := a.lastPush.UTC()
		st.LastPushAt = &t
	}
	if a.retryTries > 0 {
		st.PushRetry = &status.PushRetry{NextAt: a.retryAt.UTC(), Tries: a.retryTries}
	}
	if !a.lastSync.IsZero() {
		t := a.lastSync.UTC()
		st.LastSyncAt = &t
	}
	pending := make([]string, 0, len(a.pending))
	for p := range a.pending {
		pending = append(pending, p)
	}
	a.mu.Unlock()

	broken := repo == nil
	if repo != nil {
		rs, err := repo.Position()
		if scan && err == nil {
			rs, err = repo.Status()
		}
		if err != nil {
			broken = true
			if st.LastError == nil { // say why, and what to do, even before a sync failed on it
				st.LastError = &LastError{Class: string(retry.ClassOf(err)), Message: err.Error(), At: time.Now().UTC(), NextStep: retry.NextStep(err)}
			}
		} else {
			st.Head, st.RemoteHead = hashString(rs.Head), hashString(rs.RemoteHead)
			st.Ahead, st.Behind = rs.Ahead, rs.Behind
			if scan {
				for _, d := range rs.Dirty {
					st.Dirty = append(st.Dirty, d.Path)
				}
				st.PathSkipped = skippedFromScan(rs.Skipped)
			} else {
				st.PathSkipped = a.pathsSkipped()
				slices.Sort(pending)
				st.Dirty = append(st.Dirty, pending...)
			}
			if c, err := repo.ConflictCopies(); err == nil && c != nil {
				st.Conflicts = c
			}
			if b, err := repo.Backups(); err == nil && b != nil {
				st.Backups = b
			}
			st.HeldDeletes = append(a.heldDeletes(repo), a.readHeldPush().Paths...)
			st.ReadOnlyRejected = a.untoldRejections()
			st.SecretHeld = a.secretsHeld()
			st.FrontMatterHeld, st.FrontMatterInvalid = a.frontMatterHeld()
			st.ConstraintsHeld = a.constraintsHeldList()
			st.HeldRemoteDeletes = a.readHeldRemote().Paths
			st.LimitExceeded = a.limitsExceeded()
			st.PersonGitInProgress = a.personGit(repo)
			st.WriteProblems = a.writeProblems()
			st.GitRefused = repo.Refused()
			st.BlockSetsPending = a.blockSetsPending(repo, st.LastError)
			if scan {
				if b, err := a.Budget(); err == nil {
					st.Budget = &b
				}
			}
		}
	}
	st.State = status.State(st, broken)
	st.Mirror = a.mirrorStatus()
	st.Waiting = status.Waiting(st)
	return st
}

// heldDeletes is the held-deletes record narrowed to what still holds:
// still in HEAD and still missing from the work tree. A deletion committed
// elsewhere (memfsd sync --accept-deletes) or a file put back clears it.
func (a *Agent) heldDeletes(repo *gitmem.Repo) []string {
	held := a.readHeld()
	if len(held) == 0 {
		return nil
	}
	tracked, err := repo.TrackedFiles()
	if err != nil {
		return held
	}
	var out []string
	for _, p := range held {
		if _, ok := slices.BinarySearch(tracked, p); !ok {
			continue
		}
		if !a.workExists(p) {
			out = append(out, p)
		}
	}
	return out // read only: the pipeline (under writeMu) rewrites the record
}

// secretsHeld is the secret-held record narrowed to what still holds: the
// file is there and still matches a pattern (records.Book.SecretHolds).
func (a *Agent) secretsHeld() []reminders.SecretHold {
	return a.recordBook().SecretHolds(a.workRead, func(data string) (string, bool) {
		return memtool.SecretIn(a.secretPatterns(), data)
	})
}

// limitsExceeded is the limit record narrowed to files still over the
// limit recorded for them (records.Book.LimitsOver).
func (a *Agent) limitsExceeded() []reminders.LimitOver {
	return a.recordBook().LimitsOver(a.workRead, blocks.BodyLen)
}

func hashString(h interface {
	IsZero() bool
	String() string
}) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// Ahead counts local commits the remote lacks (0 when unknown).
func (a *Agent) Ahead() int {
	repo := a.repository()
	if repo == nil {
		return 0
	}
	st, err := repo.Position()
	if err != nil {
		return 0
	}
	return st.Ahead
}

// Reminders are the agent's reminders now; fetching them marks shown
// read-only rejections as seen (told after the next turn).
func (a *Agent) Reminders() []reminders.Reminder {
	rs := BuildReminders(a.Status(true), time.Now())
	a.markRejectionsSeen()
	return rs
}

// ToolReminders are Reminders without the walk of the work tree (no
// reminder needs the dirty paths; the pinned budget is read on its own):
// cheap enough to ride on every MCP tool result.
func (a *Agent) ToolReminders() []reminders.Reminder {
	st := a.Status(false)
	if b, err := a.Budget(); err == nil {
		st.Budget = &b
	}
	rs := BuildReminders(st, time.Now())
	a.markRejectionsSeen()
	return rs
}

// BuildReminders turns a status into reminders (status.BuildReminders).
func BuildReminders(st Status, now time.Time) []reminders.Reminder {
	return status.BuildReminders(st, now)
}

// ReadStatus reads an agent's status from disk, with no daemon: nothing is
// cloned, nothing runs. Each of parts adds to it from the same open
// repository (the mirror's part: package mirror sits above agent).
func ReadStatus(cfg *Config, id string, parts ...func(*Agent, *gitmem.Repo, *Status)) (Status, error) {
	a, err := New(cfg, id)
	if err != nil {
		return Status{}, err
	}
	// The remote it shows is the agent's own (its record), not the
	// command's flags.
	a.remoteURL = RemoteOf(cfg, id)
	repo, err := gitmem.Open(a.Dir(), gitmem.Remote{URL: a.remoteURL}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return Status{}, err
	}
	defer repo.Close()
	a.repo = repo
	st := a.readStatus(true) // one process, one agent: nothing else waits on it
	for _, part := range parts {
		part(a, repo, &st)
	}
	return st, nil
}
