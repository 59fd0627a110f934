// Package memtool is Anthropic's memory tool (memory_20250818) over an
// agent's memory folder: the reference handler's commands and answers,
// stricter path rules, read-only blocks, a secret guard, and one commit per
// successful write.
package memtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/worktree"
)

// Input is one tool call, as the model sends it.
type Input struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	InsertText *string `json:"insert_text"`
	ViewRange  []int   `json:"view_range"`
	OldPath    string  `json:"old_path"`
	NewPath    string  `json:"new_path"`
	// Reason, when given, becomes the commit message.
	Reason string `json:"reason"`
}

// Result is the tool's answer.
type Result struct {
	Content  string `json:"content"`
	IsError  bool   `json:"is_error"`
	internal bool   // memfsd's own failure, not the tool's answer
}

// ViewLimit is where a file view is cut, in characters.
const ViewLimit = 16000

// Tool runs memory-tool calls on one memory folder.
type Tool struct {
	// Dir is the memory folder (what /memories maps to), by name: opened
	// for each call when Tree is nil.
	Dir string
	// Tree is the memory folder held open (its owner closes it). Every
	// file step of every command goes through it, relative to its
	// descriptor, and never passes a link the agent placed.
	Tree *worktree.Dir
	// Commit records paths (relative, slash-separated) as one commit and
	// returns its id ("" when nothing differed from HEAD).
	Commit func(paths []string, message string) (string, error)
	// CommitHardens says a successful Commit also makes the tool's file
	// writes durable (memfsd's commit flushes the whole filesystem with
	// syncfs before its ref moves, and hardens the files itself when there
	// was nothing to commit), so the tool skips its own fsync per file:
	// one flush per write instead of two.
	CommitHardens bool
	// Secrets are refused in written text; nil or empty disables the guard.
	Secrets []SecretPattern
	// Mu serialises calls with other writers of the folder (the daemon's
	// watcher); nil means a private mutex.
	Mu sync.Locker
	// BeforeWrite, when set (tests), runs once a command has read what it
	// changes and before it writes.
	BeforeWrite func()

	own sync.Mutex
}

// call is one Run: the tool and the folder it acts in.
type call struct {
	*Tool
	wt *worktree.Dir
	// letta is set for a call in letta-code's dialect: its refusals are
	// worded as letta-code words them.
	letta *lettaRun
	// afterApply runs once a letta-code command's commit is made (a
	// deleted folder's remains are removed).
	afterApply func()
}

// refusal is the answer to a write the commit's guard refused at rel
// (blocks.ErrReadOnly or blocks.ErrReadOnlyKey).
func (t *call) refusal(rel string, err error) error {
	var tree *blocks.TreeConstraintsError
	if errors.As(err, &tree) {
		// letta-code's pre-commit hook would refuse the tree (SPEC §9).
		if t.letta != nil {
			return lettaErr("%s: %s", t.letta.prefix, tree.Error())
		}
		texts := make([]string, len(tree.Worse))
		for i, p := range tree.Worse {
			texts[i] = p.Text
		}
		return toolErr("%s: not saved: the memory would break letta-code's limits (folders at most 2 deep, files at most 20,000 characters, root memory at most 65,536, unless .memfs.config.json says otherwise): %s", display(rel), strings.Join(texts, "; "))
	}
	var rules *blocks.FrontMatterRulesError
	if errors.As(err, &rules) {
		// letta-code's pre-commit hook refused it (SPEC §9): its output.
		if t.letta != nil {
			return lettaErr("%s: %s", t.letta.prefix, rules.Error())
		}
		return toolErr("%s: front matter not valid, not saved: %s", display(rel), strings.Join(rules.Errors, "; "))
	}
	if errors.Is(err, blocks.ErrFrontMatterBroken) {
		// Judged against HEAD by the commit's guard (SPEC §8).
		if t.letta != nil {
			return lettaErr("%s: %s: the edit would break the file's frontmatter (the --- block at its top); keep its key: value lines and write below the closing ---", t.letta.prefix, rel)
		}
		return toolErr("%s: the edit would break the file's front matter (the --- block at its top); keep its key: value lines intact and write below the closing ---", display(rel))
	}
	if t.letta != nil {
		return t.letta.refused(rel, err, nil)
	}
	if errors.Is(err, blocks.ErrReadOnlyKey) {
		return toolErr("%s: the read_only key in front matter can only be changed by the operator", display(rel))
	}
	return toolErr("%s is read-only and cannot be modified", display(rel))
}

type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErr(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

// Refusal is a Commit hook's refusal of a write: the write is undone and
// Text is the tool's answer (an error the agent reads, not memfsd's failure).
type Refusal struct{ Text string }

func (e *Refusal) Error() string { return e.Text }

// Decode parses a tool call; unknown fields are refused, so a typo in a
// field name is an error, not a silent no-op.
func Decode(data []byte) (Input, error) {
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("memory tool input: %w", err)
	}
	return in, nil
}

// Run executes one call. A failed call changes nothing.
func (t *Tool) Run(in Input) Result {
	return t.do(func(c *call) (string, error) { return c.run(in) })
}

// do runs one command under the tool's lock on the memory folder and turns
// its outcome into the tool's answer.
func (t *Tool) do(command func(*call) (string, error)) Result {
	mu := t.Mu
	if mu == nil {
		mu = &t.own
	}
	mu.Lock()
	defer mu.Unlock()
	c := &call{Tool: t, wt: t.Tree}
	if c.wt == nil {
		wt, err := worktree.OpenDir(t.Dir)
		if err != nil {
			return Result{Content: fmt.Sprintf("memory folder unavailable: %v", err), IsError: true}
		}
		defer wt.Close()
		c.wt = wt
	}
	out, err := command(c)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return Result{Content: te.msg, IsError: true}
		}
		if refusedOnWay(err) {
			// A folder on the way became a link (or a file) after the
			// command looked: the kernel refused to pass it, and nothing
			// was done outside.
			return Result{Content: errViaSymlink.Error(), IsError: true}
		}
		return Result{Content: "Error: " + err.Error(), IsError: true, internal: true}
	}
	return Result{Content: out}
}

// Final reports whether the result is the call's answer for good: a success
// or the tool's own refusal. A failure of memfsd's (a lock, a full disk) is
// not: a retry of the same call may succeed.
func (r Result) Final() bool { return !r.internal }

func (t *call) run(in Input) (string, error) {
	switch in.Command {
	case "view":
		return t.view(in)
	case "create":
		return t.create(in)
	case "str_replace":
		return t.strReplace(in)
	case "insert":
		return t.insert(in)
	case "delete":
		return t.delete(in)
	case "rename":
		return t.rename(in)
	case "":
		return "", toolErr("Missing command: use one of view, create, str_replace, insert, delete, rename")
	}
	return "", toolErr("Unknown command: %s", in.Command)
}

func need[T any](v *T, field, command string) (T, error) {
	if v == nil {
		var zero T
		return zero, toolErr("Missing required parameter `%s` for command `%s`", field, command)
	}
	return *v, nil
}

func (t *call) checkSecret(text string) error {
	if name, ok := SecretIn(t.Secrets, text); ok {
		return toolErr("Refused: the text looks like a credential (%s). Memory is synced to git and must never hold secrets; leave the secret out and write the rest.", name)
	}
	return nil
}

func (t *call) checkWrite(rel, shown string, old, new []byte) error {
	if err := blocks.CheckAgentWrite(rel, old, new); err != nil {
		if t.letta != nil {
			return t.letta.refused(shown, err, new)
		}
		if errors.Is(err, blocks.ErrReadOnlyKey) {
			return toolErr("%s: the read_only key in front matter can only be changed by the operator", shown)
		}
		return toolErr("%s is read-only and cannot be modified", shown)
	}
	if err := blocks.CheckLimit(old, new); err != nil {
		return toolErr("%s", err.Error())
	}
	// The whole file as it would be, not only the new text: a secret put
	// together across two edits is refused too.
	if new != nil {
		if err := t.checkSecret(string(new)); err != nil {
			return err
		}
	}
	return nil
}

// change is what stands at a path before and after a write (nil: absent),
// with its kind: a link moved by a rename stays a link, and an undo puts
// back exactly what was there.
type change struct {
	rel              string
	old, new         []byte
	oldMode, newMode worktree.Mode
}

// apply writes the changes, commits them as one commit, and undoes them
// all when any step fails. Every step acts through t.wt: a folder on the
// way swapped for a link makes the kernel refuse the step (undo included).
// It returns the commit's id ("" when nothing differed from HEAD, or no
// Commit is set).
func (t *call) apply(changes []change, message string) (string, error) {
	if t.BeforeWrite != nil {
		t.BeforeWrite()
	}
	done := make([]change, 0, len(changes))
	undo := func() {
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			if c.old == nil {
				t.wt.Remove(c.rel)
				t.removeEmptyParents(c.rel)
			} else {
				t.wt.WriteFile(c.rel, c.old, c.oldMode, true)
			}
		}
	}
	for _, c := range changes {
		var err error
		if c.new == nil {
			err = t.wt.Remove(c.rel)
			if err == nil {
				t.removeEmptyParents(c.rel)
			}
		} else {
			// New folders are made 0700 and the file 0600 (a link as a
			// link), whatever the umask.
			_, err = t.wt.WriteFile(c.rel, c.new, c.newMode, t.Commit == nil || !t.CommitHardens)
		}
		if err != nil {
			undo()
			if refusedOnWay(err) {
				if perr := t.checkParents(c.rel); perr != nil {
					return "", perr // a file there now: say so
				}
				return "", errViaSymlink
			}
			return "", fmt.Errorf("write %s: %w", c.rel, err)
		}
		done = append(done, c)
	}
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.rel)
	}
	if t.Commit == nil {
		return "", nil
	}
	id, err := t.Commit(paths, message)
	if err != nil {
		undo()
		var refused *blocks.RefusedError
		if errors.As(err, &refused) {
			return "", t.refusal(refused.Path, refused.Err)
		}
		var refusal *Refusal
		if errors.As(err, &refusal) {
			return "", toolErr("%s", refusal.Text)
		}
		return "", fmt.Errorf("commit: %w (the write was undone)", err)
	}
	return id, nil
}

// removeEmptyParents removes the folders above rel that are left empty; a
// file or link that took a folder's name meanwhile is left alone.
func (t *call) removeEmptyParents(rel string) {
	for dir := path.Dir(rel); dir != "." && dir != ""; dir = path.Dir(dir) {
		if t.wt.RemoveDir(dir) != nil {
			return
		}
	}
}

// filesBelow lists the files below the folder rel (relative to the memory
// folder; links count as files, never followed), sorted, and the entries
// below it that are not memory paths (worktree.Skip: a nested repository's
// .git, ...; the root's own .git left out), which are never
// committed and not descended into. Folders are listed through t.wt.
func (t *call) filesBelow(rel string) (files, skipped []string, err error) {
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := t.wt.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			r := dir + "/" + e.Name
			if skip, why := worktree.Skip(r, e.IsDir()); skip {
				if why != "" { // not the root's own .git
					skipped = append(skipped, r)
				}
				continue
			}
			if e.IsDir() {
				if err := walk(r); err != nil {
					return err
				}
			} else {
				files = append(files, r)
			}
		}
		return nil
	}
	err = walk(rel)
	slices.Sort(files)
	return files, skipped, err
}

func message(in Input, def string) string {
	if r := strings.TrimSpace(in.Reason); r != "" {
		return r
	}
	return def
}
