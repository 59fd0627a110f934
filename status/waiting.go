package status

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
)

// Waiting lists, one short line each, what in st waits on the operator
// (or, told to the agent, on a decision the operator may have to make):
// holds, rejections, a token file problem, a mirror that fails. `memfsd
// status` prints them; the API answers them as "waiting".
func Waiting(st Status) []string {
	var out []string
	id := st.Agent
	add := func(kind string, paths []string, next string) {
		if len(paths) == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", kind, listPaths(paths), next))
	}
	add("mass_delete_held", st.HeldDeletes, "memfsd sync --agent "+id+" --accept-deletes, or --restore-deletes")
	add("remote_delete_held", st.HeldRemoteDeletes, "memfsd sync --agent "+id+" --accept-deletes, or --restore-deletes")
	add("read_only_rejected", st.ReadOnlyRejected, "undone; bytes kept under .git/memfsd/rejected/; change blocks with memfsd block set")
	var secrets []string
	for _, s := range st.SecretHeld {
		secrets = append(secrets, s.Path+" ["+s.Pattern+"]")
	}
	add("secret_held", secrets, "not committed until the file no longer holds the credential; if it is none, memfsd --no-secret-guard sync --agent "+id+" with no daemon running for it")
	add("frontmatter_held", st.FrontMatterHeld, "not committed until the front matter parses again")
	var cons []string
	for _, c := range st.ConstraintsHeld {
		cons = append(cons, c.Path)
	}
	add("constraints_held", cons, "not committed until the memory keeps letta-code's limits")
	var skipped []string
	for _, p := range st.PathSkipped {
		skipped = append(skipped, p.Path)
	}
	add("path_skipped", skipped, "git cannot track these paths; rename them")
	add("conflicts", st.Conflicts, "both versions kept: merge them and delete the conflict copy")
	add("git_refused", st.GitRefused, "memfsd follows no link and inflates no object over its cap in .git: remove what is named there")
	// Direct writes not saved, by cause: the cause as --json names it,
	// each file as the reminder describes it, the next step.
	for _, c := range writeProblemSteps {
		var files []string
		for _, w := range st.WriteProblems {
			if w.Cause == c.cause || c.cause == reminders.CauseWriteFailed && !knownCause(w.Cause) {
				files = append(files, w.Describe())
			}
		}
		add(c.cause, files, c.next)
	}
	// The operator's block sets are owed until a push carries them.
	var owed []string
	for _, b := range st.BlockSetsPending {
		owed = append(owed, b.Path+" ["+b.Reason+"]")
	}
	add("block_set_pending", owed, "memfsd pushes it by itself once the remote takes it; memfsd turn --agent "+id+" tries now")
	if r := st.PushRetry; r != nil {
		out = append(out, fmt.Sprintf("push_retry: commits not on the remote yet; try %d failed, the next at %s (memfsd pushes by itself; memfsd turn --agent %s tries now)", r.Tries, r.NextAt.UTC().Format(time.RFC3339), id))
	}
	if !st.Ready && st.LastError == nil && st.State == StateError {
		// No repository yet and no failure to show: say what goes on.
		out = append(out, "not_ready: the memory folder is not cloned or opened yet (the first clone is under way, and tried again every 30 s; memfsd turn --agent "+id+" tries now)")
	}
	if st.TokenFileProblem != "" {
		out = append(out, "token_file_problem: "+st.TokenFileProblem)
	}
	// A mirror's failure is the mirror's own line (status.Mirror).
	for i := range out {
		out[i] = OneLine(out[i])
	}
	return out
}

// writeProblemSteps are the causes of a direct write not saved
// (status.WriteProblems) and the operator's next step for each.
var writeProblemSteps = []struct{ cause, next string }{
	{reminders.CauseTooLarge, "not committed: split the file or delete it, or raise --max-file-bytes; committed once it fits"},
	{reminders.CauseBadName, "not committed: rename it to a plain name; committed then"},
	{reminders.CauseDiskFull, "not committed: free space on the disk holding the memory; committed once there is room"},
	{reminders.CauseWriteFailed, "not committed: see the cause; committed as soon as storing it works"},
}

func knownCause(c string) bool {
	return c == reminders.CauseTooLarge || c == reminders.CauseBadName || c == reminders.CauseDiskFull
}

// listPaths names up to three paths and counts the rest.
func listPaths(paths []string) string {
	if len(paths) <= 3 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

// errorLine is a last error as one line: class, message, next step.
func errorLine(e *LastError) string {
	s := retry.OneClass(e.Class, e.Message)
	if e.NextStep != "" {
		s += " (next: " + e.NextStep + ")"
	}
	return OneLine(s)
}

// ErrorLine is e as one line for a table ("-" when nil): class, message,
// next step, with control characters escaped.
func ErrorLine(e *LastError) string {
	if e == nil {
		return "-"
	}
	return errorLine(e)
}

// OneLine escapes what would break a line of a table or a log: newlines,
// tabs and other control characters as \n, \t, \xNN; invalid UTF-8 as
// \xNN.
func OneLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
