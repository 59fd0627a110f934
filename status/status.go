// Package status is an agent's state as the API, `memfsd status` and
// the agent's reminders show it: the Status record and its parts, the
// state it sums up to, the lines that wait on the operator and the
// reminders it turns into.
package status

import (
	"time"

	"github.com/memfsd/memfsd/budget"
	"github.com/memfsd/memfsd/persongit"
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
	Budget *budget.Status `json:"budget,omitempty"`
	// GitRefused is what in the agent's .git memfsd lately would not read,
	// each with why (a symbolic link on the way, alternates, an object
	// over the cap or inflating past its header): to memfsd it is missing.
	GitRefused []string `json:"git_refused,omitempty"`
	// TokenFileProblem says the token file is empty or unreadable and the
	// last good token is in use (the file named, never the token).
	TokenFileProblem string `json:"token_file_problem,omitempty"`
	// Mirror is the agent's mirror remote (null when it has none): its
	// state never changes the agent's (the primary is the source of truth).
	Mirror *MirrorStatus `json:"mirror,omitempty"`
	// PersonGitInProgress is a person's git operation in the folder
	// (REVERT_HEAD, a commit's editor open, ...) that memfsd's commits
	// and syncs wait on (null when none).
	PersonGitInProgress *persongit.Status `json:"person_git_in_progress,omitempty"`
	Ready               bool              `json:"ready"`
	// BlockSetsPending are the operator's block sets not on the remote
	// yet, each with why: owed until a push carries them (SPEC §13).
	BlockSetsPending []BlockSetPending `json:"block_sets_pending,omitempty"`
	// PushRetry is the background retry of a failed push (null when
	// none is due): commits are owed until a push carries them.
	PushRetry *PushRetry `json:"push_retry,omitempty"`
	// Waiting is every hold, rejection or problem above that waits on
	// the operator, one line each (control characters escaped).
	Waiting []string `json:"waiting,omitempty"`
	// Kind is "shared" for a shared repository in `memfsd status --json`
	// (empty for an agent).
	Kind string `json:"kind,omitempty"`
}

// BlockSetPending is an operator's block set not on the remote yet.
type BlockSetPending struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// PushRetry is the background retry of a push that failed: the next try
// and how many ran since the last success (the failure itself, its class
// and next step, is LastError).
type PushRetry struct {
	NextAt time.Time `json:"next_at"`
	Tries  int       `json:"tries"`
}

// TurnResult is the answer to a turn.
type TurnResult struct {
	Outcome string `json:"outcome"`
	Pushed  int    `json:"pushed"`
	Status  Status `json:"status"`
	Error   string `json:"error,omitempty"`
	// Class and NextStep are Error's class and what to do about it
	// (empty without an error).
	Class    string `json:"class,omitempty"`
	NextStep string `json:"next_step,omitempty"`
}

func State(st Status, broken bool) string {
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
		// The reminder names the class itself: once, not again inside.
		rs.ErrorClass, rs.ErrorMessage, rs.Attempts = st.LastError.Class, reminders.AgentFacing(retry.WithoutClass(st.LastError.Class, st.LastError.Message), st.Dir), st.LastError.Attempts
	}
	return reminders.Build(rs, now)
}
