package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/memfsd/memfsd/memtool"
)

// TrailerKey names the commit trailer of an idempotent memory call.
const TrailerKey = "Memory-Call"

// Calls older than the newest DefaultCallsKept answers are forgotten; the
// commit trailer still finds an applied write DefaultCallSearch commits back.
const (
	DefaultCallsKept = 1000
	// DefaultCallSearch bounds the trailer search (under the repo lock):
	// the answer record is written right after the commit, so only a crash
	// in between needs it, and then the commit is among the newest.
	DefaultCallSearch = 64
)

// callsDir holds the answers of idempotent calls, one file per key.
const callsDir = "calls"

// ValidIdempotencyKey checks a key: 1–200 visible ASCII characters (a
// harness passes its tool_use id).
func ValidIdempotencyKey(k string) error {
	if k == "" || len(k) > 200 {
		return fmt.Errorf("idempotency key: want 1-200 characters, got %d", len(k))
	}
	for _, c := range []byte(k) {
		if c < '!' || c > '~' {
			return fmt.Errorf("idempotency key %q: only visible ASCII characters, no spaces", k)
		}
	}
	return nil
}

// RunMemory runs one memory-tool call. With a key, the call is applied at
// most once (SPEC §8): a key seen before answers the first answer; one
// whose answer record is gone but whose commit carries the
// `Memory-Call: <key>` trailer answers that it was already applied. Both
// survive a restart. Calls with one key are serialised.
func (a *Agent) RunMemory(in memtool.Input, key string) (memtool.Result, error) {
	return a.RunCall(memtool.Call{Dialect: memtool.Anthropic, Input: in}, key)
}

// RunCall is RunMemory for a call of either dialect (Anthropic's
// memory_20250818 or letta-code's memory and memory_apply_patch): the same
// folder, checks, commit and idempotency.
func (a *Agent) RunCall(in memtool.Call, key string) (memtool.Result, error) {
	if key == "" {
		tool, err := a.MemoryTool()
		if err != nil {
			return memtool.Result{}, err
		}
		return tool.RunCall(in), nil
	}
	if err := ValidIdempotencyKey(key); err != nil {
		return memtool.Result{}, err
	}
	trailer := TrailerKey + ": " + key
	tool, err := a.memoryTool(trailer)
	if err != nil {
		return memtool.Result{}, err
	}
	a.callMu.Lock()
	defer a.callMu.Unlock()
	if res, ok := a.readCall(key); ok {
		return res, nil
	}
	if h, ok, err := a.repository().FindTrailer(trailer, DefaultCallSearch); err != nil {
		return memtool.Result{}, err
	} else if ok {
		return memtool.Result{Content: "already applied in " + h.String()}, nil
	}
	res := tool.RunCall(in)
	if !res.Final() {
		return res, nil // a failure of ours: a retry with the key may apply it
	}
	if err := a.writeCall(key, res); err != nil {
		a.log.Warn("idempotent call applied but its answer was not recorded; the commit trailer still marks it", "err", err)
	}
	return res, nil
}

func (a *Agent) callPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(a.recordPath(callsDir), hex.EncodeToString(sum[:16])+".json")
}

type callRecord struct {
	Key    string         `json:"key"`
	Result memtool.Result `json:"result"`
}

func (a *Agent) readCall(key string) (memtool.Result, bool) {
	data, err := os.ReadFile(a.callPath(key))
	if err != nil {
		return memtool.Result{}, false
	}
	var rec callRecord
	if json.Unmarshal(data, &rec) != nil || rec.Key != key {
		return memtool.Result{}, false
	}
	return rec.Result, true
}

// writeCall records an answer and forgets the oldest beyond the bound.
func (a *Agent) writeCall(key string, res memtool.Result) error {
	data, _ := json.Marshal(callRecord{Key: key, Result: res})
	if err := writeRecord(a.callPath(key), data); err != nil {
		return err
	}
	entries, err := os.ReadDir(a.recordPath(callsDir))
	if err != nil || len(entries) <= DefaultCallsKept {
		return err
	}
	type aged struct {
		name string
		at   int64
	}
	var all []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(x, y aged) int { return int(x.at - y.at) })
	for _, old := range all[:len(all)-DefaultCallsKept] {
		os.Remove(filepath.Join(a.recordPath(callsDir), old.name))
	}
	return nil
}
