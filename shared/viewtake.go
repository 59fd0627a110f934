package shared

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitfmt/merge3"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/guard"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/treecheck"
	"github.com/memfsd/memfsd/worktree"
)

// viewChange is a file an agent changed in its view.
type viewChange struct {
	path    string
	data    []byte // nil when deleted
	present bool
	hash    string    // blob id, "" when deleted
	written time.Time // the file's modification time (zero when deleted)
}

// blobID is data's git blob id as the records keep it ("" when absent).
func blobID(data []byte, present bool) string {
	if !present {
		return ""
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data).String()
}

// takeView takes the files the agent changed in view v (paths, or the
// whole view when full) as policy write says. Under v.busy.
func (a *Unit) takeView(repo *gitmem.Repo, v *view, write WritePolicy, paths []string, full bool) error {
	if full {
		found, err := walkView(v.tree)
		if err != nil {
			return fmt.Errorf("scan view %s: %w", v.dir, err)
		}
		paths = append(paths, found...)
		for p := range v.rec.Files {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var changes []viewChange
	for _, p := range paths {
		if worktree.Check(p) != nil {
			continue // not a memory path (a .git in any case, ...)
		}
		f, err := v.tree.Read(p)
		if err != nil && !errors.Is(err, worktree.ErrNotFile) {
			continue // a folder or gone: its files come by their own names
		}
		c := viewChange{path: p}
		if f != nil {
			if f.Mode == worktree.Symlink {
				continue // nothing of the agent's is taken through a link
			}
			c.data, c.present = f.Data, true
			if f.Stat != nil {
				c.written = time.Unix(f.Stat.Mtim.Unix())
			}
		}
		c.hash = blobID(c.data, c.present)
		if c.hash == v.rec.Files[p] || (c.hash != "" && (c.hash == v.rec.Proposed[p] || c.hash == v.rec.Held[p])) {
			continue
		}
		delete(v.rec.Held, p)
		head, inHead, err := repo.HeadFile(p)
		if err != nil {
			return err
		}
		if blobID(head, inHead) == c.hash {
			v.rec.Files[p] = c.hash // the shared version already
			continue
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil
	}
	switch write {
	case WriteAllow:
		return a.takeAllowed(repo, v, changes)
	case WritePropose:
		return a.takeProposed(repo, v, changes)
	}
	a.undoInView(v, changes, reminders.KindSharedWriteDenied)
	return nil
}

// errViewHeldForPerson is takeAllowed's answer while a person's git
// operation in the shared clone holds memfsd's commits: the view's
// changes are taken at a later round.
var errViewHeldForPerson = errors.New("a person's git operation in the shared clone holds the view's writes")

// takeAllowed commits the agent's changes to the shared branch through
// the one pipeline, authored by the agent: each file merged three-way
// with the shared tip's version against the version the view was given
// (both kept on a true conflict: the tip's at the path, the agent's as a
// conflict copy), judged by the direct-write guard (read-only blocks
// restored, credentials and broken front matter held, mass deletions
// held). What a guard holds never stays in the shared clone: it goes back
// to the tip's version, the view keeps the agent's.
func (a *Unit) takeAllowed(repo *gitmem.Repo, v *view, changes []viewChange) error {
	author := a.cfg.Author(v.id)
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if repo = a.repository(); repo == nil { // a rebuild of the .git swaps it under writeMu
		return agent.ErrNotReady
	}
	// A person's git operation in the shared clone (a commit waiting on
	// its editor): nothing is written there or committed until it ends
	// (persongit.go); the view keeps the agent's files meanwhile.
	if pg := a.personGit(repo); pg != nil && pg.Holding {
		return errViewHeldForPerson
	}
	heads := map[string][]byte{} // the tip's version of every path written (nil: none)
	var paths []string
	err := a.withTree(func(wt *worktree.Dir) error {
		for _, c := range changes {
			head, inHead, err := repo.HeadFile(c.path)
			if err != nil {
				return err
			}
			base, older := a.writtenBeforeRefresh(repo, v, c)
			if h := v.rec.Files[c.path]; h != "" && !older {
				if base, err = a.viewBase(repo, v, h); err != nil {
					return fmt.Errorf("read %s as the view had it: %w", c.path, err)
				}
			}
			out, conflict := c.data, []byte(nil)
			switch {
			case !c.present && (!inHead || blobID(head, true) != v.rec.Files[c.path]):
				// Deleted here, gone or changed on the tip meanwhile: the
				// tip's stands (the changed file wins).
				continue
			case c.present && inHead && v.rec.Files[c.path] != "":
				merged, ok := merge3.Merge(base, c.data, head)
				if ok {
					out = merged
				} else {
					out, conflict = head, c.data
				}
			case c.present && inHead:
				// New in the view and on the tip: both kept.
				out, conflict = head, c.data
			}
			if inHead {
				heads[c.path] = head
			} else {
				heads[c.path] = nil
			}
			if c.present {
				if _, err := wt.WriteFile(c.path, out, worktree.Regular, !a.cfg.NoFsync); err != nil {
					return err
				}
			} else if err := wt.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			paths = append(paths, c.path)
			if conflict != nil {
				cp := worktree.ConflictName(c.path, plumbing.NewHash(c.hash))
				if _, err := wt.WriteFile(cp, conflict, worktree.Regular, !a.cfg.NoFsync); err != nil {
					return err
				}
				heads[cp] = nil
				paths = append(paths, cp)
			}
		}
		return nil
	})
	var res gitmem.CommitResult
	secrets := map[string]string{}
	broken := map[string]bool{}
	odd := map[string]reminders.WriteProblem{} // too large, a bad name
	tree := map[string][]string{}              // letta-code's tree rules broken more: path → problems added
	if err == nil && len(paths) > 0 {
		res, err = repo.Commit(gitmem.CommitRequest{
			Paths:   paths,
			Message: func(pv gitmem.PathView) string { return agent.DirectWriteMessage(pv.Kind, pv.Path) },
			// letta-code agents may share this repository: a change that
			// makes its tree break letta-code's MemFS rules more is held
			// (they could commit nothing past it).
			Guard:  guard.OddInput(a.maxFileBytes(), odd, a.withTreeGuard(guard.DirectWrite(false, 0, a.secretPatterns(), a.frontMatterRules(), secrets, map[string]reminders.LimitOver{}, broken), tree)),
			Keep:   func(p string, data []byte) error { return a.keepRejected("view-"+v.id+"/"+p, data) },
			Author: &author,
		})
		a.repackSoon(repo)
	}
	// The shared clone holds only what is committed: whatever was not
	// (held, or the commit failed) goes back to the tip's version.
	back := res.Held
	if err != nil {
		back = paths
	}
	if perr := a.putBack(back, heads); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("take view %s of %s: %w", v.id, a.ID, err)
	}
	if n := len(res.Commits); n > 0 && a.Hooks.Committed != nil {
		a.Hooks.Committed(n)
	}
	for _, c := range changes {
		switch {
		case secrets[c.path] != "":
			v.rec.Held = setKey(v.rec.Held, c.path, c.hash)
			v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindSecretHeld, Path: c.path})
		case broken[c.path]:
			v.rec.Held = setKey(v.rec.Held, c.path, c.hash)
			v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindFrontMatterHeld, Path: c.path})
		case odd[c.path].Cause != "":
			v.rec.Held = setKey(v.rec.Held, c.path, c.hash)
			v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindWriteHeld, Path: c.path})
			a.log.Warn("a view's write was not taken", "view", v.id, "path", c.path, "cause", odd[c.path].Cause)
		case tree[c.path] != nil:
			if c.present {
				v.rec.Held = setKey(v.rec.Held, c.path, c.hash)
			} else {
				a.viewGot(v, c) // a held deletion: the tip's version comes back
			}
			v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindConstraintsHeld, Path: c.path, Problems: tree[c.path]})
			a.log.Warn("a view's write breaks letta-code's memory limits: not taken", "view", v.id, "path", c.path, "problems", tree[c.path])
		default:
			// Taken, merged, restored or a held deletion: the view is
			// brought to the tip from here.
			a.viewGot(v, c)
		}
	}
	for _, r := range res.Restored {
		v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindReadOnlyRejected, Path: r.Path})
		a.log.Warn("undid a view's write to a read-only block; rejected bytes kept", "view", v.id, "path", r.Path)
	}
	return nil
}

// putBack makes the shared clone's paths hold heads' versions again
// (removed where heads has nil). Under writeMu.
func (a *Unit) putBack(paths []string, heads map[string][]byte) error {
	if len(paths) == 0 {
		return nil
	}
	return a.withTree(func(wt *worktree.Dir) error {
		for _, p := range paths {
			if head := heads[p]; head != nil {
				if _, err := wt.WriteFile(p, head, worktree.Regular, !a.cfg.NoFsync); err != nil {
					return err
				}
			} else if err := wt.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// takeProposed commits the agent's changes as one proposal (a branch
// proposals/<agent>/<stamp> on top of the shared remote tip, pushed at the
// next sync); the view keeps the agent's version until the shared
// branch's version of the file changes. A change any write would be
// refused for (a read-only block, a credential, broken front matter) is
// undone in the view instead.
func (a *Unit) takeProposed(repo *gitmem.Repo, v *view, changes []viewChange) error {
	secrets, rules := a.secretPatterns(), a.frontMatterRules()
	files := map[string][]byte{}
	var refused []viewChange
	for _, c := range changes {
		head, inHead, err := repo.HeadFile(c.path)
		if err != nil {
			return err
		}
		if err := a.checkProposed(c.path, head, inHead, c.data, c.present, secrets, rules); err != nil {
			refused = append(refused, c)
			continue
		}
		if c.present {
			files[c.path] = c.data
			if c.data == nil {
				files[c.path] = []byte{} // empty, not deleted
			}
		} else {
			files[c.path] = nil
		}
	}
	a.undoInView(v, refused, reminders.KindReadOnlyRejected)
	// letta-code's tree rules on the tree the proposal is merged into: a
	// change that makes it worse is held in the view (not proposed), as
	// on the shared branch itself.
	held, err := a.proposalTreeGuard(repo, files, false)
	if err != nil {
		return fmt.Errorf("propose from view %s of %s: %w", v.id, a.ID, err)
	}
	for _, c := range changes {
		e := held[c.path]
		if e == nil {
			continue
		}
		delete(files, c.path)
		if c.present {
			v.rec.Held = setKey(v.rec.Held, c.path, c.hash)
		} else {
			a.viewGot(v, c) // a held deletion: the tip's version comes back
		}
		v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindConstraintsHeld, Path: c.path, Problems: treecheck.ProblemTexts(e.Worse)})
		a.log.Warn("a view's proposal breaks letta-code's memory limits: not proposed", "view", v.id, "path", c.path, "problems", treecheck.ProblemTexts(e.Worse))
	}
	if len(files) == 0 {
		return nil
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	slices.Sort(names)
	prop, err := a.commitProposal(repo, v.id, files, "memory: propose "+strings.Join(names, ", "))
	if err != nil {
		return fmt.Errorf("propose from view %s of %s: %w", v.id, a.ID, err)
	}
	if err := a.recordProposal(prop); err != nil {
		return err
	}
	a.log.Info("a view's change is a proposal; pushed at the next sync", "view", v.id, "branch", prop.Branch)
	for _, c := range changes {
		if _, ok := files[c.path]; ok {
			v.rec.Proposed = setKey(v.rec.Proposed, c.path, c.hash)
		}
	}
	return nil
}

// undoInView puts the tip's version back in the view for changes (at the
// refresh that follows), keeps the agent's bytes as rejected bytes of the
// shared clone, and notes kind for the agent's reminders.
func (a *Unit) undoInView(v *view, changes []viewChange, kind string) {
	for _, c := range changes {
		if c.present {
			if err := a.keepRejected("view-"+v.id+"/"+c.path, c.data); err != nil {
				a.log.Warn("keeping a view's rejected bytes failed; the file stays as the agent wrote it", "view", v.id, "path", c.path, "err", err)
				continue
			}
		}
		a.viewGot(v, c)
		v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: kind, Path: c.path})
		a.log.Info("undid a view's write", "view", v.id, "path", c.path, "reason", kind)
	}
}

// refreshView brings view v to the shared tip head (files): every path
// whose tip version differs from what the view was given is replaced,
// unless the agent changed it (those are returned, to be taken). Under
// v.busy.
func (a *Unit) refreshView(repo *gitmem.Repo, v *view, head plumbing.Hash, files []gitmem.FileEntry) ([]string, error) {
	want := make(map[string]string, len(files))
	for _, f := range files {
		if f.Mode == filemode.Regular || f.Mode == filemode.Executable {
			want[f.Path] = f.Blob.String()
		}
	}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	for p := range v.rec.Files {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var again []string
	var firstErr error
	for _, p := range paths {
		w, have := want[p], v.rec.Files[p]
		if w == have {
			continue
		}
		cur, err := v.tree.Read(p)
		if err != nil && !errors.Is(err, worktree.ErrNotFile) {
			again = append(again, p)
			continue
		}
		if cur != nil && cur.Mode == worktree.Symlink {
			again = append(again, p) // the agent's link: left, never written through
			continue
		}
		var curData []byte
		if cur != nil {
			curData = cur.Data
		}
		got := blobID(curData, cur != nil)
		switch {
		case got == w:
			setFile(&v.rec, p, w)
			continue
		case got == have, got != "" && got == v.rec.Proposed[p]:
			// What the view was given, or the agent's proposal for a file
			// the shared branch changed since (the operator decided).
		default:
			again = append(again, p) // the agent's write: taken first
			continue
		}
		var data []byte
		if w != "" {
			if data, err = repo.Blob(plumbing.NewHash(w)); err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			if data == nil {
				data = []byte{}
			}
		}
		var wrote time.Time
		ok, err := replaceViewFile(v.tree, p, got, curData, data, w != "", a.viewLeased, &wrote)
		if err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("copy %s into view %s: %w", p, v.id, err))
			continue
		}
		if !ok {
			again = append(again, p)
			continue
		}
		if have != "" && !wrote.IsZero() {
			v.refreshed = setKey(v.refreshed, p, refreshedFile{prev: have, wrote: wrote})
		}
		setFile(&v.rec, p, w)
		delete(v.rec.Proposed, p)
	}
	v.rec.Tip = head.String()
	return again, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// refreshedFile is a view file memfsd replaced in place with the tip's
// version: the version it held before (prev, a blob id) and the
// modification time memfsd's write left on it (the file system's own
// clock, the one an agent's write is stamped with).
type refreshedFile struct {
	prev  string
	wrote time.Time
}

// writtenBeforeRefresh is the base of change c when the agent wrote it
// before memfsd last replaced the file with the tip's version: a program
// that reads a file, then writes a new one and renames it over the name
// (sed, an editor) may read the old version, memfsd put the tip's in
// place, and the rename land on top. Its bytes were written before the
// tip's version existed in the view, so they cannot have started from it:
// merged against the version they did start from, the tip's changes (an
// other agent's edit) stay, where against the tip's version they would be
// undone. Only the file's modification time tells, strictly earlier than
// memfsd's write's on the same clock (a tie is taken as after: the
// file's base is what the view was given, as for any later write); an
// agent that sets it back only merges its own write against an older
// base.
func (a *Unit) writtenBeforeRefresh(repo *gitmem.Repo, v *view, c viewChange) ([]byte, bool) {
	r, ok := v.refreshed[c.path]
	if !ok || !c.present || c.written.IsZero() || !c.written.Before(r.wrote) {
		return nil, false
	}
	data, err := a.viewBase(repo, v, r.prev)
	if err != nil {
		return nil, false // the view's base stands
	}
	return data, true
}

// viewGot records that view v holds the agent's change c, kept as the
// base of a later merge.
func (a *Unit) viewGot(v *view, c viewChange) {
	delete(v.refreshed, c.path)
	if c.present {
		if err := a.keepViewBase(v, c.hash, c.data); err != nil {
			a.log.Warn("keeping a view's base failed; a later merge of the file keeps both versions", "view", v.id, "path", c.path, "err", err)
		}
	}
	setFile(&v.rec, c.path, c.hash)
}

// setFile records that the view holds blob h at p ("" absent).
func setFile(rec *viewRecord, p, h string) {
	if h == "" {
		delete(rec.Files, p)
		return
	}
	rec.Files[p] = h
}

func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}
