// Package codec is git's object encodings that memfsd writes itself: an
// object's id (the SHA-1 of its header and body), a tree's body and a
// commit's body, byte for byte as git writes them. Reading objects is
// go-git's (plumbing/object); storing them is package gitmem's.
package codec

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Hash is git's object id of data of type t.
func Hash(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	h.Write(t.Bytes())
	h.Write([]byte{' '})
	h.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	h.Write([]byte{0})
	h.Write(data)
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}

// EncodeTree serialises entries in git's order, where a folder sorts as
// "name/": "a.md" < "a/" < "a0".
func EncodeTree(entries map[string]object.TreeEntry) ([]byte, []object.TreeEntry) {
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b object.TreeEntry) int {
		return strings.Compare(treeSortKey(a), treeSortKey(b))
	})
	var buf bytes.Buffer
	for _, e := range list {
		buf.WriteString(strconv.FormatUint(uint64(e.Mode), 8))
		buf.WriteByte(' ')
		buf.WriteString(e.Name)
		buf.WriteByte(0)
		buf.Write(e.Hash[:])
	}
	return buf.Bytes(), list
}

// treeSortKey is the name a tree entry sorts by.
func treeSortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// EncodeCommit is a commit object's body.
func EncodeCommit(tree plumbing.Hash, parents []plumbing.Hash, author, committer object.Signature, message string) []byte {
	var b bytes.Buffer
	b.WriteString("tree " + tree.String() + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p.String() + "\n")
	}
	b.WriteString("author " + sigLine(author) + "\n")
	b.WriteString("committer " + sigLine(committer) + "\n\n")
	b.WriteString(strings.TrimRight(message, "\n") + "\n")
	return b.Bytes()
}

// sigLine is a signature as a commit's author and committer lines hold it.
func sigLine(s object.Signature) string {
	who, when := s, s.When
	_, offset := when.Zone()
	sign := '+'
	if offset < 0 {
		sign = '-'
		offset = -offset
	}
	tz := fmt.Sprintf("%c%02d%02d", sign, offset/3600, (offset%3600)/60)
	return SanitizeSig(who.Name) + " <" + SanitizeSig(who.Email) + "> " + strconv.FormatInt(when.Unix(), 10) + " " + tz
}

// SanitizeSig strips what would break a signature line (git does the same).
func SanitizeSig(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}
