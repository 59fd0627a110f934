package gitstore

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memfsd/memfsd/internal/atomicfile"
)

// gcPIDMaxAge is how long git honours another gc's gc.pid (git: 12 hours).
const gcPIDMaxAge = 12 * time.Hour

// ErrGCRunning: a git gc (or another repack) holds .git/gc.pid.
var ErrGCRunning = errors.New("a git gc is running (gc.pid)")

// PackInfo is one pack of objects/pack, read from its index.
type PackInfo struct {
	Name    string // pack-<checksum>
	Objects []plumbing.Hash
}

// ListPacks reads every pack's object list from its index, in gitDir's
// objects/pack. A pack with a .keep file is left out (git's convention:
// never repacked).
func ListPacks(gitDir string) ([]PackInfo, error) {
	entries, err := ReadDirBeneath(gitDir, "objects/pack")
	if err != nil {
		return nil, err
	}
	var out []PackInfo
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") || !e.Mode().IsRegular() {
			continue
		}
		if _, err := statBeneath(gitDir, "objects/pack/"+base+".keep"); err == nil {
			continue
		}
		if st, err := statBeneath(gitDir, "objects/pack/"+base+".pack"); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		objs, err := readIdxNames(gitDir, "objects/pack/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, PackInfo{Name: base, Objects: objs})
	}
	return out, nil
}

// readIdxNames lists the object ids in a version 2 pack index, rel below
// gitDir (read by ReadGitFile: no link anywhere from gitDir down).
func readIdxNames(gitDir, rel string) ([]plumbing.Hash, error) {
	data, err := ReadGitFile(gitDir, rel, MaxPackIndexSize)
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

// GeometricRollUp picks the packs to merge with loose new objects, as
// `git repack --geometric=2` does (builtin/repack.c, split_pack_geometry):
// from the largest pack down, the packs that each hold at least twice the
// objects of the next smaller one form the progression and stay; the rest
// roll up, and so does any pack of the progression that holds fewer than
// twice the objects rolled up below it (the loose ones included). Fewer
// than two packs and no loose objects merge nothing.
func GeometricRollUp(packs []PackInfo, loose int) []PackInfo {
	sorted := slices.Clone(packs)
	slices.SortStableFunc(sorted, func(a, b PackInfo) int { return len(a.Objects) - len(b.Objects) })
	split := 0
	for i := len(sorted) - 1; i > 0; i-- {
		if len(sorted[i].Objects) < 2*len(sorted[i-1].Objects) {
			split = i + 1 // the top of the pair that breaks the series is out of it too
			break
		}
	}
	total := loose
	for _, p := range sorted[:split] {
		total += len(p.Objects)
	}
	for split < len(sorted) && len(sorted[split].Objects) < 2*total {
		total += len(sorted[split].Objects)
		split++
	}
	merge := sorted[:split]
	if loose == 0 && len(merge) < 2 {
		return nil
	}
	return merge
}

// PublishPack makes the written pack file and its index bytes part of the
// object store under final(.pack|.idx): synced when sync, read-only as git
// leaves packs, the pack renamed first and the index (which makes git see
// it) last. A pack of the same name already there is the same pack.
func PublishPack(pf *os.File, idx []byte, final string, sync bool) error {
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
		return SyncDir(filepath.Dir(final))
	}
	return nil
}

// TakeGCPID takes .git/gc.pid the way git gc does (builtin/gc.c,
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
func TakeGCPID(gitDir string) (func(), error) {
	p := filepath.Join(gitDir, "gc.pid")
	host, _ := os.Hostname()
	lock, err := takeGCPIDLock(p)
	if err != nil {
		return nil, err
	}
	if gcPIDLive(gitDir, host) {
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
	return func() { releaseGCPID(gitDir, host) }, nil
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
func gcPIDLive(gitDir, host string) bool {
	fi, err := os.Stat(filepath.Join(gitDir, "gc.pid"))
	if err != nil || time.Since(fi.ModTime()) > gcPIDMaxAge {
		return false
	}
	pid, h, ok := gcPIDOwner(gitDir)
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

// gcPIDOwner reads gitDir's gc.pid: "<pid> <host>".
func gcPIDOwner(gitDir string) (int, string, bool) {
	data, err := ReadGitFile(gitDir, "gc.pid", MaxRefSize)
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
func releaseGCPID(gitDir, host string) {
	p := filepath.Join(gitDir, "gc.pid")
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
	if pid, h, ok := gcPIDOwner(gitDir); ok && pid == os.Getpid() && h == host {
		os.Remove(p)
	}
}

// ListLoose lists the loose objects of objDir (a .git's objects), sorted:
// fan-out folders and files reached through no link (a link is none).
func ListLoose(objDir string) ([]plumbing.Hash, error) {
	gitDir := filepath.Dir(objDir)
	dirs, err := ReadDirBeneath(gitDir, "objects")
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := ReadDirBeneath(gitDir, "objects/"+d.Name())
		if err != nil {
			continue
		}
		for _, f := range files {
			if len(f.Name()) != 38 || !f.Mode().IsRegular() {
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
