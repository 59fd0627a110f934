package retry

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// Stepper is an error that knows what a person should do about it; NextStep
// uses the first one in an error's chain.
type Stepper interface{ NextStep() string }

// NextStep is what a person (or the agent) should do about err: a step for
// its cause where memfsd knows one (a held push, a credential in a commit,
// a lock a git command holds, a full disk, a refused certificate...), else
// its class's step.
func NextStep(err error) string {
	if err == nil {
		return ""
	}
	var s Stepper
	if errors.As(err, &s) {
		return s.NextStep()
	}
	switch {
	case ClassOf(err).Held():
		return ClassOf(err).NextStep()
	case errors.Is(err, plumbing.ErrObjectNotFound), strings.Contains(err.Error(), plumbing.ErrObjectNotFound.Error()):
		return "an object the memory's .git should hold was not found (a pack or object folder removed, or put back from an older copy): check that no git gc or copy is running in the folder; if it stays, move the folder aside and run `memfsd sync --agent ID` to clone afresh, then move the work tree's files back in (the remote holds every pushed commit)"
	case errors.Is(err, gitstore.ErrSymrefLoop):
		return "a ref in the memory's .git (named above) is a loop of symbolic refs: point it at a commit again (`git update-ref <ref> <commit>`, or remove the file and `git fetch`); memfsd tries again at the next sync"
	case errors.Is(err, gitstore.ErrNotRegular), errors.Is(err, gitstore.ErrTooLarge):
		return "a file in the memory's .git (named above) is not what git writes there (a FIFO, device, link or an oversized file): remove it and put back what git expects (`git update-ref`, `git fetch`, `git reset` for the index); memfsd tries again at the next sync"
	case errors.Is(err, gitmem.ErrLocked):
		return "a git command holds a lock in the memory's .git (e.g. `git commit` with its editor open): finish it, or remove the .lock file named above if no git command is running; memfsd tries again at the next sync"
	case errors.Is(err, gitmem.ErrPersonGitActive):
		return "a git command in the memory folder was staging or committing: the commit waits until it ends (the files are kept as written); memfsd tries again by itself"
	case errors.Is(err, worktree.ErrUntrackable):
		return "a path git cannot track (e.g. .git below the root) was named: rename or remove it; the other files are committed"
	case errors.Is(err, gitmem.ErrNotRepository):
		return "the memory folder has no usable .git: move the folder aside and run `memfsd sync --agent ID` to clone afresh (files written there are kept by moving them back in)"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk (or quota) holding the memory is full: free space; nothing was lost, the next sync carries on"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return "memfsd may not write part of the memory's folder or .git: check the owner and permissions (memfsd's files are 0600, folders 0700) and that the filesystem is writable"
	case isCertificateError(err):
		return "the server's TLS certificate was refused: fix the server's certificate or the CA bundle (SSL_CERT_FILE); commits stay local"
	}
	return ClassOf(err).NextStep()
}
