package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
)

// letta-code's MemFS tree constraints and its hook's whole-tree front
// matter (SPEC §9), on every route: the tool's commit guard, the direct
// writes' guard and the outgoing check (a shell's git commit). letta-code
// refuses every commit while the tree breaks a rule; memfsd refuses (or
// holds) only a change that makes the tree worse, so a tree pulled or
// imported broken does not stop unrelated writes.
//
// Cost: treeChecks keeps blocks.TreeConstraints for one tree of the
// repository and moves it to the tree a check starts from by the trees'
// difference (gitmem.TreeReader.Diff, O(change)); a check applies the
// change's files, reports, and takes them back. Each step reads only
// changed blobs and costs O(their depth); only a change of
// .memfs.config.json or of the layout (a root MEMORY.md coming or going)
// goes over every file's kept facts once, reading nothing.

// treeChecks is letta-code's tree checks kept for one tree.
type treeChecks struct {
	// recMu serialises the constraints-held record's read-modify-write
	// (the pipeline and the outgoing check both update it).
	recMu sync.Mutex
	mu    sync.Mutex
	built bool
	tree  plumbing.Hash
	tc    *blocks.TreeConstraints
	// .memfs.config.json in the tree.
	config     []byte
	hasConfig  bool
	configMode filemode.FileMode
	// shared: a shared repository's unit, judged by letta-code's
	// shared-memory policy (blocks.TreeConstraints.ConfigureShared).
	shared bool
	// What tc was last configured with.
	confV2    bool
	confKey   string
	confValid bool
}

// treeEdit is one file of a change: Data nil when deleted.
type treeEdit struct {
	Path string
	Data []byte
	Mode filemode.FileMode
}

func regularMode(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// set puts one file of a change in and returns how to take it back.
func (c *treeChecks) set(path string, data []byte, mode filemode.FileMode) (undo func()) {
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
func (c *treeChecks) configure(requireRoot bool) {
	_, root := c.tc.Get("MEMORY.md")
	v2 := (root || requireRoot) && !c.shared
	key := fmt.Sprint(c.hasConfig, regularMode(c.configMode), string(c.config))
	if c.confValid && v2 == c.confV2 && key == c.confKey {
		return
	}
	if c.shared {
		c.tc.ConfigureShared(c.config, c.hasConfig, regularMode(c.configMode))
	} else {
		c.tc.Configure(v2, c.config, c.hasConfig, regularMode(c.configMode))
	}
	c.confV2, c.confKey, c.confValid = v2, key, true
}

// moveTo brings the kept state to tree, by the difference from the tree
// it describes (everything, the first time).
func (c *treeChecks) moveTo(rd gitmem.TreeReader, tree plumbing.Hash) error {
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

// judge applies edits on top of tree base, one at a time, and leaves out
// each that makes letta-code's report worse than it was before it
// (together: all of them or none). held lists the edits left out, with
// the error saying why. The state is back at base afterwards.
func (c *treeChecks) judge(rd gitmem.TreeReader, base plumbing.Hash, edits []treeEdit, together bool) (held map[int]*blocks.TreeConstraintsError, err error) {
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
	rank := func(e treeEdit) int {
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

// treeGuard judges a commit's changed paths (those verdicts accept) by
// letta-code's tree rules: nil when they are off.
func (a *Agent) treeGuard(b *gitmem.Batch, verdicts []gitmem.Verdict, together bool) (map[int]*blocks.TreeConstraintsError, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	rd, base, err := b.Trees()
	if err != nil {
		return nil, err
	}
	var edits []treeEdit
	var index []int
	for i, v := range b.Views {
		if verdicts != nil && verdicts[i] != gitmem.Accept {
			continue
		}
		if v.Path != blocks.ConstraintsConfigPath && !strings.HasSuffix(v.Path, ".md") {
			continue
		}
		data := v.Data
		if v.Kind != gitmem.ChangeDelete && data == nil {
			data = []byte{}
		}
		edits = append(edits, treeEdit{Path: v.Path, Data: data, Mode: v.Mode})
		index = append(index, i)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	held, err := a.treeChecks.judge(rd, base, edits, together)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[int]*blocks.TreeConstraintsError{}
	for i, e := range held {
		out[index[i]] = e
	}
	return out, nil
}

// constraintsHeldFile lists changes held uncommitted because they make the
// tree break letta-code's MemFS rules more: path → the problems added.
const constraintsHeldFile = "constraints-held.json"

// updateConstraintsHeld adds newly held paths (path → why) to the record
// and, with prune, drops the ones committed or undone since (prune reads
// HEAD: never under the repository's lock, as the outgoing check runs).
func (a *Agent) updateConstraintsHeld(held map[string][]string, committed []string, prune bool) error {
	a.treeChecks.recMu.Lock()
	defer a.treeChecks.recMu.Unlock()
	rec := a.readConstraintsHeld()
	changed := false
	for p := range rec {
		if _, again := held[p]; again {
			continue
		}
		if slices.Contains(committed, p) || prune && !a.differsFromHead(p) {
			delete(rec, p)
			changed = true
		}
	}
	for p, why := range held {
		if fmt.Sprint(rec[p]) != fmt.Sprint(why) {
			rec[p] = why
			changed = true
		}
	}
	if !changed {
		return nil
	}
	path := a.recordPath(constraintsHeldFile)
	if len(rec) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held letta-code limits: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	if err := writeRecord(path, data); err != nil {
		return fmt.Errorf("record held letta-code limits: %w", err)
	}
	return nil
}

func (a *Agent) readConstraintsHeld() map[string][]string {
	rec := map[string][]string{}
	if data, err := os.ReadFile(a.recordPath(constraintsHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// differsFromHead reports whether the folder's rel is not HEAD's (a held
// write or deletion is still there).
func (a *Agent) differsFromHead(rel string) bool {
	repo := a.repository()
	if repo == nil {
		return false
	}
	head, inHead, err := repo.HeadFile(rel)
	if err != nil {
		return true
	}
	work, ok := a.workRead(rel)
	return inHead != ok || !bytes.Equal(head, work)
}

// constraintsHeld is the record narrowed to changes still in the folder
// and not committed.
func (a *Agent) constraintsHeld() map[string][]string {
	rec := a.readConstraintsHeld()
	for p := range rec {
		if !a.differsFromHead(p) {
			delete(rec, p)
		}
	}
	return rec
}

func problemTexts(ps []blocks.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Text
	}
	return out
}

// withTreeGuard runs guard, then letta-code's tree rules over the paths
// it accepts: one that makes the tree worse is held, named in held with
// the problems it adds (each path is a commit of its own: judged in
// order, each on top of those accepted before it).
func (a *Agent) withTreeGuard(guard gitmem.Guard, held map[string][]string) gitmem.Guard {
	return func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
		verdicts, err := guard(b)
		if err != nil {
			return verdicts, err
		}
		bad, err := a.treeGuard(b, verdicts, false)
		if err != nil {
			return nil, err
		}
		for i, e := range bad {
			verdicts[i] = gitmem.Hold
			held[b.Views[i].Path] = problemTexts(e.Worse)
		}
		return verdicts, nil
	}
}

// outgoingTreeGuard judges a push's range (the remote's tree, then the
// range's files in order) by letta-code's tree rules: the files that make
// it worse, with the problems each adds. Files already put back or held
// back are left out.
func (a *Agent) outgoingTreeGuard(files []gitmem.OutgoingFile, remote gitmem.OutgoingRemote, plan gitmem.OutgoingPlan) (map[string][]string, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	var edits []treeEdit
	for _, f := range files {
		if f.Path != blocks.ConstraintsConfigPath && !strings.HasSuffix(f.Path, ".md") {
			continue
		}
		if slices.Contains(plan.ReadOnly, f.Path) || slices.Contains(plan.HoldBack, f.Path) {
			continue
		}
		e := treeEdit{Path: f.Path}
		if f.InLocal {
			data, err := f.Local()
			if err != nil {
				return nil, err
			}
			if data == nil {
				data = []byte{}
			}
			e.Data, e.Mode = data, f.LocalMode()
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	rd, base := remote.Trees()
	held, err := a.treeChecks.judge(rd, base, edits, false)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[string][]string{}
	for i, e := range held {
		out[edits[i].Path] = problemTexts(e.Worse)
	}
	return out, nil
}

// constraintsHeldList is constraintsHeld for status, sorted by path.
func (a *Agent) constraintsHeldList() []reminders.ConstraintsHold {
	var out []reminders.ConstraintsHold
	for p, why := range a.constraintsHeld() {
		out = append(out, reminders.ConstraintsHold{Path: p, Problems: why})
	}
	slices.SortFunc(out, func(x, y reminders.ConstraintsHold) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// proposalTreeGuard judges a proposal's files (path → content, nil
// deletes) on the shared branch's remote tip, the tree an operator merges
// it into, by letta-code's tree rules: the files that make it worse, with
// why (together: all of them when the whole change does). nil when the
// rules are off.
func (a *Agent) proposalTreeGuard(repo *gitmem.Repo, files map[string][]byte, together bool) (map[string]*blocks.TreeConstraintsError, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	var edits []treeEdit
	for p, data := range files {
		if p != blocks.ConstraintsConfigPath && !strings.HasSuffix(p, ".md") {
			continue
		}
		e := treeEdit{Path: p}
		if data != nil {
			e.Data, e.Mode = data, filemode.Regular
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	slices.SortFunc(edits, func(x, y treeEdit) int { return strings.Compare(x.Path, y.Path) })
	base, err := ProposalBase(repo) // the tree the proposal goes on
	if err != nil {
		return nil, err
	}
	var held map[int]*blocks.TreeConstraintsError
	err = repo.WithTreesAt(base, func(rd gitmem.TreeReader, tree plumbing.Hash) error {
		var err error
		held, err = a.treeChecks.judge(rd, tree, edits, together)
		return err
	})
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[string]*blocks.TreeConstraintsError{}
	for i, e := range held {
		out[edits[i].Path] = e
	}
	return out, nil
}
