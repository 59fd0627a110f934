package daemon

import "time"

// Agent states (SPEC §6).
const (
	StateClean    = "clean"
	StateDirty    = "dirty"
	StateAhead    = "ahead"
	StateConflict = "conflict"
	StateDegraded = "degraded"
	StateError    = "error"
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
	Conflicts  []string   `json:"conflicts"`
	Backups    []string   `json:"backups"`
	// HeldDeletes are deletions the mass-delete guard did not commit.
	HeldDeletes []string `json:"held_deletes,omitempty"`
	// ReadOnlyRejected are direct writes to read-only blocks that were undone.
	ReadOnlyRejected []string `json:"read_only_rejected,omitempty"`
	Ready            bool     `json:"ready"`
}

// TurnResult is the answer to a turn.
type TurnResult struct {
	Outcome string `json:"outcome"`
	Pushed  int    `json:"pushed"`
	Status  Status `json:"status"`
	Error   string `json:"error,omitempty"`
}
