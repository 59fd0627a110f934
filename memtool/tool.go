// Package memtool is Anthropic's memory tool (memory_20250818) over an
// agent's memory folder: the reference handler's commands and answers,
// stricter path rules, read-only blocks, a secret guard, and one commit per
// successful write.
package memtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/internal/atomicfile"
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
	// Dir is the memory folder (what /memories maps to).
	Dir string
	// Commit records paths (relative, slash-separated) as one commit.
	Commit func(paths []string, message string) error
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

	own sync.Mutex
}

type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErr(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

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
	mu := t.Mu
	if mu == nil {
		mu = &t.own
	}
	mu.Lock()
	defer mu.Unlock()
	out, err := t.run(in)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return Result{Content: te.msg, IsError: true}
		}
		return Result{Content: "Error: " + err.Error(), IsError: true, internal: true}
	}
	return Result{Content: out}
}

// Final reports whether the result is the call's answer for good: a success
// or the tool's own refusal. A failure of memfsd's (a lock, a full disk) is
// not: a retry of the same call may succeed.
func (r Result) Final() bool { return !r.internal }

func (t *Tool) run(in Input) (string, error) {
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

func (t *Tool) checkSecret(text string) error {
	if name, ok := SecretIn(t.Secrets, text); ok {
		return toolErr("Refused: the text looks like a credential (%s). Memory is synced to git and must never hold secrets; leave the secret out and write the rest.", name)
	}
	return nil
}

// readIfExists returns a file's content, nil when it does not exist.
func readIfExists(abs string) ([]byte, error) {
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

func (t *Tool) checkWrite(rel, shown string, old, new []byte) error {
	if err := blocks.CheckAgentWrite(rel, old, new); err != nil {
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

// change is a file's content before and after a write (nil: absent).
type change struct {
	rel      string
	old, new []byte
}

// apply writes the changes, commits them as one commit, and undoes them
// all when any step fails.
func (t *Tool) apply(changes []change, message string) error {
	done := make([]change, 0, len(changes))
	undo := func() {
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			abs := filepath.Join(t.Dir, filepath.FromSlash(c.rel))
			if c.old == nil {
				os.Remove(abs)
				removeEmptyParents(t.Dir, filepath.Dir(abs))
			} else {
				writeAtomic(t.Dir, abs, c.old, true)
			}
		}
	}
	for _, c := range changes {
		abs := filepath.Join(t.Dir, filepath.FromSlash(c.rel))
		var err error
		if c.new == nil {
			err = os.Remove(abs)
			if err == nil {
				removeEmptyParents(t.Dir, filepath.Dir(abs))
			}
		} else {
			err = writeAtomic(t.Dir, abs, c.new, t.Commit == nil || !t.CommitHardens)
		}
		if err != nil {
			undo()
			return fmt.Errorf("write %s: %w", c.rel, err)
		}
		done = append(done, c)
	}
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.rel)
	}
	if t.Commit != nil {
		if err := t.Commit(paths, message); err != nil {
			undo()
			var refused *blocks.RefusedError
			if errors.As(err, &refused) {
				if errors.Is(refused, blocks.ErrReadOnlyKey) {
					return toolErr("%s: the read_only key in front matter can only be changed by the operator", display(refused.Path))
				}
				return toolErr("%s is read-only and cannot be modified", display(refused.Path))
			}
			return fmt.Errorf("commit: %w (the write was undone)", err)
		}
	}
	return nil
}

// writeAtomic writes data to abs through a temporary file (fsynced when
// sync, then renamed), file 0600, new folders 0700 whatever the umask.
func writeAtomic(root, abs string, data []byte, sync bool) error {
	if err := mkdirPrivate(root, filepath.Dir(abs)); err != nil {
		return err
	}
	return atomicfile.Write(abs, data, 0o600, sync)
}

// mkdirPrivate creates dir and its missing parents below root as 0700.
func mkdirPrivate(root, dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is a file", dir)
		}
		return nil
	}
	if dir != root {
		if err := mkdirPrivate(root, filepath.Dir(dir)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o700)
}

func removeEmptyParents(root, dir string) {
	for dir != root && strings.HasPrefix(dir, root) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// filesBelow lists the regular files below dir (relative to the memory
// folder), sorted, and the entries below it that are not memory paths
// (worktree.Skip: a nested repository's .git, ...; memfsd's temporary
// files left out), which are never committed and not descended into.
func (t *Tool) filesBelow(rel, abs string) (files, skipped []string, err error) {
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == abs {
			if !d.IsDir() {
				files = append(files, rel)
			}
			return nil
		}
		r, _ := filepath.Rel(t.Dir, p)
		r = filepath.ToSlash(r)
		if skip, why := worktree.Skip(r, d.IsDir()); skip {
			if why != "" { // not memfsd's own temporary files
				skipped = append(skipped, r)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, r)
		}
		return nil
	})
	slices.Sort(files)
	return files, skipped, err
}

func message(in Input, def string) string {
	if r := strings.TrimSpace(in.Reason); r != "" {
		return r
	}
	return def
}
