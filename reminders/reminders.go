// Package reminders turns an agent's sync state into the short
// system-reminder texts the agent reads at its next turn.
package reminders

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memfsd/memfsd/budget"
	"github.com/memfsd/memfsd/worktree"
)

// Kinds of reminders (SPEC §6).
const (
	KindConflict         = "conflict"
	KindSyncDelayed      = "sync_delayed"
	KindSyncFailed       = "sync_failed"
	KindReadOnlyRejected = "read_only_rejected"
	KindHistoryRecovered = "history_recovered"
	KindMassDeleteHeld   = "mass_delete_held"
	KindRemoteDeleteHeld = "remote_delete_held"
	KindSecretHeld       = "secret_held"
	KindFrontMatterHeld  = "frontmatter_held"
	KindLimitExceeded    = "limit_exceeded"
	KindPathSkipped      = "path_skipped"
	KindBudgetExceeded   = "budget_exceeded"
	// KindConstraintsHeld: a write held because it breaks letta-code's
	// MemFS limits (depth, characters, core memory, indexes) more.
	KindConstraintsHeld = "constraints_held"
	// KindWriteFailed: a direct write that could not be stored (a full
	// disk, ...); the others are committed.
	KindWriteFailed = "write_failed"
	// KindWriteHeld: a direct write held for its size or its name.
	KindWriteHeld = "write_held"
)

// RecentRestore is how long a history restore stays worth telling.
const RecentRestore = 24 * time.Hour

// Reminder is one thing the agent should know.
type Reminder struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// State is what the reminders are built from.
type State struct {
	Agent            string
	Conflicts        []string // conflict copies in the memory (paths relative to it)
	ErrorClass       string   // last sync error class, "" when the last sync succeeded
	ErrorMessage     string
	Attempts         int
	Ahead            int      // commits not yet on the server
	ReadOnlyRejected []string // direct writes to read-only blocks that were undone
	HeldDeletes      []string
	Backups          []string // refs/memfsd/backup/<unix-seconds>
	// SecretHeld are files not committed because they look like they hold
	// a credential, with the pattern each matched.
	SecretHeld []SecretHold
	// FrontMatterHeld are files not committed because a write broke their
	// front matter.
	FrontMatterHeld []string
	// FrontMatterWhy is, for each FrontMatterHeld file, the letta-code
	// front-matter rule it breaks ("" when its front matter does not parse).
	FrontMatterWhy []string
	// HeldRemoteDeletes are files an incoming update would delete.
	HeldRemoteDeletes []string
	// ConstraintsHeld are files not committed because the write makes
	// the memory break letta-code's MemFS limits more, each with the
	// problems it adds in letta-code's words.
	ConstraintsHeld []ConstraintsHold
	// LimitExceeded are files whose body is over their front matter's limit.
	LimitExceeded []LimitOver
	// PathSkipped are paths git cannot track (a .git below the root, ...).
	PathSkipped []PathSkip
	// BudgetExceeded is the pinned memory past its token budget (nil: within).
	BudgetExceeded *BudgetOver
	// WriteProblems are direct writes not committed: a full disk, too
	// large, a bad name.
	WriteProblems []WriteProblem
}

// ConstraintsHold is one file held by letta-code's MemFS limits.
type ConstraintsHold struct {
	Path     string   `json:"path"`
	Problems []string `json:"problems"`
}

// BudgetOver is the pinned memory over its token budget: its estimate, the
// budget, the layout (v2: root .md files are pinned, else system/) and
// the pinned files, most tokens first.
type BudgetOver struct {
	Tokens, Limit int
	V2            bool
	Files         []budget.FileTokens
}

// PathSkip is a path in the memory folder that is never committed, and why.
type PathSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// LimitOver is a file over its limit: its size and limit in characters.
type LimitOver struct {
	Path  string `json:"path"`
	Limit int    `json:"limit"`
	Size  int    `json:"size"`
}

// SecretHold is a file the secret guard keeps out of git.
type SecretHold struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
}

// memPath is a memory path as the agent sees it (ShowPath).
func memPath(p string) string { return ShowPath(p) }

func list(paths []string, max int) string {
	return listEach(len(paths), max, func(i int) string { return memPath(paths[i]) })
}

// listEach joins the first max of n items (item i as item(i)) with ", ",
// and "and N more" for the rest.
func listEach(n, max int, item func(i int) string) string {
	var shown []string
	for i := 0; i < n; i++ {
		if i == max {
			shown = append(shown, fmt.Sprintf("and %d more", n-max))
			break
		}
		shown = append(shown, item(i))
	}
	return strings.Join(shown, ", ")
}

// Build returns the reminders that hold for st at now; each stays as long
// as its cause does.
func Build(st State, now time.Time) []Reminder {
	out := []Reminder{}
	if len(st.Conflicts) > 0 {
		out = append(out, Reminder{KindConflict, fmt.Sprintf(
			"Memory sync found edits made elsewhere that clash with yours; both versions are kept. Conflict copies (your version): %s. "+
				"For each, view the copy and the file beside it (same name without .conflict-<id>), merge what matters into that file, then delete the copy.",
			list(st.Conflicts, 10))})
	}
	switch st.ErrorClass {
	case "":
	case "retryable", "non_fast_forward", "unrelated_history":
		out = append(out, Reminder{KindSyncDelayed, fmt.Sprintf(
			"Memory sync is delayed (%s after %d attempts: %s). Your %d new commit(s) are safe locally and will be pushed automatically at a later turn. Keep working normally.",
			st.ErrorClass, st.Attempts, firstLine(st.ErrorMessage), st.Ahead)})
	default:
		out = append(out, Reminder{KindSyncFailed, fmt.Sprintf(
			"Memory sync failed (%s: %s). Your writes are kept locally but are not backed up to the server. Tell the user the memory server refused the sync (%s) so they can fix the credentials or address; it is retried at each turn.",
			st.ErrorClass, firstLine(st.ErrorMessage), st.ErrorClass)})
	}
	if len(st.ReadOnlyRejected) > 0 {
		out = append(out, Reminder{KindReadOnlyRejected, fmt.Sprintf(
			"Your change to the read-only block(s) %s was undone: those blocks are written by the operator. The rejected text is kept in .git/memfsd/rejected/. Put your own notes in another file.",
			list(st.ReadOnlyRejected, 5))})
	}
	var recent []string
	for _, b := range st.Backups {
		var sec int64
		if _, err := fmt.Sscan(b[strings.LastIndexByte(b, '/')+1:], &sec); err == nil && now.Sub(time.Unix(sec, 0)) < RecentRestore {
			recent = append(recent, b)
		}
	}
	if len(recent) > 0 {
		out = append(out, Reminder{KindHistoryRecovered, fmt.Sprintf(
			"The memory server's history was replaced. Your files were kept: those the server lacked are restored, those it had differently sit beside its version as conflict copies, and your old history is saved at %s. Review the conflict copies if any.",
			strings.Join(recent, ", "))})
	}
	if len(st.HeldDeletes) > 0 {
		out = append(out, Reminder{KindMassDeleteHeld, fmt.Sprintf(
			"%d memory files vanished at once (%s), so nothing was deleted on the server and memory sync is paused for them. If that was a mistake, ask the operator to restore them (git checkout -- . in the memory folder). If it was intended, the operator runs: memfsd sync --agent %s --accept-deletes",
			len(st.HeldDeletes), list(st.HeldDeletes, 5), st.Agent)})
	}
	if len(st.SecretHeld) > 0 {
		files := listEach(len(st.SecretHeld), 5, func(i int) string {
			return fmt.Sprintf("%s (%s)", memPath(st.SecretHeld[i].Path), st.SecretHeld[i].Pattern)
		})
		out = append(out, Reminder{KindSecretHeld, fmt.Sprintf(
			"Not saved: %s look(s) like it holds a credential, and memory is synced to git, where a secret can never be taken back. Remove the secret from the file (keep the rest) or delete the file; it is committed as soon as it is clean. If it is not a credential, tell the user: the operator can commit it once with memfsd --no-secret-guard sync --agent %s.",
			files, st.Agent)})
	}
	if rules := slices.ContainsFunc(st.FrontMatterWhy, func(w string) bool { return w != "" }); rules {
		files := listEach(len(st.FrontMatterHeld), 5, func(i int) string {
			if i < len(st.FrontMatterWhy) && st.FrontMatterWhy[i] != "" {
				return memPath(st.FrontMatterWhy[i])
			}
			return memPath(st.FrontMatterHeld[i]) + ": the lines between the two --- lines must stay key: value lines"
		})
		out = append(out, Reminder{KindFrontMatterHeld, fmt.Sprintf(
			"Not saved: front matter not valid, %s. A memory file starts with a --- line, then description: (not empty) and only the keys description, read_only and limit (in a folder with a root MEMORY.md: exactly name and description, and MEMORY.md files have none), then a closing --- line. Fix the front matter; the file is committed as soon as it is valid.",
			files)})
	} else if len(st.FrontMatterHeld) > 0 {
		files := listEach(len(st.FrontMatterHeld), 5, func(i int) string { return memPath(st.FrontMatterHeld[i]) })
		out = append(out, Reminder{KindFrontMatterHeld, fmt.Sprintf(
			"Not saved: your write to %s broke the front matter at the top of the file (the lines between the two --- lines must stay key: value lines), so its settings would stop applying. Put the front matter back as it was and write below the closing ---; the file is committed as soon as its front matter parses again.",
			files)})
	}
	if len(st.ConstraintsHeld) > 0 {
		files := listEach(len(st.ConstraintsHeld), 5, func(i int) string {
			h := st.ConstraintsHeld[i]
			return memPath(h.Path) + " (" + strings.Join(h.Problems, "; ") + ")"
		})
		out = append(out, Reminder{KindConstraintsHeld, fmt.Sprintf(
			"Not saved: %s would break the memory's limits (letta-code's MemFS rules: folders at most 2 deep, a file at most 20,000 characters, root memory at most 65,536 in all, a MEMORY.md in every folder, unless .memfs.config.json says otherwise). Split the file, move detail behind a MEMORY.md index, or undo the change; it is committed as soon as it fits. Do not change .memfs.config.json unless the user explicitly approves it.",
			files)})
	}
	if len(st.LimitExceeded) > 0 {
		files := listEach(len(st.LimitExceeded), 5, func(i int) string {
			l := st.LimitExceeded[i]
			return fmt.Sprintf("%s (%d characters, limit %d)", memPath(l.Path), l.Size, l.Limit)
		})
		out = append(out, Reminder{KindLimitExceeded, fmt.Sprintf(
			"Over the size limit set in its front matter: %s. Shorten it: keep what matters, drop the rest; the memory tool refuses writes past the limit.",
			files)})
	}
	if len(st.PathSkipped) > 0 {
		paths := make([]string, len(st.PathSkipped))
		for i, s := range st.PathSkipped {
			paths[i] = s.Path
		}
		out = append(out, Reminder{KindPathSkipped, fmt.Sprintf(
			"Not saved: %s. Git never tracks a file or folder named .git (in any case, at any depth, or spelled as Windows or macOS read it, e.g. .git. or git~1); a nested repository, a submodule or a worktree has one. Everything else in memory is saved as usual. "+
				"Keep no memory in it: move what you need into a folder with another name, then delete it (for a nested repository, its .git; its history is not synced).",
			list(paths, 10))})
	}
	if b := st.BudgetExceeded; b != nil {
		where := "the files under /memories/system/"
		if b.V2 {
			where = "the .md files at the root of /memories"
		}
		files := listEach(len(b.Files), 5, func(i int) string {
			return fmt.Sprintf("%s (%d)", memPath(b.Files[i].Path), b.Files[i].Tokens)
		})
		out = append(out, Reminder{KindBudgetExceeded, fmt.Sprintf(
			"Your pinned memory (%s, always in your context) is about %d tokens, over its budget of %d. Largest: %s. "+
				"Shorten or merge them, or move detail into files outside them (still listed, read on demand); until it is within budget the memory tool refuses writes that add to it.",
			where, b.Tokens, b.Limit, files)})
	}
	out = append(out, writeProblemReminders(st.WriteProblems)...)
	if len(st.HeldRemoteDeletes) > 0 {
		out = append(out, Reminder{KindRemoteDeleteHeld, fmt.Sprintf(
			"An update from the memory server would delete %d of your memory files (%s), so it was not applied: your files stay and nothing is pushed until the operator decides (memfsd sync --agent %s --accept-deletes to take the deletion, --restore-deletes to put the files back on the server). Keep working; your writes are kept locally.",
			len(st.HeldRemoteDeletes), list(st.HeldRemoteDeletes, 5), st.Agent)})
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// Text wraps the reminders for the agent's context ("" when none).
func Text(rs []Reminder) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<system-reminder>\n")
	for _, r := range rs {
		b.WriteString(r.Text)
		b.WriteString("\n")
	}
	b.WriteString("</system-reminder>")
	return b.String()
}

// Causes of a direct write that was not saved (WriteProblem.Cause).
const (
	CauseDiskFull    = "disk_full"    // the disk or quota holding the memory is full
	CauseTooLarge    = "too_large"    // over the daemon's --max-file-bytes
	CauseBadName     = "bad_name"     // a control character or bytes that are not UTF-8 in the name
	CauseWriteFailed = "write_failed" // any other failure to store it
)

// WriteProblem is a file written straight into the folder that was not
// committed, and why.
type WriteProblem struct {
	Path   string `json:"path"`
	Cause  string `json:"cause"`
	Detail string `json:"detail"`
	// Size is the file's size in bytes (too_large), its cap in Limit.
	Size  int64 `json:"size,omitempty"`
	Limit int64 `json:"limit,omitempty"`
}

// Describe is the problem in a few words, the path as the agent sees it.
func (w WriteProblem) Describe() string {
	p := ShowPath(w.Path)
	switch w.Cause {
	case CauseDiskFull:
		return p + " (disk full)"
	case CauseTooLarge:
		return fmt.Sprintf("%s (too large: %d bytes, the cap is %d)", p, w.Size, w.Limit)
	case CauseBadName:
		return p + " (bad name: a control character or bytes that are not UTF-8)"
	}
	if w.Detail != "" {
		return p + " (" + firstLine(w.Detail) + ")"
	}
	return p + " (write failed)"
}

// ShowPath is a memory path as the agent sees it (/memories/...), quoted
// as a Go string when its name holds a control character or bytes that
// are not UTF-8, so it never breaks a line or a prompt.
func ShowPath(p string) string {
	m := "/memories/" + p
	if BadName(p) {
		return strconv.Quote(m)
	}
	return m
}

// BadName reports a name git could store but that must not reach a commit
// subject, a listing or a prompt as it is (worktree.OddName).
func BadName(p string) bool { return worktree.OddName(p) }

// writeProblemReminders are the reminders for direct writes not saved.
func writeProblemReminders(ps []WriteProblem) []Reminder {
	var failed, held []WriteProblem
	for _, p := range ps {
		switch p.Cause {
		case CauseTooLarge, CauseBadName:
			held = append(held, p)
		default:
			failed = append(failed, p)
		}
	}
	var out []Reminder
	if len(failed) > 0 {
		full := slices.ContainsFunc(failed, func(p WriteProblem) bool { return p.Cause == CauseDiskFull })
		advice := "It stays in the folder and is committed as soon as storing it works; your other files are saved as usual. Tell the user memory could not store it."
		if full {
			advice = "The disk holding memory is full: the file stays in the folder and is committed once there is room; your other files are saved as usual. Delete files you no longer need (large ones first) and tell the user the memory disk is full."
		}
		out = append(out, Reminder{KindWriteFailed, fmt.Sprintf("Not saved: %s. %s",
			listEach(len(failed), 5, func(i int) string { return failed[i].Describe() }), advice)})
	}
	if len(held) > 0 {
		out = append(out, Reminder{KindWriteHeld, fmt.Sprintf(
			"Not saved: %s. The bytes stay in the folder, uncommitted; nothing else waits on them. Split a file that is too large into smaller ones (or delete it); rename a file whose name has a control character (e.g. a newline) or bytes that are not UTF-8 to a plain name. It is committed as soon as it fits.",
			listEach(len(held), 5, func(i int) string { return held[i].Describe() }))})
	}
	return out
}
