// Package gitmem is memfsd's git engine on go-git's plumbing: clone, fetch
// and fast-forward, O(change) commits that honour git's lock protocol, and
// incremental pushes whose cost follows the change rather than the history.
// It knows git and nothing about agents or HTTP APIs.
package gitmem

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/indexfile"
	"github.com/memfsd/memfsd/worktree"
)

// DefaultBranch is the branch memfsd keeps.
const DefaultBranch = gitstore.DefaultBranch

// RemoteName is the name of the remote in .git/config.
const RemoteName = "origin"

// Signature names the author and committer of memfsd's commits.
type Signature struct {
	Name  string
	Email string
}

// Remote is where a repository syncs to. Auth is kept in memory only.
type Remote struct {
	URL  string
	Auth transport.AuthMethod
}

// Options configure a Repo. Zero values take the Default* constants.
type Options struct {
	Author Signature
	// Operator authors the commits memfsd makes for the operator (a
	// block set, a read-only block put back, deletions restored); zero
	// means Author.
	Operator Signature
	Branch   string
	LockWait time.Duration
	// NoSync turns off fsync of objects and refs (faster, not crash-safe).
	NoSync bool
	Logger *slog.Logger
	// Outgoing, when set, judges every push's range (see OutgoingCheck).
	Outgoing OutgoingCheck
	// CreateIfMissing lets Clone go on when the host has no repository yet
	// (404): the branch starts unborn and the first push creates it.
	CreateIfMissing bool
	// Incoming, when set, judges every update from the remote before it is
	// applied (see IncomingCheck).
	Incoming IncomingCheck
	// Secret, when set, names the credential pattern a file's content
	// matches: no commit holding one is pushed (ErrPushSecret).
	Secret func(data []byte) (string, bool)
	// Keep stores bytes the outgoing check takes back (rejected writes).
	Keep func(path string, rejected []byte) error
	// MaxFileBytes caps a work file the commit pipeline and the scans
	// read (0: worktree.DefaultMaxRead): a bigger one is judged by its
	// fstat and never read (PathView.TooLarge), however large it claims
	// to be (a sparse 1 TB file costs the agent nothing).
	MaxFileBytes int64
	// WorkLock, when set, is taken before mu by every sync step that may
	// rewrite work files (never across the network), so the caller's
	// read-modify-write of a file under the same lock is never undone by
	// a pull landing in between. Lock order: WorkLock, then mu.
	WorkLock sync.Locker
	// YieldToPerson makes commits and pulls give way to a person's git in
	// the folder (an agent's repository): the folder's index.lock is taken
	// only once no other process has written the index for IndexQuiet, and
	// no branch moves over staging that began after the caller's last
	// look (PersonGit): ErrPersonGitActive. Off, a commit only waits for
	// the lock, as plain git does for refs.
	YieldToPerson bool
}

// Repo is one work tree with .git inside, safe for concurrent use. Two
// locks, and one rule: no network step ever holds mu.
//   - mu guards local state (object store, refs, index, work tree; go-git's
//     storage is not safe for concurrent use). Local writes take it, and
//     syncs take it only around their local steps (storing a fetched pack,
//     building a push pack, relating, replaying, moving refs), briefly.
//     A fetched pack is checked and indexed before mu is taken; only its
//     renames into objects/pack and the re-read of the pack list hold it.
//   - syncMu serialises syncs (Fetch, Pull, Push, Reconcile) with each
//     other; local writes never take it. A local commit landing while a
//     sync waits on the remote is simply not in that sync: the branch moves
//     by compare-and-swap (ErrRefMoved makes Reconcile integrate again) and
//     the remote's own compare-and-swap guards the push.
type Repo struct {
	Dir    string
	GitDir string
	Remote Remote
	opts   Options

	syncMu sync.Mutex
	mu     sync.Mutex
	ixf    *indexfile.File // .git/index, as last read or written
	// indexLockMax is the longest the folder's index.lock was held by
	// this repo, in nanoseconds (IndexLockMax).
	indexLockMax   atomic.Int64
	indexLockHolds [len(IndexLockBuckets)]atomic.Int64
	// look is the last look at a person's git (PersonGit): what it found
	// staged, a commit's reference for staging that began since.
	look *stagedLook
	// recent are the index entries memfsd's recent windows changed;
	// clobbered, those a git command beside it undid (dropClobbered),
	// put back by the next commit.
	recent    map[string]recentEntry
	clobbered map[string]string
	// ownMarks are the quietMarks' times as memfsd's last window left them.
	ownMarks  [len(quietMarks)]atomic.Int64
	st        *filesystem.Storage
	objs      *gitstore.Objects
	spares    *gitstore.Spares
	bg        *gitstore.Background // a repack and its goroutines: Close waits
	owner     *os.File             // shared flock: see claim
	soleOwner bool                 // no other memfsd process used the repo when it was claimed
	wt        *worktree.Dir        // the work tree, held open
	files     *worktree.Files      // the work files' whole life, on wt
	// refused notes what in .git was not read (a link on the way,
	// alternates, an object over the cap): Refused, for the status.
	refused *gitstore.Refusals
	log     *slog.Logger

	// fresh: a clone being built in its own temporary folder, whose first
	// checkout writes files in bulk (writeFresh).
	fresh bool

	flat     map[string]object.TreeEntry // files of flatTree (see flattenCommit)
	flatTree plumbing.Hash

	// beforeMove, when set (tests only), runs with mu held just before
	// Reconcile moves the branch.
	beforeMove func()
	// historyStep, when set (tests only), runs with mu held at the start
	// of each batch of a history walk.
	historyStep func()
}

// Close stops the repo's background work (a repack: cancelled, and waited
// for until its goroutines have ended and closed their files; refilling
// spare files) and closes its files.
func (r *Repo) Close() error {
	r.bg.Stop()
	r.spares.Stop()
	r.objs.ReleaseKept()
	r.objs.Close()
	if r.owner != nil {
		r.owner.Close()
		r.owner = nil
	}
	if r.wt != nil {
		r.wt.Close()
	}
	return nil
}

// Refused says what in the agent's .git memfsd lately would not read, and
// why (a symbolic link on the way, alternates, an object over the cap):
// what lies behind it is missing to memfsd.
func (r *Repo) Refused() []string { return r.refused.List() }

// maxFileBytes is the cap of a work file read whole (Options.MaxFileBytes).
func (r *Repo) maxFileBytes() int64 {
	if r.opts.MaxFileBytes > 0 {
		return r.opts.MaxFileBytes
	}
	return worktree.DefaultMaxRead
}

// openTree holds the work tree open for every file step (worktree.Dir,
// worktree.Files).
func (r *Repo) openTree() error {
	wt, err := worktree.OpenDir(r.Dir)
	if err != nil {
		return err
	}
	// Every other read of a work file (a lease, what an exchange
	// displaced) is capped too, never below a file the pipeline commits.
	wt.SetMaxRead(max(r.maxFileBytes(), worktree.DefaultMaxRead))
	r.wt = wt
	r.files = worktree.NewFiles(wt, r.objs, r.log)
	return nil
}

// unlock ends a section under r.mu. The packs its flushes wrote lose their
// .keep files first: every ref the section moved points into them by now.
func (r *Repo) unlock() {
	r.files.Done()
	r.objs.ReleaseKept()
	r.mu.Unlock()
}

// underLock runs f as one section under r.mu. The section ends through
// unlock even when f panics (go-git on objects the agent can write): a
// panic recovered further up must not leave the repository locked.
func (r *Repo) underLock(f func()) {
	r.mu.Lock()
	defer r.unlock()
	f()
}

// underWork is underLock for a section begun by lockWork.
func (r *Repo) underWork(f func()) {
	r.lockWork()
	defer r.unlockWork()
	f()
}

// ErrNotRepository is returned by Open on a folder without .git.
var ErrNotRepository = errors.New("not a git repository")

// Open opens the work tree at dir and clears lock files that a crash left.
func Open(dir string, remote Remote, opts Options) (*Repo, error) {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: %w", dir, ErrNotRepository)
	}
	r := newRepo(dir, remote, opts)
	if err := r.openTree(); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := r.claim(); err != nil {
		r.wt.Close()
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := gitstore.ClearStaleLocks(gitDir, gitstore.DefaultStaleLockAge, r.log); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	gitstore.ClearPackLeftovers(gitDir, gitstore.StaleFetchAge)
	gitstore.ClearWriteKeeps(gitDir)
	r.files.CheckLeases()
	r.files.RecoverLeftovers()
	if r.soleOwner {
		if fixed := r.files.RecoverTorn(); len(fixed) > 0 {
			r.log.Warn("finished replacing files a crash had left half written", "paths", fixed)
		}
	}
	r.objs.Watch()
	r.spares.Start()
	r.adoptMarks() // what was there before memfsd opened it is not a person's git at work now
	return r, nil
}

func newRepo(dir string, remote Remote, opts Options) *Repo {
	if opts.Branch == "" {
		opts.Branch = DefaultBranch
	}
	if opts.LockWait == 0 {
		opts.LockWait = gitstore.DefaultLockWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	gitDir := filepath.Join(dir, ".git")
	// An object over the cap is left uninflated by go-git (a lazy object
	// the store refuses, objcap.go); what gitFS would not read through a
	// link is noted for the status.
	refused := &gitstore.Refusals{}
	st := filesystem.NewStorageWithOptions(gitstore.NewGitFSNoting(gitDir, refused), cache.NewObjectLRU(16<<20), filesystem.Options{KeepDescriptors: true, LargeObjectThreshold: gitstore.MaxObjectSize()})
	sp := gitstore.NewSpares(gitDir)
	objs := gitstore.OpenObjects(gitDir, st, !opts.NoSync)
	objs.Spares = sp
	return &Repo{
		Dir:     dir,
		GitDir:  gitDir,
		Remote:  remote,
		opts:    opts,
		st:      st,
		objs:    objs,
		refused: refused,
		spares:  sp,
		bg:      gitstore.NewBackground(),
		log:     opts.Logger,
		ixf:     indexfile.New(gitDir, !opts.NoSync),
	}
}

// branchRef is the full name of the kept branch.
func (r *Repo) branchRef() string { return "refs/heads/" + r.opts.Branch }

// trackingRef is the remote-tracking ref of the kept branch.
func (r *Repo) trackingRef() string { return "refs/remotes/" + RemoteName + "/" + r.opts.Branch }

// Head is the commit the branch points to (zero when unborn).
func (r *Repo) Head() (plumbing.Hash, error) {
	return gitstore.ReadRef(r.GitDir, r.branchRef())
}

// RemoteHead is the last known commit of the remote branch.
func (r *Repo) RemoteHead() (plumbing.Hash, error) {
	return gitstore.ReadRef(r.GitDir, r.trackingRef())
}

// checkHead makes sure HEAD is on the kept branch: memfsd never commits on a
// detached HEAD or another branch a person checked out.
func (r *Repo) checkHead() error {
	b, err := gitstore.HeadBranch(r.GitDir)
	if err != nil {
		return err
	}
	if b != r.branchRef() {
		if b == "" {
			return fmt.Errorf("HEAD is detached: check out %s in %s", r.opts.Branch, r.Dir)
		}
		return fmt.Errorf("HEAD is on %s: check out %s in %s", b, r.opts.Branch, r.Dir)
	}
	return nil
}

// Init creates an empty repository at dir with HEAD on the branch and the
// remote recorded (URL only: credentials never reach .git/config).
func Init(dir string, remote Remote, opts Options) (*Repo, error) {
	r := newRepo(dir, remote, opts)
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(r.GitDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("init %s: %w", dir, err)
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
		"[remote \"" + RemoteName + "\"]\n\turl = " + remote.URL + "\n\tfetch = +refs/heads/*:refs/remotes/" + RemoteName + "/*\n" +
		"[branch \"" + r.opts.Branch + "\"]\n\tremote = " + RemoteName + "\n\tmerge = " + r.branchRef() + "\n"
	files := map[string]string{
		"HEAD":        "ref: " + r.branchRef() + "\n",
		"config":      config,
		"description": "memfsd agent memory\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.GitDir, name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("init %s: %w", dir, err)
		}
	}
	if err := r.openTree(); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := r.claim(); err != nil {
		r.wt.Close()
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	r.files.CheckLeases()
	r.spares.Start()
	r.adoptMarks() // what was there before memfsd opened it is not a person's git at work now
	return r, nil
}

// operator is who authors the commits made for the operator.
func (r *Repo) operator() Signature {
	if r.opts.Operator.Name == "" {
		return r.opts.Author
	}
	return r.opts.Operator
}

// CommitOperator commits paths as one commit authored by the operator
// identity (Options.Operator): an operator's change, told apart from the
// agent's in `git log --author`.
func (r *Repo) CommitOperator(paths []string, message string) (plumbing.Hash, error) {
	op := r.operator()
	res, err := r.Commit(CommitRequest{Paths: paths, One: true, Message: func(PathView) string { return message }, Author: &op})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(res.Commits) == 0 {
		return res.Head, ErrNothingToCommit
	}
	return res.Head, nil
}

// lockWork begins a section under r.mu that may rewrite work files (a
// fast-forward, a replay or restore, the outgoing check putting a
// read-only block back), taking opts.WorkLock first. A writer that reads
// a file and writes it back under WorkLock (the memory tool) then never
// writes its old view over what the section put there: a pull waits for
// the call, or the call reads what the pull wrote.
func (r *Repo) lockWork() {
	if r.opts.WorkLock != nil {
		r.opts.WorkLock.Lock()
	}
	r.mu.Lock()
}

// unlockWork ends a section begun by lockWork.
func (r *Repo) unlockWork() {
	r.unlock()
	if r.opts.WorkLock != nil {
		r.opts.WorkLock.Unlock()
	}
}
