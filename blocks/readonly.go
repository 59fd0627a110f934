package blocks

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/memfsd/memfsd/budget"
)

// IsReadOnlyPath reports whether rel (relative to the memory folder) is one
// of the fixed read-only blocks, or the budget's policy file (the
// operator's, like them).
func IsReadOnlyPath(rel string) bool {
	rel = path.Clean(strings.TrimPrefix(rel, "/"))
	return rel == PersonaPath || rel == HumanPath || rel == budget.PolicyPath
}

// IsReadOnly reports whether the file at rel with content is read-only for
// the agent: by path, or by front matter read_only: true.
func IsReadOnly(rel string, content []byte) bool {
	return IsReadOnlyPath(rel) || (strings.HasSuffix(rel, ".md") && ReadOnlyFlag(content))
}

// MayBeReadOnly reports whether rel can be read-only at all: a fixed block,
// or a .md file (front matter counts only there). Other paths need no
// content check, which keeps a direct write's commit from reading HEAD.
func MayBeReadOnly(rel string) bool {
	return IsReadOnlyPath(rel) || strings.HasSuffix(rel, ".md")
}

// CheckAgentWrite decides whether the agent may replace old (nil: the file
// does not exist) with new (nil: delete) at rel. It refuses writes to
// read-only blocks and any change of the read_only key.
func CheckAgentWrite(rel string, old, new []byte) error {
	if !MayBeReadOnly(rel) {
		return nil
	}
	if old != nil && new != nil && bytes.Equal(old, new) {
		return nil // no change
	}
	if old != nil && IsReadOnly(rel, old) {
		return ErrReadOnly
	}
	if new != nil && IsReadOnlyPath(rel) {
		return ErrReadOnly
	}
	if new != nil && readOnlyValue(old) != readOnlyValue(new) {
		return ErrReadOnlyKey
	}
	return nil
}

// CheckAgentChange is CheckAgentWrite that also compares the file modes
// git records (0o100644 regular, 0o100755 executable, 0o120000 symbolic
// link; 0 when absent): a read-only block stays what it is, so a link
// whose target text equals the content, or the same bytes made
// executable, is a change too.
func CheckAgentChange(rel string, old []byte, oldMode uint32, new []byte, newMode uint32) error {
	if old != nil && new != nil && oldMode != newMode && IsReadOnly(rel, old) {
		return ErrReadOnly
	}
	return CheckAgentWrite(rel, old, new)
}

// Errors of CheckAgentWrite.
var (
	ErrReadOnly    = fmt.Errorf("read-only block")
	ErrReadOnlyKey = fmt.Errorf("read_only in front matter is the operator's to change")
)

// RefusedError is a write refused for the agent at Path (Err is ErrReadOnly
// or ErrReadOnlyKey).
type RefusedError struct {
	Path string
	Err  error
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }
