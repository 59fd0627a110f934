package gitmem

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
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

// encodeIndex serialises ix for .git/index: whole while it is small (or
// core.splitIndex is false), else split over its shared index, a new one
// written first when the changes have grown past splitMaxPercent of it.
func (r *Repo) encodeIndex(ix *index.Index) ([]byte, error) {
	if len(ix.Entries) < splitMinEntries || !r.splitIndexAllowed() {
		ix.Base = nil
		return ix.Encode(), nil
	}
	if ix.Base != nil && r.sharedUsable(ix.Base) {
		data, changed := ix.EncodeSplit(ix.Base)
		if changed*100 <= len(ix.Base.Entries)*splitMaxPercent {
			return data, nil
		}
	}
	whole := ix.Encode()
	base := &index.Shared{Entries: slices.Clone(ix.Entries), Size: int64(len(whole))}
	copy(base.Name[:], whole[len(whole)-20:])
	path := filepath.Join(r.GitDir, sharedIndexPrefix+hex.EncodeToString(base.Name[:]))
	if fi, err := os.Stat(path); err != nil || fi.Size() != base.Size {
		// Durable before any index that links to it is renamed in (not
		// every index write is followed by a syncfs). Rare: a new shared
		// index starts past 20 % of changes.
		if err := atomicfile.Write(path, whole, 0o644, r.objs.Sync); err != nil {
			return nil, fmt.Errorf("write shared index: %w", err)
		}
		if r.objs.Sync {
			if err := gitstore.SyncDir(r.GitDir); err != nil {
				return nil, fmt.Errorf("write shared index: %w", err)
			}
		}
	} else {
		_ = os.Chtimes(path, time.Now(), time.Now()) // in use again
	}
	ix.Base, ix.NewShared = base, true
	r.ixc.keepShared(base)
	data, _ := ix.EncodeSplit(base)
	return data, nil
}

// sharedUsable reports whether base's file is still there, whole, to link
// to (a person or a tool may have removed it; git itself removes shared
// indexes no index was written over for two weeks), and keeps it fresh as
// git does on every read and write (freshen_shared_index), at most hourly:
// git and memfsd remove only the shared indexes that have gone stale.
func (r *Repo) sharedUsable(base *index.Shared) bool {
	path := filepath.Join(r.GitDir, sharedIndexPrefix+hex.EncodeToString(base.Name[:]))
	fi, err := os.Stat(path)
	if err != nil || base.Size != 0 && fi.Size() != base.Size {
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
func (r *Repo) indexWritten(ix *index.Index, data []byte) {
	r.ixc.wrote(ix, data)
	if ix.NewShared && ix.Base != nil {
		removeOldSharedIndexes(r.GitDir, sharedIndexPrefix+hex.EncodeToString(ix.Base.Name[:]))
	}
}

// splitIndexAllowed is false when the repository's config says
// core.splitIndex = false. Read once per Repo.
func (r *Repo) splitIndexAllowed() bool {
	r.splitOnce.Do(func() {
		r.splitOff = false
		cfg, err := r.readConfig()
		if err != nil {
			return
		}
		v := strings.ToLower(cfg.Section("core").Option("splitIndex"))
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
func (r *Repo) indexFromHead() (*index.Index, error) {
	ix := &index.Index{Version: 2, Dirty: true}
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
		ix.Set(p, files[p].Hash, files[p].Mode, nil)
	}
	return ix, nil
}

// readSharedIndex reads and checks .git/sharedindex.<name>.
func readSharedIndex(gitDir string, name [20]byte) (*index.Shared, error) {
	path := filepath.Join(gitDir, sharedIndexPrefix+hex.EncodeToString(name[:]))
	data, err := gitstore.ReadGitFile(gitDir, filepath.Base(path), gitstore.MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("read index: %w: %w", errSharedIndexLost, err)
	}
	if len(data) < index.TrailerSize || !bytes.Equal(data[len(data)-index.TrailerSize:], name[:]) {
		return nil, fmt.Errorf("read index: %w: %s does not match its name", errSharedIndexLost, filepath.Base(path))
	}
	ix, link, err := index.Parse(data)
	if err != nil {
		return nil, err
	}
	if link != nil {
		return nil, fmt.Errorf("read index: %w: a shared index links to another", index.ErrFormat)
	}
	return &index.Shared{Name: name, Entries: ix.Entries, Size: int64(len(data))}, nil
}

// readConfig reads .git/config through gitstore's reader (not go-git's
// storage, which would open a FIFO there and wait forever).
func (r *Repo) readConfig() (*gitconfig.Config, error) {
	data, err := gitstore.ReadGitFile(r.GitDir, "config", gitstore.MaxConfigSize)
	if err != nil {
		return nil, err
	}
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return nil, fmt.Errorf("read .git/config: %w", err)
	}
	return cfg, nil
}
