package status

import "time"

// MirrorStatus is an agent's mirror as status shows it.
type MirrorStatus struct {
	URL           string     `json:"url"`    // credentials redacted
	Source        string     `json:"source"` // "agent" (admin socket) or "template" (--mirror-template)
	State         string     `json:"state"`
	LastPushedTip string     `json:"last_pushed_tip"`
	PrimaryTip    string     `json:"primary_tip"`
	Pending       int        `json:"pending"` // primary commits the mirror lacks
	LastPushAt    *time.Time `json:"last_push_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastError     *LastError `json:"last_error"`
	// Log is the last mirror pushes, newest last (GET .../mirror only).
	Log []MirrorPush `json:"log,omitempty"`
}

// MirrorPush is one entry of the mirror push log.
type MirrorPush struct {
	At       time.Time `json:"at"`
	Outcome  string    `json:"outcome"` // pushed, up_to_date or failed
	Tip      string    `json:"tip,omitempty"`
	From     string    `json:"from,omitempty"`
	Commits  int       `json:"commits"`
	Replaced bool      `json:"replaced,omitempty"` // the mirror's history was replaced (the primary's was)
	TookMS   int64     `json:"took_ms"`
	Class    string    `json:"class,omitempty"`
	Error    string    `json:"error,omitempty"`
	NextStep string    `json:"next_step,omitempty"`
}
