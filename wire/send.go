package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/gitstore"
)

// Session opens a receive-pack (or upload-pack) session with the remote at
// url.
func Session(url string, auth transport.AuthMethod, receive bool) (transport.Session, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("remote url: %w", err)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, err
	}
	if receive {
		return cl.NewReceivePackSession(ep, auth)
	}
	return cl.NewUploadPackSession(ep, auth)
}

// DemuxSideband is rd with the side-band the capabilities l asked for
// taken off.
func DemuxSideband(l *capability.List, rd io.Reader) io.Reader {
	switch {
	case l.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, rd)
	case l.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, rd)
	}
	return rd
}

// SendUpdate sends one ref update, old → new, with pack, asking for
// report-status: a refused pack or update is a *RefusedError.
func SendUpdate(ctx context.Context, sess transport.ReceivePackSession, caps *capability.List, ref string, old, new plumbing.Hash, pack []byte) error {
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	// Without report-status a refused update comes back as success.
	if err := req.Capabilities.Set(capability.ReportStatus); err != nil {
		return err
	}
	req.Commands = []*packp.Command{{Name: plumbing.ReferenceName(ref), Old: old, New: new}}
	req.Packfile = io.NopCloser(bytes.NewReader(pack))
	rs, err := sess.ReceivePack(ctx, req)
	if rs != nil {
		if rerr := rs.Error(); rerr != nil {
			return &RefusedError{err: rerr}
		}
	}
	return err
}

// RefusedError is a push the server answered with a report refusing the
// pack or the ref update (report-status: "unpack <reason>" or "ng <ref>
// <reason>"). The text is go-git's, unchanged.
type RefusedError struct{ err error }

func (e *RefusedError) Error() string { return e.err.Error() }
func (e *RefusedError) Unwrap() error { return e.err }

// ShortcutRefused reports an answer that says the server does not take a
// receive-pack POST without the advertisement first (a 4xx other than
// auth and not-found, or a reply that is not a report).
func ShortcutRefused(err error) bool {
	if err == nil {
		return false
	}
	var ue *plumbing.UnexpectedError
	var he *githttp.Err
	if errors.As(err, &ue) {
		errors.As(ue.Err, &he)
	} else {
		errors.As(err, &he)
	}
	if he != nil && he.Response != nil {
		c := he.Response.StatusCode
		return c >= 400 && c < 500 && c != 401 && c != 403 && c != 404 && c != 429
	}
	return false
}

// IsRemoteRejection matches go-git's push rejections, which are text only.
func IsRemoteRejection(err error) bool {
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "failed to update ref", "fetch first", "cannot lock ref", "stale info"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// BuildPack packs the commits and the trees and blobs each introduces over
// its parents; it returns the pack and its number of objects.
func BuildPack(objs *gitstore.Objects, commits []plumbing.Hash) ([]byte, int, error) {
	seen := map[plumbing.Hash]bool{}
	for _, h := range commits {
		c, err := objs.Commit(h)
		if err != nil {
			return nil, 0, err
		}
		seen[h] = true
		var base plumbing.Hash
		if len(c.ParentHashes) > 0 {
			p, err := objs.Commit(c.ParentHashes[0])
			if err != nil {
				return nil, 0, err
			}
			base = p.TreeHash
		}
		if err := objs.NewObjects(base, c.TreeHash, seen); err != nil {
			return nil, 0, err
		}
	}
	hashes := make([]plumbing.Hash, 0, len(seen))
	for h := range seen {
		hashes = append(hashes, h)
	}
	var buf bytes.Buffer
	err := objs.RetryStale(func() error {
		buf.Reset()
		_, err := packfile.NewEncoder(&buf, objs.Reader, false).Encode(hashes, 0)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("build pack: %w", err)
	}
	return buf.Bytes(), len(hashes), nil
}

// BranchTip reads ref's tip from the session's ref advertisement, with
// the capabilities advertised: zero when the remote has no such ref or is
// empty (then with no capabilities).
func BranchTip(ctx context.Context, sess transport.Session, ref string) (plumbing.Hash, *capability.List, error) {
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil, err
	}
	if ar == nil {
		return plumbing.ZeroHash, capability.NewList(), nil
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if r, ok := refs[plumbing.ReferenceName(ref)]; ok {
		return r.Hash(), ar.Capabilities, nil
	}
	return plumbing.ZeroHash, ar.Capabilities, nil
}
