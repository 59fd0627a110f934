// Package callrecord is the record of idempotent memory-tool calls: the
// answers kept per key outside the memory folder (Store), and the commit
// trailer that marks a call applied, which counts only with memfsd's
// check line, an HMAC under a secret kept beside the answers.
package callrecord

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

	"github.com/memfsd/memfsd/memtool"
)

// TrailerKey names the commit trailer of an idempotent memory call.
const TrailerKey = "Memory-Call"

// Calls older than the newest DefaultKept answers are forgotten; the
// commit trailer still finds an applied write DefaultSearch commits back.
const (
	DefaultKept = 1000
	// DefaultSearch bounds the trailer search (under the repo lock):
	// the answer record is written right after the commit, so only a crash
	// in between needs it, and then the commit is among the newest.
	DefaultSearch = 64
)

// callsDir holds the answers of idempotent calls, one file per key.
const callsDir = "calls"

// ValidKey checks a key: 1–200 visible ASCII characters (a
// harness passes its tool_use id).
func ValidKey(k string) error {
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

// KeyReusedError is an idempotency key sent again with a different call
// (another command or other arguments): neither the first answer nor a new
// write would be right.
type KeyReusedError struct{ Key string }

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("idempotency key %q was already used for a different memory call; send a new key for a new call", e.Key)
}

// CheckKey names the trailer that makes a Memory-Call trailer memfsd's:
// "<fingerprint> <HMAC-SHA256(secret, key, fingerprint)>".
const CheckKey = "Memory-Call-Check"

// secretFile, beside the answer records (outside the memory folder),
// keys the check trailers.
const secretFile = "call-secret"

// MAC is the check of key's call with fingerprint fp under secret.
func MAC(secret []byte, key, fp string) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "memfsd Memory-Call\x00%s\x00%s", key, fp)
	return hex.EncodeToString(m.Sum(nil))
}

// Trailer is the trailer of key's call with fingerprint fp: the
// Memory-Call line and memfsd's check line.
func Trailer(secret []byte, key, fp string) string {
	return TrailerKey + ": " + key + "\n" + CheckKey + ": " + fp + " " + MAC(secret, key, fp)
}

// Verified reports whether msg carries key's Memory-Call trailer with a
// check line memfsd made, and the fingerprint of the call it recorded.
// Lines the agent forged (no check, or a check that does not verify) are
// ignored, wherever they stand in the message.
func Verified(msg string, secret []byte, key string) (string, bool) {
	lines := strings.Split(msg, "\n")
	if !slices.Contains(lines, TrailerKey+": "+key) {
		return "", false
	}
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, CheckKey+": ")
		if !ok {
			continue
		}
		fp, mac, ok := strings.Cut(rest, " ")
		if ok && hmac.Equal([]byte(mac), []byte(MAC(secret, key, fp))) {
			return fp, true
		}
	}
	return "", false
}

// Store is an agent's answers of idempotent calls: one file per key in
// <Records>/calls, and the check trailers' secret in Records.
type Store struct {
	Records string // the agent's records folder, out of its reach
	// WriteFile replaces a record file atomically (the agent's records'
	// writer).
	WriteFile func(p string, data []byte) error
}

// Secret reads the agent's check-trailer key, making it on first use.
// Two processes (the daemon and a direct `memfsd memory`) may race to make
// it: the file is linked into place, never replaced, and both read the one
// that won.
func (s Store) Secret() ([]byte, error) {
	p := filepath.Join(s.Records, secretFile)
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
	f, err := os.CreateTemp(filepath.Dir(p), secretFile+".tmp-")
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

func (s Store) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.Records, callsDir, hex.EncodeToString(sum[:16])+".json")
}

// Record is a call's recorded answer.
type Record struct {
	Key string `json:"key"`
	// Call is the call's fingerprint ("" in records of older memfsd).
	Call   string         `json:"call,omitempty"`
	Result memtool.Result `json:"result"`
}

// Read is the answer recorded for key (false when none).
func (s Store) Read(key string) (Record, bool) {
	data, err := os.ReadFile(s.path(key))
	if err != nil {
		return Record{}, false
	}
	var rec Record
	if json.Unmarshal(data, &rec) != nil || rec.Key != key {
		return Record{}, false
	}
	return rec, true
}

// Write records an answer and forgets the oldest beyond the bound.
func (s Store) Write(key, fp string, res memtool.Result) error {
	data, _ := json.Marshal(Record{Key: key, Call: fp, Result: res})
	if err := s.WriteFile(s.path(key), data); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(s.Records, callsDir))
	if err != nil || len(entries) <= DefaultKept {
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
	for _, old := range all[:len(all)-DefaultKept] {
		os.Remove(filepath.Join(s.Records, callsDir, old.name))
	}
	return nil
}
