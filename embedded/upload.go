package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/memfsd/memfsd/gitstore"
)

// embeddedLoader opens the embedded remote's bare repositories for go-git's
// in-process server through gitFS, as our own repositories are opened: a
// pack git is still writing (no index yet) is not listed.
type embeddedLoader struct{}

func (embeddedLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	if _, err := os.Stat(filepath.Join(ep.Path, "config")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return filesystem.NewStorage(gitstore.NewGitFS(ep.Path), cache.NewObjectLRUDefault()), nil
}

// embeddedUploadTries bounds how often one fetch from the embedded remote
// is read again after its packs changed under it; a pack still missing
// after that is a broken repository, reported as it is.
const embeddedUploadTries = 6

// rereadUploadPack serves a fetch from the embedded remote's bare
// repository, which other programs may repack while we read it: a git gc
// (receive-pack's auto gc after a git CLI peer's push, or an operator's)
// writes one new pack and deletes the old ones, and go-git's server, which
// lists the packs once, then fails "packfile not found" or "object not
// found" — at the walk or halfway through the pack it streams. So the pack
// is written to a temporary file first, and on that failure the whole
// upload is done again by a fresh session, which lists the packs anew.
type rereadUploadPack struct {
	transport.UploadPackSession // the first session: references, first try
	dir                         string
	fresh                       func() (transport.UploadPackSession, error)
}

// AdvertisedReferences lists the refs, read again while git's lock
// protocol shows a ref file empty (a git gc's pack-refs beside us).
func (s *rereadUploadPack) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *rereadUploadPack) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	var err error
	for try := 0; try < embeddedUploadTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(20<<try) * time.Millisecond):
			}
		}
		var refs *packp.AdvRefs
		if refs, err = s.UploadPackSession.AdvertisedReferencesContext(ctx); !errors.Is(err, dotgit.ErrEmptyRefFile) {
			return refs, err
		}
	}
	return nil, fmt.Errorf("read embedded remote %s: %w (a ref stayed empty; is a git gc looping on it?)", s.dir, err)
}

// transientUpload is an upload failure a git gc beside the read causes
// (packs replaced, a ref file caught empty): the upload is done again.
func transientUpload(err error) bool {
	return gitstore.StalePacks(err) || errors.Is(err, dotgit.ErrEmptyRefFile)
}

func (s *rereadUploadPack) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	haves := slices.Clone(req.Haves)
	var err error
	for try := 0; try < embeddedUploadTries; try++ {
		sess := s.UploadPackSession
		if try > 0 {
			wait := time.Duration(20<<try) * time.Millisecond // 40 ms … 640 ms, 1.2 s in all
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			if sess, err = s.fresh(); err != nil {
				return nil, err
			}
		}
		req.Haves = s.knownHaves(haves)
		var resp *packp.UploadPackResponse
		resp, err = spoolUpload(ctx, sess, s.dir, req)
		if try > 0 {
			_ = sess.Close()
		}
		if err == nil || !transientUpload(err) {
			return resp, err
		}
	}
	return nil, fmt.Errorf("read embedded remote %s: %w (its packs kept changing; is a git gc looping on it?)", s.dir, err)
}

// knownHaves drops the haves the repository does not hold: a real server
// ignores commits it does not know (they are just not common), but go-git's
// in-process one fails "object not found" on them, as when another writer
// pushed and our local tip is not on the remote.
func (s *rereadUploadPack) knownHaves(haves []plumbing.Hash) []plumbing.Hash {
	st := filesystem.NewStorage(gitstore.NewGitFS(s.dir), cache.NewObjectLRUDefault())
	defer st.Close()
	kept := make([]plumbing.Hash, 0, len(haves))
	for _, h := range haves {
		if st.HasEncodedObject(h) == nil {
			kept = append(kept, h)
		}
	}
	return kept
}

// spoolUpload runs one upload and reads its whole pack into a temporary
// file beside the repository (unlinked at once), so that a failure while
// go-git writes the pack is seen here, where the upload can be done again,
// not by the fetch that reads it.
func spoolUpload(ctx context.Context, sess transport.UploadPackSession, dir string, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	f, err := os.CreateTemp(dir, "memfsd-upload-*.pack")
	if err != nil {
		return nil, fmt.Errorf("spool embedded upload: %w", err)
	}
	_ = os.Remove(f.Name()) // the open file is all we need
	if _, err = io.Copy(f, resp); err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return packp.NewUploadPackResponseWithPackfile(req, f), nil
}
