package blocks

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Limit is the front matter's `limit: N`, the most characters the body may
// hold (false when absent or not a positive number).
func Limit(content []byte) (int, bool) {
	v, ok := Parse(content).Get("limit")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// BodyLen counts the characters of content's body (front matter left out).
func BodyLen(content []byte) int { return utf8.RuneCount(Parse(content).Body) }

// CheckLimit refuses new content whose body is longer than the limit in
// force: the limit of the file as it was (old), or, for a new file or one
// without a limit, the limit new declares. The error text is letta-code's.
func CheckLimit(old, new []byte) error {
	limit, ok := Limit(old)
	if !ok {
		limit, ok = Limit(new)
	}
	if !ok || new == nil {
		return nil
	}
	if n := BodyLen(new); n > limit {
		return &LimitError{Limit: limit, Requested: n}
	}
	return nil
}

// LimitError is a body over its front matter's limit.
type LimitError struct {
	Limit, Requested int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("Exceeds %d character limit (requested %d)", e.Limit, e.Requested)
}
