package gitstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/memfsd/memfsd/gitfmt/pack"
	"github.com/memfsd/memfsd/internal/atomicfile"
)

// A fetched or pushed pack is staged before anything points into it: the
// pack is streamed into a temporary file under objects/pack, checked and
// indexed there, and only the two renames that publish it happen under
// the caller's lock.

// FetchTempPrefix names a fetch's temporary files in objects/pack. Neither
// name ends in .pack or .idx, so neither git nor go-git takes them for a
// pack while they are being written.
const FetchTempPrefix = "tmp_fetch_"

// StaleFetchAge is the age past which Open removes a fetch's temporary
// file: a crash left it (a live fetch writes it within one sync's deadline).
const StaleFetchAge = time.Hour

// StagedPack is a downloaded (or pushed), verified and indexed pack, not
// yet part of the object store.
type StagedPack struct {
	pack, idx string // temporary files; "" once renamed into place
	sum       plumbing.Hash
}

// Remove deletes what is left of the temporary files.
func (p *StagedPack) Remove() {
	for _, name := range []string{p.pack, p.idx} {
		if name != "" {
			_ = os.Remove(name)
		}
	}
	p.pack, p.idx = "", ""
}

// StagePack writes the pack read from src into a temporary file in the
// pack folder dir, indexed as it arrives (pack.Index), and its index into
// another; with sync, both are fsynced before a ref may point into them
// (git's core.fsync default does the same for packs). Neither is a pack
// to git or go-git until Publish renames them. Used by a fetch and by a
// push to the embedded remote.
func StagePack(ctx context.Context, dir string, src io.Reader, sync bool) (_ *StagedPack, err error) {
	pk := &StagedPack{}
	defer func() {
		if err != nil {
			pk.Remove()
		}
	}()
	f, err := os.CreateTemp(dir, FetchTempPrefix+"*")
	if err != nil {
		return nil, err
	}
	pk.pack = f.Name()
	defer f.Close()
	idx, sum, err := pack.Index(ctx, src, f)
	if err != nil {
		return nil, err
	}
	pk.sum = sum
	xf, err := os.CreateTemp(dir, FetchTempPrefix+"idx_*")
	if err != nil {
		return nil, fmt.Errorf("index pack: %w", err)
	}
	pk.idx = xf.Name()
	_, err = idxfile.NewEncoder(xf).Encode(idx)
	for _, file := range []*os.File{f, xf} {
		if err == nil && sync {
			err = file.Sync()
		}
		if err == nil {
			err = file.Chmod(0o444) // as git leaves packs
		}
	}
	if cerr := xf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("index pack: %w", err)
	}
	return pk, nil
}

// Base is the pack's path in the pack folder dir without its extension.
func (p *StagedPack) Base(dir string) string {
	return filepath.Join(dir, "pack-"+p.sum.String())
}

// Publish renames a staged pack into the pack folder dir under its
// checksum name: the .pack first, then the .idx that makes git see it, as
// git does. The other order is a loss: a `git gc` that lists the folder
// between the two renames finds an .idx with no .pack, deletes it as
// garbage, and the .pack then lands with no index, its objects invisible
// to git (TestEmbedded_PushBesideGitGC). With sync, the folder is fsynced.
func (p *StagedPack) Publish(dir string, sync bool) error {
	base := p.Base(dir)
	for _, mv := range []struct {
		from *string
		to   string
	}{{&p.pack, base + ".pack"}, {&p.idx, base + ".idx"}} {
		if _, err := os.Lstat(mv.to); err == nil {
			continue // packs are named by content: this one is in already
		}
		if err := os.Rename(*mv.from, mv.to); err != nil {
			return err
		}
		*mv.from = ""
	}
	if sync {
		return SyncDir(dir)
	}
	return nil
}

// RepackTempPrefix names a repack's temporary pack (git's own name for
// one: a git that crashed leaves the same, and it is as dead after an hour).
const RepackTempPrefix = "tmp_pack_"

// ClearPackLeftovers removes the temporary files of a fetch or a repack
// that a crash interrupted, and those of an interrupted atomic write in
// .git itself (a shared index is ~700 KB at 10,000 files).
func ClearPackLeftovers(gitDir string, maxAge time.Duration) {
	if entries, err := os.ReadDir(gitDir); err == nil {
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), atomicfile.Prefix) {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > maxAge {
				_ = os.Remove(filepath.Join(gitDir, e.Name()))
			}
		}
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), FetchTempPrefix) && !strings.HasPrefix(e.Name(), RepackTempPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > maxAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
