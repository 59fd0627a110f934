package history

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitstore"
)

// Errors of Resolve: the caller's input, never the repository's
// fault (an API answers them 400).
var (
	// ErrBadRevision is a revision that is not spelled as one.
	ErrBadRevision = errors.New("bad revision")
	// ErrUnknownRevision names no commit of the repository.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrAmbiguousRevision is a short id that more than one commit starts with.
	ErrAmbiguousRevision = errors.New("ambiguous revision")
)

// minShortID is the shortest abbreviated id accepted, as git's.
const minShortID = 4

// maxRevLen bounds a revision's spelling (a ref name, then ~N and ^N steps).
const maxRevLen = 512

// Resolve names a commit as git does, from what memfsd keeps and
// without a git binary: a full or abbreviated (at least 4 hex digits)
// commit id, HEAD, a branch or ref name (main, origin/main,
// refs/memfsd/backup/<n>; refs/heads, refs/remotes, refs/tags and
// refs/memfsd only), each followed by any number of ~N, ^N, ~ and ^
// steps. Errors wrap ErrBadRevision, ErrUnknownRevision or
// ErrAmbiguousRevision.
func (rd Reader) Resolve(rev string) (h plumbing.Hash, err error) {
	base, steps, err := splitRevision(rev)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h, err = rd.resolveBase(base); err != nil {
		return plumbing.ZeroHash, err
	}
	rd.Locked(func() { h, err = rd.walkSteps(rev, h, steps) })
	return h, err
}

// walkSteps takes rev's ~ and ^ steps from the commit h, under the lock.
func (rd Reader) walkSteps(rev string, h plumbing.Hash, steps []revStep) (plumbing.Hash, error) {
	c, err := rd.Objects.Commit(h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("revision %q: %s is not a commit of this repository: %w", rev, gitstore.Short(h), ErrUnknownRevision)
	}
	for _, s := range steps {
		for range s.count {
			// ^N takes the Nth parent once; ~N the first parent N times.
			idx := 0
			if s.parent {
				idx = s.n - 1
			}
			if idx < 0 { // ^0: the commit itself
				break
			}
			if idx >= len(c.ParentHashes) {
				return plumbing.ZeroHash, fmt.Errorf("revision %q: %s has %d parent(s), no parent %d: %w", rev, gitstore.Short(c.Hash), len(c.ParentHashes), idx+1, ErrUnknownRevision)
			}
			if c, err = rd.Objects.Commit(c.ParentHashes[idx]); err != nil {
				return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", rev, err)
			}
		}
	}
	return c.Hash, nil
}

// revStep is one ~N (count N of the first parent) or ^N (parent N, once).
type revStep struct {
	parent bool
	n      int
	count  int
}

// splitRevision cuts rev into its base name and its ~/^ steps.
func splitRevision(rev string) (string, []revStep, error) {
	bad := func(why string) error { return fmt.Errorf("revision %q: %s: %w", rev, why, ErrBadRevision) }
	if rev == "" {
		return "", nil, bad("empty")
	}
	if len(rev) > maxRevLen {
		return "", nil, bad(fmt.Sprintf("longer than %d characters", maxRevLen))
	}
	cut := strings.IndexAny(rev, "~^")
	if cut < 0 {
		return rev, nil, nil
	}
	base, rest := rev[:cut], rev[cut:]
	if base == "" {
		return "", nil, bad("no name before ~ or ^")
	}
	var steps []revStep
	for rest != "" {
		op := rest[0]
		rest = rest[1:]
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		n := 1
		if digits > 0 {
			v, err := strconv.Atoi(rest[:digits])
			if err != nil || v > 100000 {
				return "", nil, bad("a step over 100000")
			}
			n = v
			rest = rest[digits:]
		}
		switch op {
		case '~':
			steps = append(steps, revStep{count: n})
		case '^':
			steps = append(steps, revStep{parent: true, n: n, count: 1})
		default:
			return "", nil, bad("want NAME followed by ~N or ^N steps only")
		}
	}
	return base, steps, nil
}

// resolveBase names the commit of a revision's base: HEAD, a full id, a
// ref (git's DWIM order), else an abbreviated id.
func (rd Reader) resolveBase(name string) (plumbing.Hash, error) {
	if name == "HEAD" || name == "@" {
		h, err := rd.refTarget("HEAD")
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("revision HEAD: %w", err)
		}
		if h.IsZero() {
			return plumbing.ZeroHash, fmt.Errorf("revision HEAD: the branch has no commit yet: %w", ErrUnknownRevision)
		}
		return h, nil
	}
	if len(name) == 40 && isHex(name) {
		return plumbing.NewHash(name), nil
	}
	if err := gitstore.CheckRefName(name); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("revision %q: %v: %w", name, err, ErrBadRevision)
	}
	for _, full := range dwimRefs(name) {
		h, err := rd.refTarget(full)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", name, err)
		}
		if !h.IsZero() {
			return h, nil
		}
	}
	if len(name) >= minShortID && isHex(name) {
		return rd.resolveShort(strings.ToLower(name))
	}
	return plumbing.ZeroHash, fmt.Errorf("revision %q: no such commit, branch or ref (try a commit id from the history, HEAD~N, %s or origin/%s): %w", name, rd.Branch, rd.Branch, ErrUnknownRevision)
}

// dwimRefs are the refs a short name may mean, in git's order, limited to
// the namespaces memfsd keeps.
func dwimRefs(name string) []string {
	var out []string
	for _, f := range []string{"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"} {
		full := fmt.Sprintf(f, name)
		for _, ns := range []string{"refs/heads/", "refs/remotes/", "refs/tags/", "refs/memfsd/"} {
			if strings.HasPrefix(full, ns) {
				out = append(out, full)
				break
			}
		}
	}
	return out
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// refTarget reads a ref through gitstore.ReadRef (loose file, then
// packed-refs, symbolic refs followed a bounded number of times, the
// agent's files read as untrusted input). Zero when the ref does not exist.
func (rd Reader) refTarget(name string) (plumbing.Hash, error) {
	return gitstore.ReadRef(rd.GitDir, name)
}

// resolveShort finds the one commit whose id starts with prefix.
func (rd Reader) resolveShort(prefix string) (plumbing.Hash, error) {
	found, err := findPrefix(rd.Objects, prefix)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("revision %s: %w", prefix, err)
	}
	var commits []plumbing.Hash
	rd.Locked(func() {
		for _, h := range found {
			if _, err := rd.Objects.Commit(h); err == nil {
				commits = append(commits, h)
			}
		}
	})
	switch len(commits) {
	case 0:
		return plumbing.ZeroHash, fmt.Errorf("revision %q: no commit id starts with it: %w", prefix, ErrUnknownRevision)
	case 1:
		return commits[0], nil
	}
	names := make([]string, len(commits))
	for i, h := range commits {
		names[i] = h.String()[:12]
	}
	slices.Sort(names)
	return plumbing.ZeroHash, fmt.Errorf("revision %q: %d commits start with it (%s): give more digits: %w", prefix, len(commits), strings.Join(names, ", "), ErrAmbiguousRevision)
}

// maxPrefixMatches bounds the objects an abbreviated id may match (a
// 4-digit prefix in a big store matches a handful; this is a guard).
const maxPrefixMatches = 64

// findPrefix lists the objects whose hex id starts with prefix (at least
// two digits): loose ones from their fan-out folder, packed ones by
// binary search of each pack index's fan-out bucket (O(packs × log n), no
// object read). Pending objects are not looked at: every commit a ref
// names was flushed first.
func findPrefix(s *gitstore.Objects, prefix string) ([]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] && len(out) < maxPrefixMatches {
			seen[h] = true
			out = append(out, h)
		}
	}
	// Listed beneath .git through no link: a fan-out folder the agent
	// swapped for a link to another agent's objects lists nothing.
	if entries, err := gitstore.ReadDirBeneath(s.GitDir, "objects/"+prefix[:2]); err == nil {
		for _, e := range entries {
			if !e.Mode().IsRegular() {
				continue
			}
			name := prefix[:2] + e.Name()
			if len(name) == 40 && strings.HasPrefix(name, prefix) && isHex(name) {
				add(plumbing.NewHash(name))
			}
		}
	}
	packs, err := gitstore.ReadDirBeneath(s.GitDir, "objects/pack")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range packs {
		if !strings.HasSuffix(e.Name(), ".idx") || !e.Mode().IsRegular() {
			continue
		}
		hs, err := idxPrefix(s.GitDir, "objects/pack/"+e.Name(), prefix)
		if err != nil {
			continue // a pack a repack removed meanwhile, or one being written
		}
		for _, h := range hs {
			add(h)
		}
	}
	return out, nil
}

// idxPrefix finds the ids starting with prefix in one pack index (v1 or
// v2): the fan-out table bounds the bucket of the first byte, a binary
// search the first match within it.
func idxPrefix(gitDir, rel, prefix string) ([]plumbing.Hash, error) {
	f, _, err := gitstore.OpenGitFile(gitDir, rel, gitstore.MaxPackIndexSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var head [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	fanAt, namesAt, stride := int64(0), int64(4*256), int64(24) // v1: (offset, name) pairs
	if bytes.Equal(head[:4], []byte{0xff, 't', 'O', 'c'}) {
		if binary.BigEndian.Uint32(head[4:]) != 2 {
			return nil, fmt.Errorf("pack index %s: version %d", rel, binary.BigEndian.Uint32(head[4:]))
		}
		fanAt, namesAt, stride = 8, 8+4*256, 20
	}
	first, err := hex.DecodeString(prefix[:2])
	if err != nil {
		return nil, err
	}
	b := int64(first[0])
	var fan [8]byte
	lo := int64(0)
	if b > 0 {
		if _, err := f.ReadAt(fan[:], fanAt+4*(b-1)); err != nil {
			return nil, err
		}
		lo = int64(binary.BigEndian.Uint32(fan[:4]))
	} else if _, err := f.ReadAt(fan[4:], fanAt); err != nil {
		return nil, err
	}
	hi := int64(binary.BigEndian.Uint32(fan[4:]))
	if hi < lo || hi-lo > 1<<24 {
		return nil, fmt.Errorf("pack index %s: bad fan-out", rel)
	}
	nameAt := func(i int64) (plumbing.Hash, error) {
		var h plumbing.Hash
		off := namesAt + i*stride
		if stride == 24 {
			off += 4
		}
		_, err := f.ReadAt(h[:], off)
		return h, err
	}
	// First index in [lo, hi) whose hex id is >= prefix.
	var searchErr error
	i := lo + int64(sort.Search(int(hi-lo), func(k int) bool {
		h, err := nameAt(lo + int64(k))
		if err != nil {
			searchErr = err
			return true
		}
		return h.String() >= prefix
	}))
	if searchErr != nil {
		return nil, searchErr
	}
	var out []plumbing.Hash
	for ; i < hi && len(out) < maxPrefixMatches; i++ {
		h, err := nameAt(i)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(h.String(), prefix) {
			break
		}
		out = append(out, h)
	}
	return out, nil
}
