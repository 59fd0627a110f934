package agent

import (
	"slices"
	"strings"
	"time"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/budget"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
)

// Agent states (SPEC §6).
const (
	StateClean    = "clean"
	StateDirty    = "dirty"
	StateAhead    = "ahead"
	StateConflict = "conflict"
	StateDegraded = "degraded"
	StateError    = "error"
	// StateUnmanaged is an agent on disk that the running daemon does not
	// manage: nothing syncs it (`memfsd status` only).
	StateUnmanaged = "unmanaged"
)

// Turn outcomes.
const (
	OutcomePushed   = "pushed"
	OutcomeClean    = "clean"
	OutcomeConflict = "conflict"
	OutcomeDelayed  = "delayed"
	OutcomeFailed   = "failed"
)

// LastError is the last sync failure of an agent.
type LastError struct {
	Class    string    `json:"class"`
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
	Attempts int       `json:"attempts"`
	// NextStep is what a person should do about it (retry.NextStep).
	NextStep string `json:"next_step"`
}

// Status is an agent's state as the API and `memfsd status` show it.
type Status struct {
	Agent      string     `json:"agent"`
	Dir        string     `json:"dir"`
	Remote     string     `json:"remote"`
	Branch     string     `json:"branch"`
	Head       string     `json:"head"`
	RemoteHead string     `json:"remote_head"`
	Ahead      int        `json:"ahead"`
	Behind     int        `json:"behind"`
	Dirty      []string   `json:"dirty"`
	State      string     `json:"state"`
	LastError  *LastError `json:"last_error"`
	LastPushAt *time.Time `json:"last_push_at"`
	// LastSyncAt is when this process last synced the agent successfully
	// (null until the start-up sync succeeded).
	LastSyncAt *time.Time `json:"last_sync_at"`
	Conflicts  []string   `json:"conflicts"`
	Backups    []string   `json:"backups"`
	// HeldDeletes are deletions the mass-delete guard did not commit.
	HeldDeletes []string `json:"held_deletes,omitempty"`
	// ReadOnlyRejected are direct writes to read-only blocks that were
	// undone and not yet told to the agent.
	ReadOnlyRejected []string `json:"read_only_rejected,omitempty"`
	// SecretHeld are direct writes not committed because they look like
	// they hold a credential.
	SecretHeld []reminders.SecretHold `json:"secret_held,omitempty"`
	// FrontMatterHeld are direct writes not committed because they broke
	// front matter that parsed at HEAD.
	FrontMatterHeld []string `json:"frontmatter_held,omitempty"`
	// FrontMatterInvalid is, for each FrontMatterHeld file, the rule of
	// letta-code's it breaks, in its words ("" when it does not parse).
	FrontMatterInvalid []string `json:"frontmatter_invalid,omitempty"`
	// ConstraintsHeld are writes not committed because they make the
	// memory break letta-code's MemFS limits more.
	ConstraintsHeld []reminders.ConstraintsHold `json:"constraints_held,omitempty"`
	// HeldRemoteDeletes are files an incoming update would delete; the
	// update is not applied until an operator decides.
	HeldRemoteDeletes []string `json:"held_remote_deletes,omitempty"`
	// LimitExceeded are files whose body is over their front matter's limit.
	LimitExceeded []reminders.LimitOver `json:"limit_exceeded,omitempty"`
	// PathSkipped are paths in the folder git cannot track (a .git below
	// the root, in any case, ...): never committed; the rest is.
	PathSkipped []reminders.PathSkip `json:"path_skipped,omitempty"`
	// WriteProblems are direct writes not committed, with the cause
	// (disk_full, too_large, bad_name, write_failed); the files beside
	// them were committed.
	WriteProblems []reminders.WriteProblem `json:"write_problems,omitempty"`
	// Budget is the pinned memory's tokens against its budget (status
	// with a scan only: the agents' list leaves it out).
	Budget *Budget `json:"budget,omitempty"`
	// TokenFileProblem says the token file is empty or unreadable and the
	// last good token is in use (the file named, never the token).
	TokenFileProblem string `json:"token_file_problem,omitempty"`
	// Mirror is the agent's mirror remote (null when it has none): its
	// state never changes the agent's (the primary is the source of truth).
	Mirror *MirrorStatus `json:"mirror,omitempty"`
	// PersonGitInProgress is a person's git operation in the folder
	// (REVERT_HEAD, a commit's editor open, ...) that memfsd's commits
	// and syncs wait on (null when none).
	PersonGitInProgress *PersonGit `json:"person_git_in_progress,omitempty"`
	Ready               bool       `json:"ready"`
	// Waiting is every hold, rejection or problem above that waits on
	// the operator, one line each (control characters escaped).
	Waiting []string `json:"waiting,omitempty"`
	// Kind is "shared" for a shared repository in `memfsd status --json`
	// (empty for an agent).
	Kind string `json:"kind,omitempty"`
}

// TurnResult is the answer to a turn.
type TurnResult struct {
	Outcome string `json:"outcome"`
	Pushed  int    `json:"pushed"`
	Status  Status `json:"status"`
	Error   string `json:"error,omitempty"`
}

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
	if c := a.cfg.creds; c != nil {
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
			if scan {
				if b, err := a.Budget(); err == nil {
					st.Budget = &b
				}
			}
		}
	}
	st.State = stateOf(st, broken)
	st.Mirror = a.mirrorStatus()
	st.Waiting = waitingOn(st)
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
// file is there and still matches a pattern (the pattern named is the one
// that matches now). A cleaned or deleted file drops out.
func (a *Agent) secretsHeld() []reminders.SecretHold {
	rec := a.readSecrets()
	if len(rec) == 0 {
		return nil
	}
	var out []reminders.SecretHold
	for p := range rec {
		data, ok := a.workRead(p)
		if !ok {
			continue // deleted: no longer held
		}
		name, ok := memtool.SecretIn(a.secretPatterns(), string(data))
		if !ok {
			continue // clean now: committed by the next flush, which clears it
		}
		out = append(out, reminders.SecretHold{Path: p, Pattern: name})
	}
	slices.SortFunc(out, func(x, y reminders.SecretHold) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// limitsExceeded is the limit record narrowed to files still over the
// limit recorded for them.
func (a *Agent) limitsExceeded() []reminders.LimitOver {
	var out []reminders.LimitOver
	for p, l := range a.readLimits() {
		data, ok := a.workRead(p)
		if !ok {
			continue
		}
		if n := blocks.BodyLen(data); n > l.Limit {
			out = append(out, reminders.LimitOver{Path: p, Limit: l.Limit, Size: n})
		}
	}
	slices.SortFunc(out, func(x, y reminders.LimitOver) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func stateOf(st Status, broken bool) string {
	switch {
	case broken, len(st.HeldDeletes) > 0, len(st.HeldRemoteDeletes) > 0, len(st.WriteProblems) > 0:
		return StateError
	case st.LastError != nil:
		switch c := retry.Class(st.LastError.Class); {
		case c == retry.ClassAuth, c == retry.ClassNotFound, c == retry.ClassPermanent, c.Held():
			return StateError
		}
		return StateDegraded
	case len(st.Conflicts) > 0:
		return StateConflict
	case len(st.Dirty) > 0:
		return StateDirty
	case st.Ahead > 0 || st.Behind > 0:
		return StateAhead
	}
	return StateClean
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

// BuildReminders turns a status into reminders.
func BuildReminders(st Status, now time.Time) []reminders.Reminder {
	rs := reminders.State{
		Agent:             st.Agent,
		Conflicts:         st.Conflicts,
		Ahead:             st.Ahead,
		ReadOnlyRejected:  st.ReadOnlyRejected,
		HeldDeletes:       st.HeldDeletes,
		Backups:           st.Backups,
		SecretHeld:        st.SecretHeld,
		FrontMatterHeld:   st.FrontMatterHeld,
		FrontMatterWhy:    st.FrontMatterInvalid,
		HeldRemoteDeletes: st.HeldRemoteDeletes,
		ConstraintsHeld:   st.ConstraintsHeld,
		LimitExceeded:     st.LimitExceeded,
		PathSkipped:       st.PathSkipped,
		WriteProblems:     st.WriteProblems,
	}
	if b := st.Budget; b != nil && b.Over() {
		rs.BudgetExceeded = &reminders.BudgetOver{Tokens: b.Tokens, Limit: b.Limit, V2: b.Layout == budget.LayoutV2, Files: b.Files}
	}
	if st.LastError != nil {
		rs.ErrorClass, rs.ErrorMessage, rs.Attempts = st.LastError.Class, agentFacing(st.LastError.Message, st.Dir), st.LastError.Attempts
	}
	return reminders.Build(rs, now)
}

// ReadStatus reads an agent's status from disk, with no daemon: nothing is
// cloned, nothing runs.
func ReadStatus(cfg *Config, id string) (Status, error) {
	a, err := New(cfg, id)
	if err != nil {
		return Status{}, err
	}
	repo, err := gitmem.Open(a.Dir(), gitmem.Remote{URL: cfg.RemoteURL(id)}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return Status{}, err
	}
	defer repo.Close()
	a.repo = repo
	return a.readStatus(true), nil // one process, one agent: nothing else waits on it
}
