package gitmem

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
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/gitfmt/pack"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/atomicfile"
)

// A fetch downloads its pack without the repo lock: the response is
// streamed into a temporary file under objects/pack, checked and indexed
// there, and only the two renames that publish it (and a re-read of the
// pack list) happen under the lock.

// fetchTempPrefix names a fetch's temporary files in objects/pack. Neither
// name ends in .pack or .idx, so neither git nor go-git takes them for a
// pack while they are being written.
const fetchTempPrefix = "tmp_fetch_"

// staleFetchAge is the age past which Open removes a fetch's temporary
// file: a crash left it (a live fetch writes it within one sync's deadline).
const staleFetchAge = time.Hour

// fetchedPack is a downloaded, verified and indexed pack, not yet part of
// the object store.
type fetchedPack struct {
	pack, idx string // temporary files; "" once renamed into place
	sum       plumbing.Hash
}

// remove deletes what is left of the temporary files.
func (p *fetchedPack) remove() {
	for _, name := range []string{p.pack, p.idx} {
		if name != "" {
			_ = os.Remove(name)
		}
	}
	p.pack, p.idx = "", ""
}

// downloadPack asks upload-pack for tip and writes the pack it sends into a
// temporary file, then builds its index beside it. It touches neither the
// object store nor go-git's storage, so it runs without mu. The pack is
// never thin (go-git's transports filter thin-pack out of what they ask
// for), so every delta base is inside the pack itself.
func (r *Repo) downloadPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, tip plumbing.Hash, haves []plumbing.Hash) (_ *fetchedPack, err error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = []plumbing.Hash{tip}
	req.Haves = haves
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Close()

	pk, err := stagePack(ctx, filepath.Join(r.GitDir, "objects", "pack"), demuxSideband(req.Capabilities, resp), r.objs.Sync)
	if err != nil {
		return nil, fmt.Errorf("download pack: %w", err)
	}
	return pk, nil
}

// stagePack writes the pack read from src into a temporary file in the
// pack folder dir, indexed as it arrives (pack.Index), and its index into
// another; with sync, both are fsynced before a ref may point into them
// (git's core.fsync default does the same for packs). Neither is a pack
// to git or go-git until publish renames them. Used by a fetch and by a
// push to the embedded remote.
func stagePack(ctx context.Context, dir string, src io.Reader, sync bool) (_ *fetchedPack, err error) {
	pk := &fetchedPack{}
	defer func() {
		if err != nil {
			pk.remove()
		}
	}()
	f, err := os.CreateTemp(dir, fetchTempPrefix+"*")
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
	xf, err := os.CreateTemp(dir, fetchTempPrefix+"idx_*")
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

// base is the pack's path in the pack folder dir without its extension.
func (p *fetchedPack) base(dir string) string {
	return filepath.Join(dir, "pack-"+p.sum.String())
}

// publish renames a staged pack into the pack folder dir under its
// checksum name: the .pack first, then the .idx that makes git see it, as
// git does. The other order is a loss: a `git gc` that lists the folder
// between the two renames finds an .idx with no .pack, deletes it as
// garbage, and the .pack then lands with no index, its objects invisible
// to git (TestEmbedded_PushBesideGitGC). With sync, the folder is fsynced.
func (p *fetchedPack) publish(dir string, sync bool) error {
	base := p.base(dir)
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
		return gitstore.SyncDir(dir)
	}
	return nil
}

// installPack publishes a downloaded pack under its checksum name (pack
// first, then the index that makes git see it), re-reads the pack list and
// checks that tip arrived. With mu held.
func (r *Repo) installPack(pk *fetchedPack, tip plumbing.Hash) error {
	if err := pk.publish(filepath.Join(r.GitDir, "objects", "pack"), r.objs.Sync); err != nil {
		return err
	}
	r.st.ObjectStorage.Reindex()
	if !r.objs.Has(tip) {
		return fmt.Errorf("the remote's pack lacks its tip %s", gitstore.Short(tip))
	}
	return nil
}

// repackTempPrefix names a repack's temporary pack (git's own name for
// one: a git that crashed leaves the same, and it is as dead after an hour).
const repackTempPrefix = "tmp_pack_"

// clearFetchLeftovers removes the temporary files of a fetch or a repack
// that a crash interrupted, and those of an interrupted atomic write in
// .git itself (a shared index is ~700 KB at 10,000 files).
func clearFetchLeftovers(gitDir string, maxAge time.Duration) {
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
		if !strings.HasPrefix(e.Name(), fetchTempPrefix) && !strings.HasPrefix(e.Name(), repackTempPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > maxAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
