package gitmem

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitfmt/pack"
	"github.com/memfsd/memfsd/internal/atomicfile"
)

// DefaultRepackLoose is how many loose objects make a repack worth it.
const DefaultRepackLoose = 512

// gcPIDMaxAge is how long git honours another gc's gc.pid (git: 12 hours).
const gcPIDMaxAge = 12 * time.Hour

// ErrGCRunning: a git gc (or another repack) holds .git/gc.pid.
var ErrGCRunning = errors.New("a git gc is running (gc.pid)")

// ErrPacksChanged: a git command beside the repack (a person's `git
// repack -a -d`, which does not take gc.pid) moved objects it was reading;
// nothing was removed, and the next repack starts from what is there.
var ErrPacksChanged = errors.New("the packs changed under the repack (a git repack beside it); skipped")

// RepackResult says what Repack did.
type RepackResult struct {
	Packed int      // loose objects moved into the new pack
	Merged []string // older packs rolled into it
	Pack   string   // the new pack's name (empty when none was made)
}

// Repack keeps the object folder small and fast over a long life, as `git
// repack -d --geometric=2` does: the loose objects (when there are at
// least minLoose) and every pack that is not at least twice the size of
// all smaller ones together go into one new pack, with deltas (go-git's
// encoder, git's window of 10), so a thousand commits of a changing tree
// cost what git gc would leave, not a full tree each. Pack sizes then form
// a geometric series: O(log n) packs, and each object is rewritten
// O(log n) times over its life.
//
// Nothing is ever dropped: every object of the rolled-up packs and every
// loose object goes into the new pack, reachable or not (pruning is the
// person's `git gc`). It never holds the write lock while it reads and
// packs (loose objects and packs never change once written); only the
// re-read of the pack list and the removal of what the new pack now holds
// take it, briefly. It honours git's gc.pid both ways: a running `git gc`
// makes it skip (ErrGCRunning), and while it runs a person's `git gc`
// waits. A crash at any point leaves every object loose, packed, or both:
// the pack and its index are synced and renamed into place (pack first,
// index last) before anything goes.
func (r *Repo) Repack(ctx context.Context, minLoose int) (RepackResult, error) {
	var res RepackResult
	ctx, done, err := r.bg.start(ctx) // Close cancels it and waits
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	defer done()
	select { // one repack at a time in this process: it is CPU and disk work
	case repackSlot <- struct{}{}:
		defer func() { <-repackSlot }()
	case <-ctx.Done():
		return res, ctx.Err()
	}
	began := time.Now()
	release, err := r.takeGCPID()
	if err != nil {
		return res, err
	}
	defer release()
	r.objs.looseSince.Store(0)
	r.objs.writePacks.Store(0)
	objDir := filepath.Join(r.GitDir, "objects")
	loose, err := listLoose(objDir)
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	if len(loose) < max(minLoose, 1) {
		loose = nil
	}
	packs, err := listPacks(filepath.Join(objDir, "pack"))
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	merge := geometricRollUp(packs, len(loose))
	if len(loose) == 0 && len(merge) < 2 {
		return res, nil // nothing loose enough, and no packs out of series
	}
	objects := slices.Clone(loose)
	for _, p := range merge {
		objects = append(objects, p.objects...)
	}
	slices.SortFunc(objects, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	objects = slices.Compact(objects)
	name, err := r.writeDeltaPack(ctx, objDir, objects)
	if stalePacks(err) || errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("repack: %w: %v", ErrPacksChanged, err)
	}
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	// Only now, and only what the new pack holds (writeDeltaPack checked
	// every object is in its index), goes. Under mu, briefly: memfsd's
	// storage learns the new pack list, and the rolled-up packs go (a
	// lookup must never find a pack listed but gone).
	r.mu.Lock()
	for _, p := range merge {
		if p.name == name {
			continue // the same objects packed the same way: it is the new pack
		}
		base := filepath.Join(objDir, "pack", p.name)
		// The index first: without it git and go-git no longer see the pack.
		for _, ext := range []string{".idx", ".pack", ".rev", ".bitmap"} {
			_ = os.Remove(base + ext)
		}
		res.Merged = append(res.Merged, p.name)
	}
	r.objs.rereadPacks()
	r.objs.packsRolledUp(res.Merged, name)
	r.unlock()
	// The loose copies go without the lock (hundreds of unlinks would
	// stall writes): a reader that misses one finds it in the new pack,
	// which every reader already sees. The pack is checked to be there
	// still before each batch (a person's `git repack -a -d` may have
	// rolled it up meanwhile, without our loose copies' objects).
	newIdx := filepath.Join(objDir, "pack", name+".idx")
	for i, h := range loose {
		if i%64 == 0 {
			if _, err := os.Stat(newIdx); err != nil {
				r.log.Warn("the new pack went away during the repack; loose objects kept", "pack", name)
				break
			}
		}
		if err := os.Remove(r.objs.loosePath(h)); err == nil {
			res.Packed++
		}
	}
	res.Pack = name
	r.log.Info("repacked", "loose", res.Packed, "packs_merged", len(res.Merged), "objects", len(objects), "pack", name, "took", time.Since(began).Round(time.Millisecond))
	return res, nil
}

// RepackDue reports whether enough objects (DefaultRepackLoose) or packs
// of writes (writePacksDue) were written since the repo was opened or last
// repacked to make a Repack worth it. Cheap: for a commit path to ask
// after every commit.
func (r *Repo) RepackDue() bool {
	return r.objs.looseSince.Load() >= DefaultRepackLoose || r.objs.writePacks.Load() >= writePacksDue
}

// packInfo is one pack of objects/pack, read from its index.
type packInfo struct {
	name    string // pack-<checksum>
	objects []plumbing.Hash
}

// listPacks reads every pack's object list from its index. A pack with a
// .keep file is left out (git's convention: never repacked).
func listPacks(packDir string) ([]packInfo, error) {
	entries, err := os.ReadDir(packDir)
	if err != nil {
		return nil, err
	}
	var out []packInfo
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") {
			continue
		}
		if _, err := os.Stat(filepath.Join(packDir, base+".keep")); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(packDir, base+".pack")); err != nil {
			continue
		}
		objs, err := readIdxNames(filepath.Join(packDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, packInfo{name: base, objects: objs})
	}
	return out, nil
}

// readIdxNames lists the object ids in a version 2 pack index.
func readIdxNames(path string) ([]plumbing.Hash, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const head = 8 + 256*4
	if len(data) < head || !bytes.Equal(data[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return nil, errors.New("not a version 2 pack index")
	}
	n := int(binary.BigEndian.Uint32(data[head-4 : head]))
	if len(data) < head+n*20 {
		return nil, errors.New("truncated pack index")
	}
	out := make([]plumbing.Hash, n)
	for i := range out {
		copy(out[i][:], data[head+i*20:])
	}
	return out, nil
}

// geometricRollUp picks the packs to merge with loose new objects, as
// `git repack --geometric=2` does (builtin/repack.c, split_pack_geometry):
// from the largest pack down, the packs that each hold at least twice the
// objects of the next smaller one form the progression and stay; the rest
// roll up, and so does any pack of the progression that holds fewer than
// twice the objects rolled up below it (the loose ones included). Fewer
// than two packs and no loose objects merge nothing.
func geometricRollUp(packs []packInfo, loose int) []packInfo {
	sorted := slices.Clone(packs)
	slices.SortStableFunc(sorted, func(a, b packInfo) int { return len(a.objects) - len(b.objects) })
	split := 0
	for i := len(sorted) - 1; i > 0; i-- {
		if len(sorted[i].objects) < 2*len(sorted[i-1].objects) {
			split = i + 1 // the top of the pair that breaks the series is out of it too
			break
		}
	}
	total := loose
	for _, p := range sorted[:split] {
		total += len(p.objects)
	}
	for split < len(sorted) && len(sorted[split].objects) < 2*total {
		total += len(sorted[split].objects)
		split++
	}
	merge := sorted[:split]
	if loose == 0 && len(merge) < 2 {
		return nil
	}
	return merge
}

// repackSlot lets one repack run at a time in the process.
var repackSlot = make(chan struct{}, 1)

// ctxObjects is the repack's object storage, whose reads fail once ctx is
// done: the encoder then stops loading objects for its delta search. It
// keeps go-git's DeltaObject, through which the encoder reuses the deltas
// packs already hold.
type ctxObjects struct {
	*filesystem.Storage
	ctx context.Context
}

func (c ctxObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	return c.Storage.EncodedObject(t, h)
}

func (c ctxObjects) DeltaObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	return c.Storage.DeltaObject(t, h)
}

var _ storer.DeltaObjectStorer = ctxObjects{}

// writeDeltaPack packs objects (loose or packed) with deltas into a new
// pack and index, synced and renamed into place, and returns its name. It
// reads through a storage of its own, so it needs no lock: objects never
// change once written. Cancelling ctx stops it (nothing is removed before
// the new pack is in place, so a stop loses nothing).
func (r *Repo) writeDeltaPack(ctx context.Context, objDir string, objects []plumbing.Hash) (string, error) {
	packDir := filepath.Join(objDir, "pack")
	pf, err := os.CreateTemp(packDir, repackTempPrefix)
	if err != nil {
		return "", err
	}
	defer pf.Close()
	pr, pw := io.Pipe()
	st := filesystem.NewStorage(newGitFS(r.GitDir), cache.NewObjectLRU(32<<20))
	encCtx, encDone, err := r.bg.start(ctx)
	if err != nil {
		st.Close()
		os.Remove(pf.Name())
		return "", err
	}
	go func() { // owns st; ends when the pack is written or the pipe is closed
		defer encDone() // Close waits for this goroutine, st closed
		defer st.Close()
		pack.LowerThreadPriority()
		_, err := packfile.NewEncoder(pw, ctxObjects{st, encCtx}, false).Encode(objects, 10)
		pw.CloseWithError(err) // an error reaches the indexer through the pipe
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	type indexed struct {
		idx *idxfile.MemoryIndex
		sum plumbing.Hash
		err error
	}
	got := make(chan indexed, 1)
	go func() { // on a low-priority thread too, retired when done
		pack.LowerThreadPriority()
		idx, sum, err := pack.IndexAt(ctx, pr, pf, true)
		got <- indexed{idx, sum, err}
	}()
	res := <-got
	idx, sum, err := res.idx, res.sum, res.err
	stop()
	// Not waiting for the encoder here: on a cancel it may still be in
	// go-git's delta search, which cannot be stopped; its next object read
	// (ctxObjects) or write (the closed pipe) fails and it ends by itself.
	// Repo.Close waits for it.
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
	if err := publishPack(pf, buf.Bytes(), final, r.objs.sync); err != nil {
		return "", err
	}
	return name, nil
}

// publishPack makes the written pack file and its index bytes part of the
// object store under final(.pack|.idx): synced when sync, read-only as git
// leaves packs, the pack renamed first and the index (which makes git see
// it) last. A pack of the same name already there is the same pack.
func publishPack(pf *os.File, idx []byte, final string, sync bool) error {
	fail := func(err error) error {
		os.Remove(pf.Name())
		return err
	}
	if sync {
		if err := pf.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := pf.Chmod(0o444); err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(final + ".pack"); err == nil {
		os.Remove(pf.Name())
	} else if err := os.Rename(pf.Name(), final+".pack"); err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(final + ".idx"); err == nil {
		return nil
	}
	if err := atomicfile.Write(final+".idx", idx, 0o444, sync); err != nil {
		return err
	}
	if sync {
		return syncDir(filepath.Dir(final))
	}
	return nil
}

// takeGCPID takes .git/gc.pid the way git gc does (builtin/gc.c,
// lock_repo_for_gc), so the two exclude each other: under gc.pid.lock
// (O_EXCL, which git holds the same way for a moment), a gc.pid younger
// than git's 12 hours is honoured unless its process is known to be gone;
// otherwise "<pid> <host>" goes into the lock file, which is renamed over
// gc.pid. It fails with ErrGCRunning while a live one is there.
//
// A gc.pid naming this very process counts as stale: the caller holds
// repackSlot, so no repack of ours runs, and the file was left by an
// earlier life of a daemon that got the same PID again (PID 1 in a
// container). Like git, a PID is only checked on the same host; a process
// of another PID namespace with the same host name is taken for gone.
func (r *Repo) takeGCPID() (func(), error) {
	p := filepath.Join(r.GitDir, "gc.pid")
	host, _ := os.Hostname()
	lock, err := takeGCPIDLock(p)
	if err != nil {
		return nil, err
	}
	if gcPIDLive(p, host) {
		lock.Close()
		os.Remove(lock.Name())
		return nil, ErrGCRunning
	}
	_, werr := fmt.Fprintf(lock, "%d %s", os.Getpid(), host)
	cerr := lock.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(lock.Name())
		return nil, fmt.Errorf("repack: write gc.pid: %w", err)
	}
	if err := os.Rename(lock.Name(), p); err != nil {
		os.Remove(lock.Name())
		return nil, fmt.Errorf("repack: take gc.pid: %w", err)
	}
	return func() { releaseGCPID(p, host) }, nil
}

// gcPIDLockMaxAge: a gc.pid.lock older than this was left by a crash (git
// and memfsd hold it for microseconds); it is removed so neither stays
// locked out for good.
const gcPIDLockMaxAge = 10 * time.Minute

// takeGCPIDLock creates gc.pid.lock with O_EXCL, as git's lockfile API
// does; a fresh one held by someone else is ErrGCRunning.
func takeGCPIDLock(p string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(p+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("repack: lock gc.pid: %w", err)
		}
		fi, serr := os.Stat(p + ".lock")
		if attempt > 0 || serr != nil || time.Since(fi.ModTime()) < gcPIDLockMaxAge {
			return nil, ErrGCRunning
		}
		os.Remove(p + ".lock") // only one memfsd per repo removes it (owner lock)
	}
}

// gcPIDLive reports whether gc.pid says a gc runs, as git judges it: the
// file is younger than 12 hours and names a process of another host, or
// one of this host that still runs (kill 0 succeeds, or EPERM) and is not
// this process.
func gcPIDLive(p, host string) bool {
	fi, err := os.Stat(p)
	if err != nil || time.Since(fi.ModTime()) > gcPIDMaxAge {
		return false
	}
	pid, h, ok := gcPIDOwner(p)
	if !ok {
		return false // git too ignores a gc.pid it cannot parse
	}
	if h != host {
		return true
	}
	if pid == os.Getpid() {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// gcPIDOwner reads gc.pid's "<pid> <host>".
func gcPIDOwner(p string) (int, string, bool) {
	data, err := os.ReadFile(p)
	if err != nil {
		return 0, "", false
	}
	var pid int
	var host string
	if n, _ := fmt.Sscanf(string(data), "%d %s", &pid, &host); n != 2 || pid <= 0 {
		return 0, "", false
	}
	return pid, host, true
}

// releaseGCPID removes gc.pid while it is still ours, under gc.pid.lock so
// it never removes a gc.pid a git gc has just taken over. When the lock is
// busy the file stays; it names this process, which the next repack takes
// for stale, and git for gone once the daemon exits.
func releaseGCPID(p, host string) {
	var lock *os.File
	for try := 0; ; try++ { // git holds it for microseconds
		var err error
		if lock, err = os.OpenFile(p+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			break
		}
		if try == 50 || !errors.Is(err, fs.ErrExist) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	defer os.Remove(lock.Name())
	lock.Close()
	if pid, h, ok := gcPIDOwner(p); ok && pid == os.Getpid() && h == host {
		os.Remove(p)
	}
}

// listLoose lists the loose objects, sorted.
func listLoose(objDir string) ([]plumbing.Hash, error) {
	dirs, err := os.ReadDir(objDir)
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objDir, d.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if len(f.Name()) != 38 {
				continue
			}
			if h, ok := parseHex(d.Name() + f.Name()); ok {
				out = append(out, h)
			}
		}
	}
	slices.SortFunc(out, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	return out, nil
}

func parseHex(s string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, false
	}
	copy(h[:], b)
	return h, true
}
