package agent

import (
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/callrecord"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
)

// TrailerKey names the commit trailer of an idempotent memory call.
const TrailerKey = callrecord.TrailerKey

// Calls older than the newest DefaultCallsKept answers are forgotten; the
// commit trailer still finds an applied write DefaultCallSearch commits back
// (callrecord).
const (
	DefaultCallsKept  = callrecord.DefaultKept
	DefaultCallSearch = callrecord.DefaultSearch
)

// ValidIdempotencyKey checks a key: 1–200 visible ASCII characters (a
// harness passes its tool_use id).
func ValidIdempotencyKey(k string) error { return callrecord.ValidKey(k) }

// KeyReusedError is an idempotency key sent again with a different call
// (callrecord.KeyReusedError).
type KeyReusedError = callrecord.KeyReusedError

// calls is the agent's record of idempotent calls, in its records folder.
func (a *Agent) calls() callrecord.Store {
	return callrecord.Store{Records: filepath.Join(a.folder, "records"), WriteFile: writeRecord}
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
	calls := a.calls()
	secret, err := calls.Secret()
	if err != nil {
		return memtool.Result{}, err
	}
	fp := in.Fingerprint()
	trailer := callrecord.Trailer(secret, key, fp)
	if a.repository() == nil {
		return memtool.Result{}, ErrNotReady
	}
	if rec, ok := calls.Read(key); ok {
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
			f, ok := callrecord.Verified(msg, secret, key)
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
	if err := calls.Write(key, fp, res); err != nil {
		a.log.Warn("idempotent call applied but its answer was not recorded; the commit trailer still marks it", "err", err)
	}
	return res, nil
}

// runCall runs one memory-tool call, its commit carrying trailer.
func (a *Agent) runCall(in memtool.Call, trailer string) (memtool.Result, error) {
	tool, err := a.memoryToolAs(trailer, nil)
	if err != nil {
		return memtool.Result{}, err
	}
	return tool.RunCall(in), nil
}
