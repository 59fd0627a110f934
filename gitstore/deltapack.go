package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitfmt/pack"
)

// ctxObjects is the repack's object storage, whose reads fail once ctx is
// done: the encoder then stops loading objects for its delta search. It
// keeps go-git's DeltaObject, through which the encoder reuses the deltas
// packs already hold. A packed object over the cap, or a delta on one, is
// refused before go-git reads it (packcap.go): the packs merged may be the
// agent's own.
type ctxObjects struct {
	*filesystem.Storage
	ctx    context.Context
	gitDir string
	packs  *packChecks
}

func (c ctxObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.packs.refused(c.gitDir, h, nil); err != nil {
		return nil, err
	}
	return c.Storage.EncodedObject(t, h)
}

func (c ctxObjects) DeltaObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.packs.refused(c.gitDir, h, nil); err != nil {
		return nil, err
	}
	return c.Storage.DeltaObject(t, h)
}

var _ storer.DeltaObjectStorer = ctxObjects{}

// WriteDeltaPack packs objects (loose or packed) with deltas into a new
// pack and index, synced (with sync) and renamed into place, and returns
// its name. It reads through a storage of its own, so it needs no lock:
// objects never change once written. Cancelling ctx stops it (nothing is
// removed before the new pack is in place, so a stop loses nothing); its
// goroutines are bg's, which Stop waits for.
func WriteDeltaPack(ctx context.Context, bg *Background, gitDir, objDir string, objects []plumbing.Hash, sync bool) (string, error) {
	packDir := filepath.Join(objDir, "pack")
	pf, err := os.CreateTemp(packDir, RepackTempPrefix)
	if err != nil {
		return "", err
	}
	defer pf.Close()
	pr, pw := io.Pipe()
	st := filesystem.NewStorage(NewGitFS(gitDir), cache.NewObjectLRU(32<<20))
	encCtx, encDone, err := bg.Start(ctx)
	if err != nil {
		st.Close()
		os.Remove(pf.Name())
		return "", err
	}
	go func() { // owns st; ends when the pack is written or the pipe is closed
		defer encDone() // Close waits for this goroutine, st closed
		defer st.Close()
		_, err := packfile.NewEncoder(pw, ctxObjects{st, encCtx, gitDir, &packChecks{}}, false).Encode(objects, 10)
		pw.CloseWithError(err) // an error reaches the indexer through the pipe
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	type indexed struct {
		idx *idxfile.MemoryIndex
		sum plumbing.Hash
		err error
	}
	got := make(chan indexed, 1)
	go func() {
		idx, sum, err := pack.IndexAt(ctx, pr, pf, true)
		got <- indexed{idx, sum, err}
	}()
	res := <-got
	idx, sum, err := res.idx, res.sum, res.err
	stop()
	// Not waiting for the encoder here: on a cancel it may still be in
	// go-git's delta search, which cannot be stopped; its next object read
	// (ctxObjects) or write (the closed pipe) fails and it ends by itself.
	// bg.Stop (the repository's Close) waits for it.
	pr.CloseWithError(errors.New("repack: the index stopped reading"))
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		os.Remove(pf.Name())
		return "", err
	}
	if n, _ := idx.Count(); n != int64(len(objects)) {
		os.Remove(pf.Name())
		return "", fmt.Errorf("the new pack holds %d objects, not %d", n, len(objects))
	}
	for _, h := range objects {
		if ok, _ := idx.Contains(h); !ok {
			os.Remove(pf.Name())
			return "", fmt.Errorf("the new pack lacks object %s", h)
		}
	}
	var buf bytes.Buffer
	if _, err := idxfile.NewEncoder(&buf).Encode(idx); err != nil {
		os.Remove(pf.Name())
		return "", err
	}
	name := "pack-" + sum.String()
	final := filepath.Join(packDir, name)
	if err := PublishPack(pf, buf.Bytes(), final, sync); err != nil {
		return "", err
	}
	return name, nil
}
