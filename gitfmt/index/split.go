package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Shared is a parsed .git/sharedindex.<name> file. It never changes:
// its name is its checksum.
type Shared struct {
	Name    [20]byte
	Entries []Entry
	Size    int64 // of its file
}

// Link is a split index's "link" extension, its bitmaps still encoded.
type Link struct {
	Base              [20]byte
	deleted, replaced []byte // EWAH bitmaps; both empty when absent
}

func parseIndexLink(d []byte) (*Link, error) {
	if len(d) < 20 {
		return nil, fmt.Errorf("read index: %w: short link extension", ErrFormat)
	}
	l := &Link{}
	copy(l.Base[:], d)
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
		return nil, fmt.Errorf("read index: %w: garbage after the link extension", ErrFormat)
	}
	l.replaced = d
	return l, nil
}

// MergeSplit is git's merge_base_index: the shared entries, the replaced
// ones taken from main (nameless, in bitmap order), the deleted ones
// dropped, and main's other entries added in order.
func MergeSplit(shared []Entry, main []Entry, l *Link) ([]Entry, error) {
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
		if i >= len(main) || main[i].Path != "" {
			return nil, fmt.Errorf("read index: %w: the link replaces %d entries, the index holds fewer nameless ones", ErrFormat, len(replaced))
		}
		out[b] = Entry{Path: shared[b].Path, Stage: main[i].Stage, Data: entryWithName(main[i].Data, shared[b].Path)}
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
		if e.Path == "" {
			return nil, fmt.Errorf("read index: %w: a nameless entry that replaces nothing", ErrFormat)
		}
	}
	if len(added) == 0 {
		return kept, nil
	}
	// Both sorted: merge; an added entry wins over a kept one of its name
	// and stage (git's add_index_entry with OK_TO_ADD).
	merged := make([]Entry, 0, len(kept)+len(added))
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
func entryCompare(a, b Entry) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return a.Stage - b.Stage
}

// entryFixed is the length of an on-disk entry before its name.
func entryFixed(data []byte) int {
	if binary.BigEndian.Uint16(data[60:62])&flagExtended != 0 {
		return entryFixedLen + 2
	}
	return entryFixedLen
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

// EncodeSplit writes ix as a split index over base, and says how many
// entries differ from it.
func (ix *Index) EncodeSplit(base *Shared) ([]byte, int) {
	var deleted, replaced []int
	var repl, added []Entry
	shared := base.Entries
	i, j := 0, 0
	for i < len(shared) || j < len(ix.Entries) {
		c := 0
		switch {
		case j == len(ix.Entries):
			c = -1
		case i == len(shared):
			c = 1
		default:
			c = entryCompare(shared[i], ix.Entries[j])
		}
		switch {
		case c < 0:
			deleted = append(deleted, i)
			i++
		case c > 0:
			added = append(added, ix.Entries[j])
			j++
		default:
			a, b := shared[i].Data, ix.Entries[j].Data
			if !(len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])) && !bytes.Equal(a, b) {
				replaced = append(replaced, i)
				repl = append(repl, Entry{Stage: ix.Entries[j].Stage, Data: entryWithName(b, "")})
			}
			i++
			j++
		}
	}
	del, rep := ewahBitmap(deleted), ewahBitmap(replaced)
	version := ix.Version
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
		buf = append(buf, e.Data...)
	}
	for _, e := range added {
		buf = append(buf, e.Data...)
	}
	buf = append(buf, "link"...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(20+len(del)+len(rep)))
	buf = append(buf, base.Name[:]...)
	buf = append(buf, del...)
	buf = append(buf, rep...)
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...), len(deleted) + len(replaced) + len(added)
}
