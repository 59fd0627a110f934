package agent

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
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
// whose answer record is gone but whose commit carries memfsd's verified
// `Memory-Call: <key>` trailer answers that it was already applied. Both
// survive a restart. A key sent again with a different call is a
// *KeyReusedError. Calls with one key are serialised.
func (a *Agent) RunMemory(in memtool.Input, key string) (memtool.Result, error) {
	return a.RunCall(memtool.Call{Dialect: memtool.Anthropic, Input: in}, key)
}

// KeyReusedError is an idempotency key sent again with a different call
// (another command or other arguments): neither the first answer nor a new
// write would be right.
type KeyReusedError struct{ Key string }

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("idempotency key %q was already used for a different memory call; send a new key for a new call", e.Key)
}

// RunCall is RunMemory for a call of either dialect (Anthropic's
// memory_20250818 or letta-code's memory and memory_apply_patch): the same
// folder, checks, commit and idempotency.
//
// Only what memfsd recorded counts: the answer records live outside the
// memory folder (the agent's shell does not reach them), and a commit's
// trailer counts only with its check line, an HMAC of the key and the
// call's fingerprint under a secret kept beside those records. A
// `Memory-Call:` line the agent wrote (in a reason or a shell commit)
// proves nothing.
func (a *Agent) RunCall(in memtool.Call, key string) (memtool.Result, error) {
	if key == "" {
		return a.runCall(in, "")
	}
	if err := ValidIdempotencyKey(key); err != nil {
		return memtool.Result{}, err
	}
	a.callMu.Lock()
	defer a.callMu.Unlock()
	secret, err := a.callSecret()
	if err != nil {
		return memtool.Result{}, err
	}
	fp := in.Fingerprint()
	trailer := TrailerKey + ": " + key + "\n" + callCheckKey + ": " + fp + " " + callMAC(secret, key, fp)
	if a.repository() == nil {
		return memtool.Result{}, ErrNotReady
	}
	if rec, ok := a.readCall(key); ok {
		if rec.Call != "" && rec.Call != fp {
			return memtool.Result{}, &KeyReusedError{Key: key}
		}
		return rec.Result, nil
	}
	var appliedAs string
	find := func(repo *gitmem.Repo) (plumbing.Hash, bool, error) {
		if repo == nil {
			return plumbing.ZeroHash, false, ErrNotReady
		}
		return repo.FindCommit(DefaultCallSearch, func(msg string) bool {
			f, ok := verifiedCall(msg, secret, key)
			if ok {
				appliedAs = f
			}
			return ok
		})
	}
	repo := a.repository()
	h, ok, err := find(repo)
	switch {
	case err != nil:
		return memtool.Result{}, err
	case ok && appliedAs != fp:
		return memtool.Result{}, &KeyReusedError{Key: key}
	case ok:
		return memtool.Result{Content: "already applied in " + h.String()}, nil
	}
	res, err := a.runCall(in, trailer)
	if err != nil {
		return memtool.Result{}, err
	}
	if !res.Final() {
		return res, nil // a failure of ours: a retry with the key may apply it
	}
	if err := a.writeCall(key, fp, res); err != nil {
		a.log.Warn("idempotent call applied but its answer was not recorded; the commit trailer still marks it", "err", err)
	}
	return res, nil
}

// callCheckKey names the trailer that makes a Memory-Call trailer memfsd's:
// "<fingerprint> <HMAC-SHA256(secret, key, fingerprint)>".
const callCheckKey = "Memory-Call-Check"

// callSecretFile, beside the answer records (outside the memory folder),
// keys the check trailers.
const callSecretFile = "call-secret"

func callMAC(secret []byte, key, fp string) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "memfsd Memory-Call\x00%s\x00%s", key, fp)
	return hex.EncodeToString(m.Sum(nil))
}

// verifiedCall reports whether msg carries key's Memory-Call trailer with a
// check line memfsd made, and the fingerprint of the call it recorded.
// Lines the agent forged (no check, or a check that does not verify) are
// ignored, wherever they stand in the message.
func verifiedCall(msg string, secret []byte, key string) (string, bool) {
	lines := strings.Split(msg, "\n")
	if !slices.Contains(lines, TrailerKey+": "+key) {
		return "", false
	}
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, callCheckKey+": ")
		if !ok {
			continue
		}
		fp, mac, ok := strings.Cut(rest, " ")
		if ok && hmac.Equal([]byte(mac), []byte(callMAC(secret, key, fp))) {
			return fp, true
		}
	}
	return "", false
}

// callSecret reads the agent's check-trailer key, making it on first use.
// Two processes (the daemon and a direct `memfsd memory`) may race to make
// it: the file is linked into place, never replaced, and both read the one
// that won.
func (a *Agent) callSecret() ([]byte, error) {
	p := a.recordPath(callSecretFile)
	if data, err := os.ReadFile(p); err == nil && len(data) >= 32 {
		return data, nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("make call secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("make call secret: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), callSecretFile+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("make call secret: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Link(f.Name(), p); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("make call secret: %w", err)
	}
	data, err := os.ReadFile(p)
	if err != nil || len(data) < 32 {
		return nil, fmt.Errorf("read call secret %s: %v (%d bytes)", p, err, len(data))
	}
	return data, nil
}

func (a *Agent) callPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(a.recordPath(callsDir), hex.EncodeToString(sum[:16])+".json")
}

type callRecord struct {
	Key string `json:"key"`
	// Call is the call's fingerprint ("" in records of older memfsd).
	Call   string         `json:"call,omitempty"`
	Result memtool.Result `json:"result"`
}

func (a *Agent) readCall(key string) (callRecord, bool) {
	data, err := os.ReadFile(a.callPath(key))
	if err != nil {
		return callRecord{}, false
	}
	var rec callRecord
	if json.Unmarshal(data, &rec) != nil || rec.Key != key {
		return callRecord{}, false
	}
	return rec, true
}

// writeCall records an answer and forgets the oldest beyond the bound.
func (a *Agent) writeCall(key, fp string, res memtool.Result) error {
	data, _ := json.Marshal(callRecord{Key: key, Call: fp, Result: res})
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

// runCall runs one memory-tool call, its commit carrying trailer.
func (a *Agent) runCall(in memtool.Call, trailer string) (memtool.Result, error) {
	tool, err := a.memoryToolAs(trailer, nil)
	if err != nil {
		return memtool.Result{}, err
	}
	return tool.RunCall(in), nil
}
