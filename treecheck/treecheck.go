// Package treecheck is letta-code's MemFS tree constraints and its hook's
// whole-tree front matter (SPEC §9), kept for one tree of a repository and
// judged on a change. The agent applies them on every route: the tool's
// commit guard, the direct writes' guard and the outgoing check (a
// shell's git commit). letta-code
// refuses every commit while the tree breaks a rule; memfsd refuses (or
// holds) only a change that makes the tree worse, so a tree pulled or
// imported broken does not stop unrelated writes.
//
// Cost: Checks keeps blocks.TreeConstraints for one tree of the
// repository and moves it to the tree a check starts from by the trees'
// difference (history.TreeReader.Diff, O(change)); a check applies the
// change's files, reports, and takes them back. Each step reads only
// changed blobs and costs O(their depth); only a change of
// .memfs.config.json or of the layout (a root MEMORY.md coming or going)
// goes over every file's kept facts once, reading nothing.
package treecheck

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/history"
)

// Checks is letta-code's tree checks kept for one tree. Safe for
// concurrent use.
type Checks struct {
	// Shared: a shared repository's unit, judged by letta-code's
	// shared-memory policy (blocks.TreeConstraints.ConfigureShared). Set
	// before the first Judge.
	Shared bool

	mu    sync.Mutex
	built bool
	tree  plumbing.Hash
	tc    *blocks.TreeConstraints
	// .memfs.config.json in the tree.
	config     []byte
	hasConfig  bool
	configMode filemode.FileMode
	// What tc was last configured with.
	confV2    bool
	confKey   string
	confValid bool
}

// Edit is one file of a change: Data nil when deleted.
type Edit struct {
	Path string
	Data []byte
	Mode filemode.FileMode
}

func regularMode(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// set puts one file of a change in and returns how to take it back.
func (c *Checks) set(path string, data []byte, mode filemode.FileMode) (undo func()) {
	if path == blocks.ConstraintsConfigPath {
		old, had, oldMode := c.config, c.hasConfig, c.configMode
		c.config, c.hasConfig, c.configMode = data, data != nil, mode
		return func() { c.config, c.hasConfig, c.configMode = old, had, oldMode }
	}
	if !strings.HasSuffix(path, ".md") {
		return func() {}
	}
	prev, had := c.tc.Get(path)
	if data == nil {
		c.tc.Remove(path)
	} else {
		c.tc.Set(path, blocks.FactsOf(path, data, regularMode(mode)))
	}
	return func() {
		if had {
			c.tc.Set(path, prev)
		} else {
			c.tc.Remove(path)
		}
	}
}

// configure sets the layout and configuration in tc when they changed:
// v2 when the tree has a root MEMORY.md or requireRoot (HEAD has one).
func (c *Checks) configure(requireRoot bool) {
	_, root := c.tc.Get("MEMORY.md")
	v2 := (root || requireRoot) && !c.Shared
	key := fmt.Sprint(c.hasConfig, regularMode(c.configMode), string(c.config))
	if c.confValid && v2 == c.confV2 && key == c.confKey {
		return
	}
	if c.Shared {
		c.tc.ConfigureShared(c.config, c.hasConfig, regularMode(c.configMode))
	} else {
		c.tc.Configure(v2, c.config, c.hasConfig, regularMode(c.configMode))
	}
	c.confV2, c.confKey, c.confValid = v2, key, true
}

// moveTo brings the kept state to tree, by the difference from the tree
// it describes (everything, the first time).
func (c *Checks) moveTo(rd history.TreeReader, tree plumbing.Hash) error {
	if c.built && c.tree == tree {
		return nil
	}
	from := c.tree
	if !c.built {
		c.tc, c.config, c.hasConfig, c.configMode, c.confValid = blocks.NewTreeConstraints(), nil, false, 0, false
		from = plumbing.ZeroHash
	}
	c.built = false // until done: a failed move starts over next time
	diffs, err := rd.Diff(from, tree)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		var data []byte
		if !d.ToBlob.IsZero() {
			if d.Path != blocks.ConstraintsConfigPath && !strings.HasSuffix(d.Path, ".md") {
				continue
			}
			if data, err = rd.Blob(d.ToBlob); err != nil {
				return err
			}
		}
		c.set(d.Path, data, d.ToMode)
	}
	c.tree, c.built = tree, true
	return nil
}

// Judge applies edits on top of tree base, one at a time, and leaves out
// each that makes letta-code's report worse than it was before it
// (together: all of them or none). held lists the edits left out, with
// the error saying why. The state is back at base afterwards.
func (c *Checks) Judge(rd history.TreeReader, base plumbing.Hash, edits []Edit, together bool) (held map[int]*blocks.TreeConstraintsError, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.moveTo(rd, base); err != nil {
		return nil, fmt.Errorf("letta-code tree checks: %w", err)
	}
	_, requireRoot := c.tc.Get("MEMORY.md")
	baseConfig, baseHas, baseMode := string(c.config), c.hasConfig, c.configMode
	configChanged := func() bool {
		return c.hasConfig != baseHas || string(c.config) != baseConfig || (c.hasConfig && c.configMode != baseMode)
	}
	// A change that turns the folder into memfs v2 (a root MEMORY.md) is
	// judged against the tree as found read as v2 too: what the layout
	// asks of files already there (indexes) is not this change's doing.
	layout := requireRoot
	for _, e := range edits {
		layout = layout || e.Path == "MEMORY.md" && e.Data != nil
	}
	c.configure(layout)
	before := c.tc.Report(requireRoot, false)
	var undos []func()
	defer func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
		c.configure(requireRoot)
	}()
	held = map[int]*blocks.TreeConstraintsError{}
	// Indexes written go first and indexes removed last: a folder's
	// MEMORY.md and the files below it added (or removed) in one change
	// (a shell commit, direct writes) are judged with the index in place
	// whatever order the change lists them in (the outgoing range's
	// comes from a tree diff, in no fixed order).
	rank := func(e Edit) int {
		switch {
		case path.Base(e.Path) != "MEMORY.md":
			return 1
		case e.Data != nil:
			return 0
		}
		return 2
	}
	order := make([]int, 0, len(edits))
	for r := 0; r < 3; r++ {
		for i, e := range edits {
			if rank(e) == r {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		e := edits[i]
		undo := c.set(e.Path, e.Data, e.Mode)
		if together {
			undos = append(undos, undo)
			continue
		}
		c.configure(layout)
		after := c.tc.Report(requireRoot, configChanged())
		if worse := after.Worse(before); len(worse) > 0 {
			held[i] = &blocks.TreeConstraintsError{Report: after, Worse: worse}
			undo()
			continue
		}
		undos = append(undos, undo)
		before = after
	}
	if together {
		c.configure(layout)
		after := c.tc.Report(requireRoot, configChanged())
		if worse := after.Worse(before); len(worse) > 0 {
			err := &blocks.TreeConstraintsError{Report: after, Worse: worse}
			for i := range edits {
				held[i] = err
			}
		}
	}
	return held, nil
}
