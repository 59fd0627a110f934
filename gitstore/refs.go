package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitfmt/codec"
)

// DefaultBranch is the branch memfsd keeps (and an embedded remote's HEAD
// names).
const DefaultBranch = "main"

// ErrRefMoved is returned by a compare-and-swap on a ref that someone else
// moved in the meantime.
var ErrRefMoved = errors.New("ref moved by another writer")

// ReadRef reads a ref as git does: the loose file first (it shadows
// packed-refs), then packed-refs, following "ref: " up to MaxSymrefDepth
// times. A missing ref is the zero hash. The agent's shell can write
// .git, so a ref that is a link, a FIFO, a huge file, a loop of symbolic
// refs or a symbolic ref out of refs/ is an error naming it, never a hang
// or a crash (see OpenGitFile).
func ReadRef(gitDir, name string) (plumbing.Hash, error) {
	first := name
	for range MaxSymrefDepth + 1 {
		data, err := ReadGitFile(gitDir, name, MaxRefSize)
		if errors.Is(err, fs.ErrNotExist) {
			return ReadPackedRef(gitDir, name)
		}
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read ref %s: %w", first, err)
		}
		s := strings.TrimSpace(string(data))
		if target, ok := strings.CutPrefix(s, "ref: "); ok {
			if err := CheckRefName(target); err != nil || !strings.HasPrefix(target, "refs/") {
				return plumbing.ZeroHash, fmt.Errorf("read ref %s: .git/%s is a bad symbolic ref %q", first, name, target)
			}
			name = target
			continue
		}
		if !plumbing.IsHash(s) {
			return plumbing.ZeroHash, fmt.Errorf("read ref %s: .git/%s has bad content %q", first, name, s)
		}
		return plumbing.NewHash(s), nil
	}
	return plumbing.ZeroHash, fmt.Errorf("read ref %s: %w: more than %d symbolic refs in a row (a loop?)", first, ErrSymrefLoop, MaxSymrefDepth)
}

// ErrSymrefLoop is a chain of symbolic refs longer than MaxSymrefDepth.
var ErrSymrefLoop = errors.New("symbolic ref loop")

// ReadPackedRef reads name from packed-refs alone.
func ReadPackedRef(gitDir, name string) (plumbing.Hash, error) {
	data, err := ReadGitFile(gitDir, "packed-refs", MaxPackedRefsSize)
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	suffix := []byte(" " + name)
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 41 && line[40] == ' ' && bytes.Equal(line[40:], suffix) && plumbing.IsHash(string(line[:40])) {
			return plumbing.NewHash(string(line[:40])), nil
		}
	}
	return plumbing.ZeroHash, nil
}

// PackedRefNames lists the refs in packed-refs whose names start with prefix.
func PackedRefNames(gitDir, prefix string) ([]string, error) {
	data, err := ReadGitFile(gitDir, "packed-refs", MaxPackedRefsSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		if name := string(line[41:]); strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// HeadBranch is the ref HEAD points to ("" when HEAD is detached).
func HeadBranch(gitDir string) (string, error) {
	data, err := ReadGitFile(gitDir, "HEAD", MaxRefSize)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "ref: ") {
		return "", nil
	}
	return strings.TrimPrefix(s, "ref: "), nil
}

// CheckRefName is git's check-ref-format, enough to keep a name inside
// .git/refs: no "..", no empty or dot-led part, no control characters or
// any of ` ~^:?*[\`, no "@{", no ".lock" part ending.
func CheckRefName(name string) error {
	if strings.ContainsAny(name, " ~^:?*[\\") || strings.Contains(name, "..") || strings.Contains(name, "@{") {
		return errors.New(`a ref name has no spaces, "..", "@{" or any of ~^:?*[\`)
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f {
			return errors.New("a ref name has no control characters")
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return errors.New(`a ref name has no empty part, no part starting with "." and none ending in ".lock"`)
		}
	}
	return nil
}

// CASRef moves ref name from old to new with git's protocol: take
// <ref>.lock, check the current value is old, write new into the lock,
// rename it into place. old == ZeroHash means "must not exist".
//
// With a log entry, the move is also appended to git's reflog of the ref
// (and of HEAD when HEAD is on it) under the ref's lock, as git does, so
// `git reflog` shows memfsd's commits, pulls and recoveries.
func CASRef(gitDir, name string, old, new plumbing.Hash, wait time.Duration, sync bool, sp *Spares, log *ReflogEntry) error {
	u, err := PrepareRef(gitDir, name, old, new, wait, sp, log)
	if err != nil {
		return err
	}
	defer u.Rollback()
	return u.Commit(sync)
}

// RefUpdate is a ref move prepared under the ref's lock: the new value is
// written to the lock file, not yet in place. A commit prepares its ref,
// then hardens objects, index and the ref's new value with one syncfs, and
// only then moves the ref (commit(false)): one flush instead of two, and
// still no ref that points at an object a power cut can lose.
type RefUpdate struct {
	lk       *LockFile
	gitDir   string
	name     string
	old, new plumbing.Hash
	log      *ReflogEntry
}

// PrepareRef takes name's lock, checks the ref is still at old
// (ErrRefMoved otherwise) and writes new into the lock file.
func PrepareRef(gitDir, name string, old, new plumbing.Hash, wait time.Duration, sp *Spares, log *ReflogEntry) (*RefUpdate, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	if sp == nil { // the hot path (a commit) knows refs/heads exists
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("update %s: %w", name, err)
		}
	}
	lk, err := AcquireLock(path, wait, sp)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	cur, err := ReadRef(gitDir, name)
	if err == nil && cur != old {
		err = fmt.Errorf("%w (is at %s, expected %s)", ErrRefMoved, Short(cur), Short(old))
	}
	if err == nil {
		err = lk.Write([]byte(new.String()+"\n"), false)
	}
	if err != nil {
		lk.Rollback()
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	return &RefUpdate{lk: lk, gitDir: gitDir, name: name, old: old, new: new, log: log}, nil
}

// PendingRef is a ref move whose new value is written before the ref's
// lock is taken (PendingLock): Acquire takes the lock and checks the ref,
// so the lock is held for a few system calls, never across a syncfs.
type PendingRef struct {
	lk       *PendingLock
	gitDir   string
	name     string
	old, new plumbing.Hash
	log      *ReflogEntry
}

// PrepareRefLater writes new for name's lock without taking it.
func PrepareRefLater(gitDir, name string, old, new plumbing.Hash, sp *Spares, log *ReflogEntry) (*PendingRef, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	if sp == nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("update %s: %w", name, err)
		}
	}
	lk, err := PrepareLock(path, []byte(new.String()+"\n"), sp)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	return &PendingRef{lk: lk, gitDir: gitDir, name: name, old: old, new: new, log: log}, nil
}

// TryAcquire takes the ref's lock if no one holds it (nil, nil when
// someone does) and checks the ref is still at old (ErrRefMoved
// otherwise): the update is then Move's to finish, or Return's to give
// back.
func (p *PendingRef) TryAcquire() (*RefUpdate, error) {
	lk, err := p.lk.TryAcquire()
	if lk == nil || err != nil {
		if err != nil {
			err = fmt.Errorf("update %s: %w", p.name, err)
		}
		return nil, err
	}
	cur, err := ReadRef(p.gitDir, p.name)
	if err == nil && cur != p.old {
		err = fmt.Errorf("%w (is at %s, expected %s)", ErrRefMoved, Short(cur), Short(p.old))
	}
	if err != nil {
		p.lk.Return(lk)
		return nil, fmt.Errorf("update %s: %w", p.name, err)
	}
	return &RefUpdate{lk: lk, gitDir: p.gitDir, name: p.name, old: p.old, new: p.new, log: p.log}, nil
}

// Return gives back an update taken by TryAcquire, unused.
func (p *PendingRef) Return(u *RefUpdate) {
	if u != nil {
		p.lk.Return(u.lk)
	}
}

// LockPath is the ref's lock file.
func (p *PendingRef) LockPath() string { return p.lk.target + ".lock" }

// Drop gives up the prepared update (safe after Acquire).
func (p *PendingRef) Drop() { p.lk.Drop() }

// Commit moves the ref into place, fsyncing its new value first when sync
// (false when a syncfs after PrepareRef already covered it).
func (u *RefUpdate) Commit(sync bool) error {
	if sync {
		if err := u.lk.f.Sync(); err != nil {
			return fmt.Errorf("update %s: sync: %w", u.name, err)
		}
	}
	if u.log != nil {
		u.log.append(u.gitDir, u.name, u.old, u.new)
	}
	if err := u.lk.Commit(); err != nil {
		return fmt.Errorf("update %s: %w", u.name, err)
	}
	return nil
}

// Move renames the ref into place without writing the reflog (Log does,
// after): the ref's part of a window held under another lock, kept to
// the rename.
func (u *RefUpdate) Move() error {
	if err := u.lk.Rename(); err != nil {
		return fmt.Errorf("update %s: %w", u.name, err)
	}
	return nil
}

// Log appends the move's reflog entry and drops what Move left.
func (u *RefUpdate) Log() {
	u.lk.Finish()
	if u.log != nil {
		u.log.append(u.gitDir, u.name, u.old, u.new)
	}
}

// Rollback drops the lock, leaving the ref as it was. Safe after commit.
func (u *RefUpdate) Rollback() { u.lk.Rollback() }

// ReflogEntry is who moved a ref and why, for git's reflog.
type ReflogEntry struct {
	Name, Email string // who
	Msg         string
}

// append writes the entry to logs/<name>, and to logs/HEAD when HEAD
// points at name. A reflog that cannot be written is not a failed ref move
// (git treats it the same way): it is skipped.
func (e *ReflogEntry) append(gitDir, name string, old, new plumbing.Hash) {
	_, offset := time.Now().Zone()
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	msg := strings.ReplaceAll(strings.TrimSpace(e.Msg), "\n", " ")
	line := fmt.Sprintf("%s %s %s <%s> %d %c%02d%02d\t%s\n", old, new, codec.SanitizeSig(e.Name), codec.SanitizeSig(e.Email),
		time.Now().Unix(), sign, offset/3600, (offset%3600)/60, msg)
	targets := []string{name}
	if head, err := HeadBranch(gitDir); err == nil && head == name {
		targets = append(targets, "HEAD")
	}
	for _, t := range targets {
		p := filepath.Join(gitDir, "logs", filepath.FromSlash(t))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			continue
		}
		f.WriteString(line)
		f.Close()
	}
}

// SetRef writes a ref unconditionally (still through its lock).
func SetRef(gitDir, name string, h plumbing.Hash, wait time.Duration, sp *Spares) error {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	lk, err := AcquireLock(path, wait, sp)
	if err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	defer lk.Rollback()
	if err := lk.Write([]byte(h.String()+"\n"), false); err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	return lk.Commit()
}

// Short is h's first seven hex digits ("nothing" for the zero id), for messages.
func Short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:7]
}
