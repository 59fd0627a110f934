package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/utils/ioutil"

	"github.com/memfsd/memfsd/gitstore"
)

// embeddedRefLockWait is how long a push to the embedded remote waits on a
// ref lock someone else holds (a git push, `git pack-refs --prune`, a gc
// on the same bare repository) before it refuses the update as "cannot
// lock ref", which memfsd's sync treats as a non-fast-forward: fetch and
// push again. git's own wait for packed-refs.lock is 1 s.
const embeddedRefLockWait = time.Second

// casReceivePack is a push to the embedded remote. go-git's server moves
// refs by rewriting the ref file in place, under no lock git knows of and
// with no check of the old value, and publishes a pack's .idx before its
// .pack. A git CLI on the same bare repository (a peer's push, `git
// pack-refs --prune`, a gc) then reads the ref file empty ("reference
// broken") or renames over it, or deletes the lone .idx as garbage, and an
// acknowledged push is lost (TestEmbedded_RefsBesideGitCLI,
// TestEmbedded_PushBesideGitGC). So the pack is stored as git's
// receive-pack stores it (storePack), and each ref is moved as git moves
// it: <ref>.lock taken with O_EXCL, the old value checked under it (loose
// or packed), the new one written, fsynced and renamed over.
type casReceivePack struct {
	transport.ReceivePackSession // the advertisement
	dir                          string
	mu                           *sync.Mutex
}

func (s *casReceivePack) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	// memfsd's own writers (the daemon and `memfsd sync` on one home) wait
	// for each other rather than fail on each other's ref lock: an flock on
	// the bare repository, within this process a mutex too (flock is per
	// open file, not per goroutine).
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := os.OpenFile(filepath.Join(s.dir, "memfsd-push.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock embedded remote: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock embedded remote: %w", err)
	}
	rs := packp.NewReportStatus()
	rs.UnpackStatus = "ok"
	// A stale old value is refused before the pack is stored: the usual
	// refusal costs no write. The check that counts is under the ref lock.
	for _, cmd := range req.Commands {
		cur, err := gitstore.ReadRef(s.dir, cmd.Name.String())
		if err != nil {
			return nil, fmt.Errorf("push to embedded remote: %w", err)
		}
		if cur != cmd.Old {
			if req.Packfile != nil {
				_ = req.Packfile.Close()
			}
			return refuse(rs, cmd.Name, "non-fast-forward")
		}
	}
	if req.Packfile != nil {
		unkeep, err := s.storePack(ctx, req.Packfile)
		if err != nil {
			rs.UnpackStatus = err.Error()
			return rs, fmt.Errorf("push to embedded remote: unpack: %w", err)
		}
		defer unkeep() // after the ref moves: then a ref reaches the pack
	}
	for _, cmd := range req.Commands {
		if cmd.New.IsZero() { // memfsd never deletes a remote branch
			return refuse(rs, cmd.Name, "deletion not supported by the embedded remote")
		}
		err := gitstore.CASRef(s.dir, cmd.Name.String(), cmd.Old, cmd.New, embeddedRefLockWait, true, nil, nil)
		switch {
		case errors.Is(err, gitstore.ErrRefMoved):
			return refuse(rs, cmd.Name, "non-fast-forward")
		case errors.Is(err, gitstore.ErrLocked):
			return refuse(rs, cmd.Name, fmt.Sprintf("cannot lock ref '%s': %v", cmd.Name, err))
		case err != nil:
			return refuse(rs, cmd.Name, err.Error())
		}
		rs.CommandStatuses = append(rs.CommandStatuses, &packp.CommandStatus{ReferenceName: cmd.Name, Status: "ok"})
	}
	return rs, nil
}

// storePack stores the pushed pack in the bare repository as git's
// receive-pack does, so that a `git gc` or `git repack -a -d` beside it
// cannot lose it: streamed and indexed into temporary files (gitstore.StagePack),
// fsynced, a pack-<sum>.keep created, then the .pack and the .idx renamed
// into place in that order and the folder fsynced (Publish). go-git's
// writer published the .idx first, and a gc that listed the folder between
// its two renames deleted that .idx as garbage: the acknowledged commit
// was then in a .pack git could not read (TestEmbedded_PushBesideGitGC).
// The .keep stops a repack from deleting the pack as redundant before the
// push's ref reaches it (a repack reads the refs once, when it starts);
// the caller calls unkeep once the refs moved, or the push failed.
func (s *casReceivePack) storePack(ctx context.Context, pack io.ReadCloser) (unkeep func(), err error) {
	r := ioutil.NewContextReadCloser(ctx, pack)
	defer r.Close()
	dir := filepath.Join(s.dir, "objects", "pack")
	pk, err := gitstore.StagePack(ctx, dir, r, true)
	if err != nil {
		return nil, err
	}
	defer pk.Remove()
	// O_EXCL: a .keep already there (a git receive-pack storing the same
	// pack, an operator's) is not ours to remove.
	keep := pk.Base(dir) + ".keep"
	kf, err := os.OpenFile(keep, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	unkeep = func() {}
	switch {
	case err == nil:
		_, err = fmt.Fprintf(kf, "receive-pack %d on memfsd\n", os.Getpid())
		if cerr := kf.Close(); err == nil {
			err = cerr
		}
		unkeep = func() { _ = os.Remove(keep) }
		if err != nil {
			unkeep()
			return nil, fmt.Errorf("keep pack: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("keep pack: %w", err)
	}
	if err := pk.Publish(dir, true); err != nil {
		unkeep()
		return nil, fmt.Errorf("store pack: %w", err)
	}
	return unkeep, nil
}

// refuse reports name's update as refused with status and ends the push,
// as go-git's client expects: the report and an error.
func refuse(rs *packp.ReportStatus, name plumbing.ReferenceName, status string) (*packp.ReportStatus, error) {
	rs.CommandStatuses = append(rs.CommandStatuses, &packp.CommandStatus{ReferenceName: name, Status: status})
	return rs, fmt.Errorf("command error on %s: %s", name, status)
}
