package gitmem

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/internal/atomicfile"
)

// A split index (git's core.splitIndex, Documentation/gitformat-index)
// keeps most entries in .git/sharedindex.<checksum>, written once, and
// .git/index holds only what changed since plus a "link" extension naming
// the shared file: two bitmaps of shared entries, deleted and replaced.
// A write then costs what changed, not the number of files: at 10,000
// files the whole index is ~700 KB to hash and write on every commit.
//
// memfsd reads split indexes (its own and git's) and writes one once the
// index holds splitMinEntries entries, unless core.splitIndex is false. It
// starts a new shared index when the changes reach splitMaxPercent of it,
// as git does (splitIndex.maxPercentChange). The git CLI reads and keeps
// split indexes whatever its config; tools built on libgit2 or go-git do
// not understand them, which is why small repositories keep a whole index.

// splitMinEntries: below this many entries the index is written whole.
var splitMinEntries = 4096

const (
	splitMaxPercent = 20
	// sharedIndexExpiry: a shared index memfsd no longer links to is
	// removed once this old (git's own default is two weeks; a temporary
	// index of a person's git commit may still link to it for a while).
	sharedIndexExpiry = 24 * time.Hour
	sharedIndexPrefix = "sharedindex."
)

// sharedIndex is a parsed .git/sharedindex.<name> file. It never changes:
// its name is its checksum.
type sharedIndex struct {
	name    [20]byte
	entries []rawEntry
	size    int64 // of its file
}

// indexLink is a split index's "link" extension, its bitmaps still encoded.
type indexLink struct {
	base              [20]byte
	deleted, replaced []byte // EWAH bitmaps; both empty when absent
}

func parseIndexLink(d []byte) (*indexLink, error) {
	if len(d) < 20 {
		return nil, fmt.Errorf("read index: %w: short link extension", errIndexFormat)
	}
	l := &indexLink{}
	copy(l.base[:], d)
	d = d[20:]
	if len(d) == 0 {
		return l, nil
	}
	n, err := ewahLen(d)
	if err != nil {
		return nil, err
	}
	l.deleted, d = d[:n], d[n:]
	if n, err = ewahLen(d); err != nil {
		return nil, err
	}
	if n != len(d) {
		return nil, fmt.Errorf("read index: %w: garbage after the link extension", errIndexFormat)
	}
	l.replaced = d
	return l, nil
}

// ewahLen is the length of the EWAH bitmap at the start of d.
func ewahLen(d []byte) (int, error) {
	if len(d) < 12 {
		return 0, fmt.Errorf("read index: %w: short bitmap", errIndexFormat)
	}
	words := int(binary.BigEndian.Uint32(d[4:8]))
	if words > (len(d)-12)/8 {
		return 0, fmt.Errorf("read index: %w: truncated bitmap", errIndexFormat)
	}
	return 12 + words*8, nil
}

// ewahBits lists the set bits of an EWAH bitmap (git's ewah/ewah_io.c
// layout: bit count, word count, 64-bit words, last marker's position),
// each below limit.
func ewahBits(d []byte, limit int) ([]int, error) {
	if len(d) == 0 {
		return nil, nil
	}
	bad := fmt.Errorf("read index: %w: a link bitmap names an entry the shared index lacks", errIndexFormat)
	words := int(binary.BigEndian.Uint32(d[4:8]))
	word := func(i int) uint64 { return binary.BigEndian.Uint64(d[8+i*8:]) }
	var bits []int
	pos := 0
	for p := 0; p < words; {
		w := word(p)
		p++
		run := int((w >> 1) & 0xffffffff)
		if run > limit/64+1 {
			return nil, bad
		}
		if w&1 != 0 {
			for k := 0; k < run*64; k++ {
				bits = append(bits, pos)
				pos++
			}
		} else {
			pos += run * 64
		}
		for k := 0; k < int(w>>33) && p < words; k++ {
			lw := word(p)
			p++
			for c := 0; c < 64; c++ {
				if lw>>c&1 != 0 {
					bits = append(bits, pos)
				}
				pos++
			}
		}
		if len(bits) > 0 && bits[len(bits)-1] >= limit {
			return nil, bad
		}
	}
	return bits, nil
}

// ewahBitmap encodes the ascending bit positions as an EWAH bitmap, as
// git's ewah_serialize_strbuf writes it.
func ewahBitmap(bits []int) []byte {
	var buf []uint64
	rlw, size := 0, 0
	if len(bits) == 0 {
		buf = []uint64{0}
	} else {
		size = bits[len(bits)-1] + 1
		lits := make([]uint64, (size+63)/64)
		for _, b := range bits {
			lits[b/64] |= 1 << (b % 64)
		}
		for i := 0; i < len(lits); {
			zeros := 0
			for i < len(lits) && lits[i] == 0 {
				zeros++
				i++
			}
			start := i
			for i < len(lits) && lits[i] != 0 {
				i++
			}
			rlw = len(buf)
			buf = append(buf, uint64(zeros)<<1|uint64(i-start)<<33)
			buf = append(buf, lits[start:i]...)
		}
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(size))
	out = binary.BigEndian.AppendUint32(out, uint32(len(buf)))
	for _, w := range buf {
		out = binary.BigEndian.AppendUint64(out, w)
	}
	return binary.BigEndian.AppendUint32(out, uint32(rlw))
}

// mergeSplit is git's merge_base_index: the shared entries, the replaced
// ones taken from main (nameless, in bitmap order), the deleted ones
// dropped, and main's other entries added in order.
func mergeSplit(shared []rawEntry, main []rawEntry, l *indexLink) ([]rawEntry, error) {
	deleted, err := ewahBits(l.deleted, len(shared))
	if err != nil {
		return nil, err
	}
	replaced, err := ewahBits(l.replaced, len(shared))
	if err != nil {
		return nil, err
	}
	out := slices.Clone(shared)
	for i, b := range replaced {
		if i >= len(main) || main[i].path != "" {
			return nil, fmt.Errorf("read index: %w: the link replaces %d entries, the index holds fewer nameless ones", errIndexFormat, len(replaced))
		}
		out[b] = rawEntry{path: shared[b].path, stage: main[i].stage, data: entryWithName(main[i].data, shared[b].path)}
	}
	gone := make([]bool, len(shared))
	for _, b := range deleted {
		gone[b] = true
	}
	kept := out[:0]
	for i, e := range out {
		if !gone[i] {
			kept = append(kept, e)
		}
	}
	added := main[len(replaced):]
	for _, e := range added {
		if e.path == "" {
			return nil, fmt.Errorf("read index: %w: a nameless entry that replaces nothing", errIndexFormat)
		}
	}
	if len(added) == 0 {
		return kept, nil
	}
	// Both sorted: merge; an added entry wins over a kept one of its name
	// and stage (git's add_index_entry with OK_TO_ADD).
	merged := make([]rawEntry, 0, len(kept)+len(added))
	i, j := 0, 0
	for i < len(kept) || j < len(added) {
		switch {
		case j == len(added):
			merged = append(merged, kept[i])
			i++
		case i == len(kept):
			merged = append(merged, added[j])
			j++
		default:
			switch c := entryCompare(kept[i], added[j]); {
			case c < 0:
				merged = append(merged, kept[i])
				i++
			case c > 0:
				merged = append(merged, added[j])
				j++
			default:
				merged = append(merged, added[j])
				i++
				j++
			}
		}
	}
	return merged, nil
}

// entryCompare orders entries as the index does: by path, then stage.
func entryCompare(a, b rawEntry) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	return a.stage - b.stage
}

// entryFixed is the length of an on-disk entry before its name.
func entryFixed(data []byte) int {
	if binary.BigEndian.Uint16(data[60:62])&flagExtended != 0 {
		return indexEntryFixed + 2
	}
	return indexEntryFixed
}

// entryWithName is the on-disk entry data with its name set to name.
func entryWithName(data []byte, name string) []byte {
	fixed := entryFixed(data)
	d := make([]byte, (fixed+len(name)+8)&^7)
	copy(d, data[:fixed])
	n := min(len(name), flagNameMask)
	flags := binary.BigEndian.Uint16(d[60:62])&^flagNameMask | uint16(n)
	binary.BigEndian.PutUint16(d[60:62], flags)
	copy(d[fixed:], name)
	return d
}

// encodeSplit writes ix as a split index over base, and says how many
// entries differ from it.
func (ix *rawIndex) encodeSplit(base *sharedIndex) ([]byte, int) {
	var deleted, replaced []int
	var repl, added []rawEntry
	shared := base.entries
	i, j := 0, 0
	for i < len(shared) || j < len(ix.entries) {
		c := 0
		switch {
		case j == len(ix.entries):
			c = -1
		case i == len(shared):
			c = 1
		default:
			c = entryCompare(shared[i], ix.entries[j])
		}
		switch {
		case c < 0:
			deleted = append(deleted, i)
			i++
		case c > 0:
			added = append(added, ix.entries[j])
			j++
		default:
			a, b := shared[i].data, ix.entries[j].data
			if !(len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])) && !bytes.Equal(a, b) {
				replaced = append(replaced, i)
				repl = append(repl, rawEntry{stage: ix.entries[j].stage, data: entryWithName(b, "")})
			}
			i++
			j++
		}
	}
	del, rep := ewahBitmap(deleted), ewahBitmap(replaced)
	version := ix.version
	for _, e := range repl {
		version = versionFor(version, e)
	}
	for _, e := range added {
		version = versionFor(version, e)
	}
	buf := append([]byte("DIRC"), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[4:], version)
	binary.BigEndian.PutUint32(buf[8:], uint32(len(repl)+len(added)))
	for _, e := range repl {
		buf = append(buf, e.data...)
	}
	for _, e := range added {
		buf = append(buf, e.data...)
	}
	buf = append(buf, "link"...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(20+len(del)+len(rep)))
	buf = append(buf, base.name[:]...)
	buf = append(buf, del...)
	buf = append(buf, rep...)
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...), len(deleted) + len(replaced) + len(added)
}

// encodeIndex serialises ix for .git/index: whole while it is small (or
// core.splitIndex is false), else split over its shared index, a new one
// written first when the changes have grown past splitMaxPercent of it.
func (r *Repo) encodeIndex(ix *rawIndex) ([]byte, error) {
	if len(ix.entries) < splitMinEntries || !r.splitIndexAllowed() {
		ix.base = nil
		return ix.encode(), nil
	}
	if ix.base != nil && r.sharedUsable(ix.base) {
		data, changed := ix.encodeSplit(ix.base)
		if changed*100 <= len(ix.base.entries)*splitMaxPercent {
			return data, nil
		}
	}
	whole := ix.encode()
	base := &sharedIndex{entries: slices.Clone(ix.entries), size: int64(len(whole))}
	copy(base.name[:], whole[len(whole)-20:])
	path := filepath.Join(r.GitDir, sharedIndexPrefix+hex.EncodeToString(base.name[:]))
	if fi, err := os.Stat(path); err != nil || fi.Size() != base.size {
		// Durable before any index that links to it is renamed in (not
		// every index write is followed by a syncfs). Rare: a new shared
		// index starts past 20 % of changes.
		if err := atomicfile.Write(path, whole, 0o644, r.objs.sync); err != nil {
			return nil, fmt.Errorf("write shared index: %w", err)
		}
		if r.objs.sync {
			if err := syncDir(r.GitDir); err != nil {
				return nil, fmt.Errorf("write shared index: %w", err)
			}
		}
	} else {
		_ = os.Chtimes(path, time.Now(), time.Now()) // in use again
	}
	ix.base, ix.newShared = base, true
	r.ixc.keepShared(base)
	data, _ := ix.encodeSplit(base)
	return data, nil
}

// sharedUsable reports whether base's file is still there, whole, to link
// to (a person or a tool may have removed it; git itself removes shared
// indexes no index was written over for two weeks), and keeps it fresh as
// git does on every read and write (freshen_shared_index), at most hourly:
// git and memfsd remove only the shared indexes that have gone stale.
func (r *Repo) sharedUsable(base *sharedIndex) bool {
	path := filepath.Join(r.GitDir, sharedIndexPrefix+hex.EncodeToString(base.name[:]))
	fi, err := os.Stat(path)
	if err != nil || base.size != 0 && fi.Size() != base.size {
		return false
	}
	if time.Since(fi.ModTime()) > sharedIndexFreshen {
		_ = os.Chtimes(path, time.Now(), time.Now())
	}
	return true
}

// sharedIndexFreshen is how stale the linked shared index's time may get
// before memfsd touches it (far below sharedIndexExpiry).
const sharedIndexFreshen = time.Hour

// indexWritten records that data, the encoding of ix, is now .git/index,
// and once an index linking to a new shared index is in place, removes
// the shared indexes that have gone stale (never before: the index being
// replaced links to one).
func (r *Repo) indexWritten(ix *rawIndex, data []byte) {
	r.ixc.wrote(ix, data)
	if ix.newShared && ix.base != nil {
		removeOldSharedIndexes(r.GitDir, sharedIndexPrefix+hex.EncodeToString(ix.base.name[:]))
	}
}

// splitIndexAllowed is false when the repository's config says
// core.splitIndex = false. Read once per Repo.
func (r *Repo) splitIndexAllowed() bool {
	r.splitOnce.Do(func() {
		r.splitOff = false
		cfg, err := r.st.Config()
		if err != nil {
			return
		}
		v := strings.ToLower(cfg.Raw.Section("core").Option("splitIndex"))
		r.splitOff = v == "false" || v == "no" || v == "off" || v == "0"
	})
	return !r.splitOff
}

// removeOldSharedIndexes removes the shared indexes other than keep that
// are older than sharedIndexExpiry, as git's clean_shared_index_files.
func removeOldSharedIndexes(gitDir, keep string) {
	entries, err := os.ReadDir(gitDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), sharedIndexPrefix) || e.Name() == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > sharedIndexExpiry {
			os.Remove(filepath.Join(gitDir, e.Name()))
		}
	}
}

// errSharedIndexLost: .git/index links to a shared index that is gone or
// damaged; git cannot read that index either.
var errSharedIndexLost = errors.New("the shared index it links to is gone or damaged")

// indexFromHead is the index rebuilt from HEAD's tree, every entry without
// stat data (so each file is hashed again once, as after `git read-tree
// HEAD`): what memfsd falls back to when .git/index cannot be read because
// its shared index is lost, or it cannot be parsed at all. A person's
// staged changes in it are lost with it; the work tree is untouched.
func (r *Repo) indexFromHead() (*rawIndex, error) {
	ix := &rawIndex{version: 2, dirty: true}
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return ix, err
	}
	files := map[string]object.TreeEntry{}
	if err := r.flattenCommit(head, files); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		ix.set(p, files[p].Hash, files[p].Mode, nil)
	}
	return ix, nil
}

// readSharedIndex reads and checks .git/sharedindex.<name>.
func readSharedIndex(gitDir string, name [20]byte) (*sharedIndex, error) {
	path := filepath.Join(gitDir, sharedIndexPrefix+hex.EncodeToString(name[:]))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read index: %w: %w", errSharedIndexLost, err)
	}
	if len(data) < indexTrailerSize || !bytes.Equal(data[len(data)-indexTrailerSize:], name[:]) {
		return nil, fmt.Errorf("read index: %w: %s does not match its name", errSharedIndexLost, filepath.Base(path))
	}
	ix, link, err := parseRawIndex(data)
	if err != nil {
		return nil, err
	}
	if link != nil {
		return nil, fmt.Errorf("read index: %w: a shared index links to another", errIndexFormat)
	}
	return &sharedIndex{name: name, entries: ix.entries, size: int64(len(data))}, nil
}
