package gitmem_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The engine's layers, lowest first (docs/engine.md, "How the engine works"),
// and above them the agent's (docs/engine.md, "Above the repository"). A
// package may import its own layer and those below, never one above.
// internal/... holds leaf helpers (atomicfile) every layer may use;
// everything else in the module (daemon, mcpserver, cmd, ...) sits above.
var engineLayers = []struct {
	name     string
	prefixes []string // import paths, or path prefixes ending in "/"
}{
	{"internal helpers", []string{"internal/"}},
	{"git's formats", []string{"gitfmt/"}},
	{"object store, refs and the index", []string{"gitstore", "indexfile"}},
	{"work tree", []string{"worktree"}},
	// The repository's parts, each a noun with one job, beside one
	// another: the embedded remote, history reads, how two histories
	// stand, the replay onto a remote tip, the protocol's client side,
	// the backup refs, the push to a mirror.
	{"embedded remote, history and the repository's parts", []string{"embedded", "history", "ancestry", "replay", "wire", "backups", "mirrorpush"}},
	{"repository", []string{"gitmem"}},
	{"the product's leaves", []string{"letta", "budget", "blocks", "search", "reminders", "memtool", "retry"}},
	{"the agent's parts", []string{"config", "credentials", "remoteurl", "isolate", "records", "rejected", "writeproblem",
		"guard", "treecheck", "blockset", "callrecord", "persongit", "status", "memcontext", "memsearch", "memhistory"}},
	{"the agent unit", []string{"agent"}},
	{"attached to an agent unit", []string{"shared", "mirror"}},
}

const modulePath = "github.com/memfsd/memfsd/"

// layerOf is the index of p's layer in engineLayers, len(engineLayers)
// for the module's packages above the engine, -1 outside the module.
func layerOf(p string) int {
	rel, ok := strings.CutPrefix(p, modulePath)
	if !ok {
		return -1
	}
	for i, l := range engineLayers {
		for _, pre := range l.prefixes {
			if rel == pre || strings.HasSuffix(pre, "/") && strings.HasPrefix(rel, pre) {
				return i
			}
		}
	}
	return len(engineLayers)
}

// TestLayers_ImportOnlyBelow: `go list -deps` of each engine package (its
// whole import closure, not only its own imports) names no package of a
// layer above it.
func TestLayers_ImportOnlyBelow(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json", "github.com/memfsd/memfsd/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	seen := make([]int, len(engineLayers))
	named := map[string]int{} // packages found under each prefix of engineLayers
	dec := json.NewDecoder(&out)
	for {
		var pkg struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		own := layerOf(pkg.ImportPath)
		if own < 0 || own == len(engineLayers) {
			continue
		}
		seen[own]++
		for _, pre := range engineLayers[own].prefixes {
			if rel := strings.TrimPrefix(pkg.ImportPath, modulePath); rel == pre || strings.HasSuffix(pre, "/") && strings.HasPrefix(rel, pre) {
				named[pre]++
			}
		}
		for _, d := range pkg.Deps {
			if l := layerOf(d); l > own {
				above := "the module above the engine"
				if l < len(engineLayers) {
					above = engineLayers[l].name
				}
				t.Errorf("%s (%s) depends on %s (%s): a layer may only use those below it",
					pkg.ImportPath, engineLayers[own].name, d, above)
			}
		}
	}
	for i, n := range seen {
		if n == 0 {
			t.Errorf("no package found in layer %q: the layer list is out of date", engineLayers[i].name)
		}
		for _, pre := range engineLayers[i].prefixes {
			if named[pre] == 0 {
				t.Errorf("no package %q in layer %q: the layer list is out of date", pre, engineLayers[i].name)
			}
		}
	}
}

// TestLayers_WorktreeImportsNoRepository: the work tree's whole import
// closure holds nothing of the repository (gitmem) nor of the packages
// beside it, so nothing in worktree can call back up into them.
func TestLayers_WorktreeImportsNoRepository(t *testing.T) {
	t.Parallel()
	var wt int
	for i, l := range engineLayers {
		if slices.Contains(l.prefixes, "worktree") {
			wt = i
		}
	}
	out, err := exec.Command("go", "list", "-deps", modulePath+"worktree").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		if l := layerOf(d); l > wt {
			above := "the module above the engine"
			if l < len(engineLayers) {
				above = engineLayers[l].name
			}
			t.Errorf("worktree depends on %s (%s)", d, above)
		}
	}
}
