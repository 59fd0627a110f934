package gitstore

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The present cache says which objects memfsd wrote itself, so that a
// write of the same content again (a file written back to what it was, a
// folder back to its old listing) is not packed a second time. Objects
// leave a repository only with the pack that holds them (a person's `git
// gc`, `git repack -a -d`, memfsd's own repack) or as loose files (`git
// prune`): so the cache holds only objects of memfsd's own packs, never
// loose ones (those are looked up on disk each time), and it is trusted
// only while no pack it was built over has gone. Checking that costs one
// stat of objects/pack when the cache is asked (a hit is rare: most
// writes are new content), and a listing of the folder when it changed.

// packView is the set of packs the present cache was built over.
type packView struct {
	listed   bool
	mtime    time.Time // of objects/pack, at the listing
	listedAt time.Time
	packs    map[string]bool // file names of the *.pack files
}

// packMtimeGrain: a folder's mtime is trusted to show a later change only
// once the listing was made this long after it (ext4 stamps in clock
// ticks of a few ms, some filesystems in whole seconds).
const packMtimeGrain = time.Second

// isPresent reports whether h is an object memfsd wrote and that is still
// there: pending, or in a pack of memfsd's that no one has removed.
func (s *Objects) isPresent(h plumbing.Hash) bool {
	if !s.present[h] {
		return false
	}
	if _, ok := s.pendingAt[h]; ok {
		return true
	}
	if !s.packsIntact() {
		s.packsGone()
		return false
	}
	return true
}

// packsIntact reports whether every pack of the view is still there, and
// brings the view up to date with the folder.
func (s *Objects) packsIntact() bool {
	st, err := statBeneath(s.GitDir, "objects/pack")
	var mtime time.Time
	if err == nil {
		mtime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	}
	if err == nil && s.view.listed && mtime.Equal(s.view.mtime) && s.view.listedAt.Sub(s.view.mtime) > packMtimeGrain {
		return true // unchanged since a listing made well after its last change
	}
	packs := packNames(s.GitDir)
	intact := true
	for name := range s.view.packs {
		if !packs[name] {
			intact = false
			break
		}
	}
	s.view = packView{listed: true, listedAt: time.Now(), packs: packs}
	if err == nil {
		s.view.mtime = mtime
	}
	return intact
}

// packsGone forgets what the removed packs held: the present cache, the
// store's own pack locations and go-git's pack list (it would keep the
// removed pack files open and answer from them).
func (s *Objects) packsGone() {
	clear(s.present)
	s.RereadPacks()
}

// addOwnPack records that memfsd placed pack (a path) and that present
// objects live in it: its removal must show as a pack gone from the view.
func (s *Objects) addOwnPack(pack string) {
	if !s.view.listed {
		s.packsIntact() // lists the folder, the new pack with it
	}
	s.view.packs[filepath.Base(pack)] = true
}

// PacksRolledUp records memfsd's own repack, which keeps every object of
// the packs it merges (names without ".pack") in pack: their removal
// takes nothing from the present cache.
func (s *Objects) PacksRolledUp(merged []string, pack string) {
	if !s.view.listed {
		return
	}
	for _, m := range merged {
		delete(s.view.packs, m+".pack")
	}
	s.view.packs[pack+".pack"] = true
}

// packNames returns the names of the *.pack files in gitDir's
// objects/pack (reached through no link; a link there is no pack).
func packNames(gitDir string) map[string]bool {
	packs := map[string]bool{}
	entries, err := ReadDirBeneath(gitDir, "objects/pack")
	if err != nil {
		return packs
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pack") && e.Mode().IsRegular() {
			packs[e.Name()] = true
		}
	}
	return packs
}
