package agent

import (
	"github.com/memfsd/memfsd/worktree"
)

// The memory folder held open (worktree.Dir): the memory tool's acts and
// the agent's own looks at files inside the folder go through its
// descriptor, never by name, so a folder the agent swaps for a link is not
// followed out of the memory folder. Records outside the folder (under
// <home>/agents/<id>/records) are memfsd's own and stay by name.

// openTree holds the memory folder open; called once the work tree exists
// (setRepo), closed by Close.
func (a *Agent) openTree() {
	wt, err := a.openWorkDir()
	if err != nil {
		a.log.Warn("holding the memory folder open failed; each memory call opens it instead", "err", err)
		return
	}
	if old := a.tree.Swap(wt); old != nil {
		old.Close()
	}
}

// openWorkDir opens the memory folder, its reads capped: never below a
// file a direct write commits (--max-file-bytes), never unbounded.
func (a *Agent) openWorkDir() (*worktree.Dir, error) {
	wt, err := worktree.OpenDir(a.Dir())
	if err != nil {
		return nil, err
	}
	wt.SetMaxRead(max(a.maxFileBytes(), worktree.DefaultMaxRead))
	return wt, nil
}

// closeTree lets the folder go. Under writeMu: no memory-tool call is
// using it (a call holds writeMu throughout), and a call that starts later
// finds it closed and fails cleanly.
func (a *Agent) closeTree() {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if wt := a.tree.Swap(nil); wt != nil {
		wt.Close()
	}
}

// withTree runs fn on the held-open folder, or on one opened for the call
// when none is held (ReadStatus, before the first clone).
func (a *Agent) withTree(fn func(*worktree.Dir) error) error {
	if wt := a.tree.Load(); wt != nil {
		return fn(wt)
	}
	wt, err := a.openWorkDir()
	if err != nil {
		return err
	}
	defer wt.Close()
	return fn(wt)
}

// workExists reports whether something stands at the work path rel,
// reached without passing a link (a path through a link is not there).
func (a *Agent) workExists(rel string) bool {
	return a.withTree(func(wt *worktree.Dir) error {
		_, err := wt.Lstat(rel)
		return err
	}) == nil
}

// workRead reads the work file rel as git would commit it (a link's
// target text for a link, never followed); false when absent.
func (a *Agent) workRead(rel string) ([]byte, bool) {
	var f *worktree.File
	err := a.withTree(func(wt *worktree.Dir) error {
		var err error
		f, err = wt.Read(rel)
		return err
	})
	if err != nil || f == nil {
		return nil, false
	}
	return f.Data, true
}
