package agent

import "github.com/memfsd/memfsd/status"

// ErrorLine is e as one line for a table ("-" when nil): class, message,
// next step, with control characters escaped.
func ErrorLine(e *LastError) string { return status.ErrorLine(e) }

// OneLine escapes what would break a line of a table or a log
// (status.OneLine).
func OneLine(s string) string { return status.OneLine(s) }
