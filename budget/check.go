package budget

import (
	"encoding/json"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Error is a memory-tool write refused for taking the pinned memory past
// its budget.
type Error struct {
	Before, After, Limit int
	Layout               string
}

func (e *Error) Error() string {
	where := "the files under /memories/system/"
	if e.Layout == LayoutV2 {
		where = "the .md files at the root of /memories"
	}
	return fmt.Sprintf("Refused: the pinned memory (%s, always in your context) would be about %d tokens, over its budget of %d (it is %d now). "+
		"Make room first: shorten or merge pinned files, or move detail into files outside them, which stay listed and readable on demand.",
		where, e.After, e.Limit, e.Before)
}

// Check refuses a change from the files before to the files after that
// takes the pinned memory past the budget, or further past it (an *Error);
// one that shrinks it is let through, so an agent over its budget can
// always make room. limit is the budget in force given the policy file's
// content before the change (nil when there is none).
func Check(before, after map[string]File, read func(plumbing.Hash) ([]byte, error), limit func(policy []byte) int) error {
	now, _, _, err := Measure(before, read)
	if err != nil {
		return err
	}
	next, layout, _, err := Measure(after, read)
	if err != nil {
		return err
	}
	if next <= now {
		return nil
	}
	var policy []byte
	if f, ok := before[PolicyPath]; ok {
		if policy, err = read(f.Blob); err != nil {
			return err
		}
	}
	if l := limit(policy); next > l {
		return &Error{Before: now, After: next, Limit: l, Layout: layout}
	}
	return nil
}

// record is the operator's budget as memfsd's records keep it.
type record struct {
	Tokens int `json:"tokens"`
}

// ParseRecord reads the operator's budget from its record: false when the
// record is unreadable or out of range (1 to MaxTokens).
func ParseRecord(data []byte) (int, bool) {
	var rec record
	if json.Unmarshal(data, &rec) != nil || rec.Tokens < 1 || rec.Tokens > MaxTokens {
		return 0, false
	}
	return rec.Tokens, true
}

// Record is the operator's budget of tokens as its record holds it.
func Record(tokens int) []byte {
	data, _ := json.Marshal(record{Tokens: tokens})
	return data
}

// InForce is the budget in force: the operator's when set, else the
// policy file's (policy is its content, nil when absent), else
// DefaultTokens; with where it comes from (FromOperator, FromPolicy,
// FromDefault) and, for a policy file that cannot be read, why it was not
// used.
func InForce(operator int, set bool, policy []byte) (int, string, string) {
	if set {
		return operator, FromOperator, ""
	}
	if policy != nil {
		n, ok, err := ParsePolicy(policy)
		if err != nil {
			return DefaultTokens, FromDefault, err.Error() + "; the default budget applies"
		}
		if ok {
			return n, FromPolicy, ""
		}
	}
	return DefaultTokens, FromDefault, ""
}
