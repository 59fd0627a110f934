package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/search"
)

// searchPaths runs a search and returns the hits' paths.
func searchPaths(t *testing.T, a *agent.Agent, q string) string {
	t.Helper()
	res, err := a.Search(q, 10)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.Path)
	}
	return strings.Join(out, " ")
}

func toolRun(t *testing.T, a *agent.Agent, in memtool.Input) {
	t.Helper()
	tool, err := a.MemoryTool()
	if err != nil {
		t.Fatal(err)
	}
	if res := tool.Run(in); res.IsError {
		t.Fatalf("%s: %s", in.Command, res.Content)
	}
}

func ptr(s string) *string { return &s }

// TestAgent_SearchInStep: a write, a rename, a delete, a pull and a replay
// each change the next search's answer; a restart rebuilds the index.
func TestAgent_SearchInStep(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()
	a, err := open(t, cfg, "srch")
	if err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, a, "zebra"); got != "" {
		t.Fatalf("zebra before any write: %q", got)
	}
	// Write.
	toolRun(t, a, memtool.Input{Command: "create", Path: "/memories/zoo/animals.md", FileText: ptr("---\ndescription: Animals at the zoo\n---\nThe zebra sleeps standing.\n")})
	if got := searchPaths(t, a, "zebra"); got != "zoo/animals.md" {
		t.Fatalf("after write: %q", got)
	}
	res, _ := a.Search("zebra", 10)
	if h := res.Hits[0]; len(h.Trail) != 1 || h.Trail[0].Folder != "zoo" || len(h.Lines) != 1 || h.Lines[0].Line != 4 || h.L0 != "Animals at the zoo" {
		t.Fatalf("hit %+v", h)
	}
	// Rename.
	toolRun(t, a, memtool.Input{Command: "rename", OldPath: "/memories/zoo/animals.md", NewPath: "/memories/savanna/animals.md"})
	if got := searchPaths(t, a, "zebra"); got != "savanna/animals.md" {
		t.Fatalf("after rename: %q", got)
	}
	if _, err := a.Overview("/memories/zoo"); !errors.Is(err, agent.ErrBadSearch) {
		t.Fatalf("overview of the renamed-away folder: %v", err)
	}
	o, err := a.Overview("/memories/savanna")
	if err != nil || len(o.Entries) != 1 || o.Entries[0].L0 != "Animals at the zoo" {
		t.Fatalf("overview %+v %v", o, err)
	}
	if txt := agent.OverviewText(o); txt != "/memories/savanna: 1 file, 0 folders\n- animals.md — Animals at the zoo\n" {
		t.Fatalf("overview text %q", txt)
	}
	// Delete.
	toolRun(t, a, memtool.Input{Command: "delete", Path: "/memories/savanna/animals.md"})
	if got := searchPaths(t, a, "zebra"); got != "" {
		t.Fatalf("after delete: %q", got)
	}
	// A direct write into the work tree counts once committed.
	os.WriteFile(filepath.Join(a.Dir(), "okapi.md"), []byte("The okapi hides.\n"), 0o600)
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, a, "okapi"); got != "okapi.md" {
		t.Fatalf("after a direct write: %q", got)
	}
	// Pull: a peer pushes, the agent syncs.
	peer := cliClone(t, srv, "srch")
	os.WriteFile(filepath.Join(peer, "giraffe.md"), []byte("The giraffe is tall.\n"), 0o644)
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-qm", "peer")
	git(t, peer, "push", "-q", "origin", "main")
	if got := searchPaths(t, a, "giraffe"); got != "" {
		t.Fatalf("before pull: %q", got)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, a, "giraffe"); got != "giraffe.md" {
		t.Fatalf("after pull: %q", got)
	}
	// Replay: a local write and a peer's push, then a sync replays ours.
	toolRun(t, a, memtool.Input{Command: "create", Path: "/memories/lion.md", FileText: ptr("The lion roars.\n")})
	git(t, peer, "pull", "-q", "origin", "main")
	os.WriteFile(filepath.Join(peer, "giraffe.md"), []byte("The giraffe eats acacia.\n"), 0o644)
	git(t, peer, "commit", "-qam", "peer 2")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, a, "acacia"); got != "giraffe.md" {
		t.Fatalf("after replay (peer's change): %q", got)
	}
	if got := searchPaths(t, a, "lion roars"); got != "lion.md" {
		t.Fatalf("after replay (ours): %q", got)
	}
	// Restart: a new Agent over the same home builds its index afresh.
	a.Close(ctx)
	b, err := open(t, cfg, "srch")
	if err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, b, "giraffe acacia"); got != "giraffe.md" {
		t.Fatalf("after restart: %q", got)
	}
}

// TestAgent_SearchBadInput: a clear error and nothing written.
func TestAgent_SearchBadInput(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	a, err := open(t, cfg, "srch-bad")
	if err != nil {
		t.Fatal(err)
	}
	head := git(t, a.Dir(), "rev-parse", "HEAD")
	for _, q := range []string{"", "  ", strings.Repeat("x", search.MaxQueryBytes+1), "\xff\xfe", "(((***)))"} {
		if _, err := a.Search(q, 10); !errors.Is(err, agent.ErrBadSearch) {
			t.Errorf("%.20q: %v", q, err)
		}
	}
	if _, err := a.Search("persona", search.MaxLimit+1); !errors.Is(err, agent.ErrBadSearch) {
		t.Errorf("limit: %v", err)
	}
	for _, f := range []string{"/etc", "/memoriesX", "/memories/../x", "nope"} {
		if _, err := a.Overview(f); !errors.Is(err, agent.ErrBadSearch) {
			t.Errorf("overview %q: %v", f, err)
		}
	}
	if _, err := a.Search("[a-z]+.*$", 10); err != nil {
		t.Errorf("regex chars: %v", err)
	}
	if got := git(t, a.Dir(), "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s -> %s", head, got)
	}
	if got := git(t, a.Dir(), "status", "--porcelain", "--ignored"); got != "" {
		t.Errorf("work tree changed: %q", got)
	}
}

// TestAgent_SearchPoolBound: over the pool's bound, the least recently
// searched agent's index is dropped and rebuilt on its next search, with
// the same answer; a closed agent leaves the pool.
func TestAgent_SearchPoolBound(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := &agent.Config{Home: filepath.Join(t.TempDir(), "home"), BaseURL: srv.URL, Token: token, SearchPool: search.NewPool(1)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := open(t, cfg, "pool-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(t, cfg, "pool-b")
	if err != nil {
		t.Fatal(err)
	}
	want := searchPaths(t, a, "persona")
	if want == "" || !agent.SearchBuilt(a) {
		t.Fatalf("a: %q, built %v", want, agent.SearchBuilt(a))
	}
	searchPaths(t, b, "persona")
	if agent.SearchBuilt(a) || !agent.SearchBuilt(b) {
		t.Fatalf("after b's search: a built %v, b built %v; want a dropped", agent.SearchBuilt(a), agent.SearchBuilt(b))
	}
	if got := searchPaths(t, a, "persona"); got != want {
		t.Fatalf("a rebuilt: %q, want %q", got, want)
	}
	b.Close(context.Background())
	if agent.SearchBuilt(b) || cfg.SearchPool.Bytes() <= 0 {
		t.Fatalf("after b closed: built %v, pool %d bytes (a's only)", agent.SearchBuilt(b), cfg.SearchPool.Bytes())
	}
}

// TestAgent_SearchReindexesOnlyWhatChanged: the index is built once, on
// the first search, from every file; after that each write, direct write,
// rename, delete, pull and replay hands the index only the paths it
// changed (counted), never the whole tree, and a search with nothing new
// hands it none.
func TestAgent_SearchReindexesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	const files = 300
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()
	a, err := open(t, cfg, "srch-count")
	if err != nil {
		t.Fatal(err)
	}
	// A tree of 300 files in 10 folders, pushed by a peer and pulled.
	peer := cliClone(t, srv, "srch-count")
	for i := range files {
		dir := filepath.Join(peer, "notes", fmt.Sprintf("f%d", i%10))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%03d.md", i)), fmt.Appendf(nil, "---\ndescription: note %d\n---\nword%d body\n", i, i), 0o644)
	}
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-qm", "300 notes")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	total := len(strings.Fields(git(t, a.Dir(), "ls-files")))
	if total < files {
		t.Fatalf("%d files at HEAD, want at least %d", total, files)
	}
	if n := agent.SearchReindexed(a); n != 0 {
		t.Fatalf("indexed %d paths before any search: the index is built lazily", n)
	}
	if got := searchPaths(t, a, "word7"); got != "notes/f7/n007.md" {
		t.Fatalf("first search: %q", got)
	}
	if n := agent.SearchReindexed(a); n != total {
		t.Fatalf("first search indexed %d paths, want the tree's %d", n, total)
	}
	step := func(what string, want int, query, hit string) {
		t.Helper()
		before := agent.SearchReindexed(a)
		got := strings.Fields(searchPaths(t, a, query))
		slices.Sort(got) // the hits, in any order
		if got := strings.Join(got, " "); got != hit {
			t.Fatalf("%s: search %q = %q, want %q", what, query, got, hit)
		}
		if n := agent.SearchReindexed(a) - before; n != want {
			t.Fatalf("%s: the index was handed %d paths, want %d (of %d)", what, n, want, total)
		}
		t.Logf("%s: %d of %d paths re-indexed", what, want, total)
	}
	step("a search with nothing new", 0, "word8", "notes/f8/n008.md")
	toolRun(t, a, memtool.Input{Command: "create", Path: "/memories/notes/f1/zebra.md", FileText: ptr("The zebra sleeps standing.\n")})
	step("a tool write", 1, "zebra", "notes/f1/zebra.md")
	toolRun(t, a, memtool.Input{Command: "str_replace", Path: "/memories/notes/f2/n002.md", OldStr: ptr("word2 body"), NewStr: ptr("word2 okapi")})
	step("a tool edit", 1, "okapi", "notes/f2/n002.md")
	toolRun(t, a, memtool.Input{Command: "rename", OldPath: "/memories/notes/f1/zebra.md", NewPath: "/memories/savanna/zebra.md"})
	step("a rename", 2, "zebra", "savanna/zebra.md")
	toolRun(t, a, memtool.Input{Command: "delete", Path: "/memories/savanna/zebra.md"})
	step("a delete", 1, "zebra", "")
	os.WriteFile(filepath.Join(a.Dir(), "notes", "f3", "direct.md"), []byte("The giraffe is tall.\n"), 0o600)
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	step("a direct write, committed", 1, "giraffe", "notes/f3/direct.md")
	git(t, peer, "pull", "-q", "origin", "main")
	os.WriteFile(filepath.Join(peer, "notes", "f4", "n004.md"), []byte("word4 acacia\n"), 0o644)
	os.WriteFile(filepath.Join(peer, "notes", "f5", "n005.md"), []byte("word5 acacia\n"), 0o644)
	git(t, peer, "commit", "-qam", "peer edits two")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	step("a pull of two edits", 2, "acacia word4", "notes/f4/n004.md notes/f5/n005.md")
	// A replay: our write and a peer's, then a sync puts ours on top.
	toolRun(t, a, memtool.Input{Command: "create", Path: "/memories/lion.md", FileText: ptr("The lion roars.\n")})
	git(t, peer, "pull", "-q", "origin", "main")
	os.WriteFile(filepath.Join(peer, "notes", "f6", "n006.md"), []byte("word6 baobab\n"), 0o644)
	git(t, peer, "commit", "-qam", "peer edits one")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	step("a replay (ours and the peer's file)", 2, "baobab lion", "lion.md notes/f6/n006.md")
}

// TestAgent_SearchIndexOnDisk: the index is kept on disk beside the
// repository (in the unit's folder, not the memory folder: never
// committed), so the next process loads it instead of building it from
// git — nothing re-indexed when HEAD has not moved, only the changed
// files when it has. One that is corrupt, or a link, is missing: the
// index is built from git as before and saved again.
func TestAgent_SearchIndexOnDisk(t *testing.T) {
	t.Parallel()
	const files = 300
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()
	a, err := open(t, cfg, "srch-disk")
	if err != nil {
		t.Fatal(err)
	}
	peer := cliClone(t, srv, "srch-disk")
	for i := range files {
		dir := filepath.Join(peer, "notes", fmt.Sprintf("f%d", i%10))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%03d.md", i)), fmt.Appendf(nil, "---\ndescription: note %d\n---\nword%d body\n", i, i), 0o644)
	}
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-qm", "300 notes")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	total := len(strings.Fields(git(t, a.Dir(), "ls-files")))
	want := searchPaths(t, a, "word7 note")
	if agent.SearchReindexed(a) != total || agent.SearchLoaded(a) != 0 {
		t.Fatalf("first search: reindexed %d of %d, loaded %d", agent.SearchReindexed(a), total, agent.SearchLoaded(a))
	}
	file := agent.SearchIndexFile(a)
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the index was not saved: %v", err)
	}
	if st := git(t, a.Dir(), "status", "--porcelain", "--ignored"); st != "" {
		t.Fatalf("the memory folder sees the saved index: %q", st)
	}
	reopen := func(what string) *agent.Agent {
		t.Helper()
		a.Close(ctx)
		if a, err = open(t, cfg, "srch-disk"); err != nil {
			t.Fatal(err)
		}
		if got := searchPaths(t, a, "word7 note"); got != want {
			t.Fatalf("%s: search = %q, want %q", what, got, want)
		}
		return a
	}
	a = reopen("loaded")
	if agent.SearchLoaded(a) != 1 || agent.SearchReindexed(a) != 0 {
		t.Fatalf("next process: loaded %d, reindexed %d; want loaded, nothing re-indexed", agent.SearchLoaded(a), agent.SearchReindexed(a))
	}
	// HEAD moves while no process runs: only the changed file re-indexed.
	a.Close(ctx)
	os.WriteFile(filepath.Join(peer, "notes", "f1", "zebra.md"), []byte("The zebra sleeps standing.\n"), 0o644)
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-qm", "zebra")
	git(t, peer, "push", "-q", "origin", "main")
	if a, err = open(t, cfg, "srch-disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := searchPaths(t, a, "zebra"); got != "notes/f1/zebra.md" || agent.SearchLoaded(a) != 1 || agent.SearchReindexed(a) != 1 {
		t.Fatalf("after a pull: search %q, loaded %d, reindexed %d; want the new file only", got, agent.SearchLoaded(a), agent.SearchReindexed(a))
	}
	total++
	good, _ := os.ReadFile(file)

	for _, c := range []struct {
		what string
		put  func()
	}{
		{"cut short", func() { os.WriteFile(file, good[:len(good)/2], 0o600) }},
		{"garbage", func() { os.WriteFile(file, []byte("not an index"), 0o600) }},
		{"a link to a good one", func() {
			other := filepath.Join(t.TempDir(), "index")
			os.WriteFile(other, good, 0o600)
			os.Remove(file)
			os.Symlink(other, file)
		}},
	} {
		a.Close(ctx)
		c.put()
		a = reopen(c.what)
		if agent.SearchLoaded(a) != 0 || agent.SearchReindexed(a) != total {
			t.Fatalf("%s: loaded %d, reindexed %d of %d; want built from git", c.what, agent.SearchLoaded(a), agent.SearchReindexed(a), total)
		}
		if fi, err := os.Lstat(file); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: not saved again as a file: %v", c.what, err)
		}
	}
}

// TestAgent_SearchIndexOnDisk10k measures, at 10,000 files (set
// MEMFSD_SEARCH_10K=1), the first search that builds the index from git
// (what every CLI search and every daemon's first search did before the
// index was kept on disk), then a new process's first search and a CLI
// search (ReadSearch), which load it. Figures in docs/performance.md.
func TestAgent_SearchIndexOnDisk10k(t *testing.T) {
	if os.Getenv("MEMFSD_SEARCH_10K") == "" {
		t.Skip("MEMFSD_SEARCH_10K not set")
	}
	const files = 10000
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()
	peer := cliClone(t, srv, "s10k")
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	for i := range files {
		dir := filepath.Join(peer, fmt.Sprintf("d%02d", i%40), fmt.Sprintf("e%d", i%7))
		os.MkdirAll(dir, 0o755)
		var b strings.Builder
		fmt.Fprintf(&b, "---\ndescription: note %d on %s and %s\n---\n", i, words[i%26], words[(i/26)%26])
		for j := range 150 {
			fmt.Fprintf(&b, "%s%d %s ", words[(i*7+j)%26], (i*31+j*17)%5000, words[(i+j*3)%26])
			if j%12 == 11 {
				b.WriteString("\n")
			}
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%05d.md", i)), []byte(b.String()), 0o644)
	}
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-qm", "10k notes")
	git(t, peer, "push", "-q", "origin", "main")
	a, err := open(t, cfg, "s10k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	timed := func(what string, f func()) time.Duration {
		start := time.Now()
		f()
		d := time.Since(start)
		t.Logf("%s: %v", what, d.Round(time.Millisecond))
		return d
	}
	var want string
	timed("first search, built from git (and saved)", func() { want = searchPaths(t, a, "kilo123 note") })
	timed("a second search in the same process", func() { searchPaths(t, a, "zulu7") })
	a.Close(ctx)
	if a, err = open(t, cfg, "s10k"); err != nil {
		t.Fatal(err)
	}
	timed("a new process's first search, loaded from disk", func() {
		if got := searchPaths(t, a, "kilo123 note"); got != want {
			t.Fatalf("loaded: %q, want %q", got, want)
		}
	})
	a.Close(ctx)
	fi, _ := os.Stat(agent.SearchIndexFile(a))
	t.Logf("the saved index: %.1f MiB", float64(fi.Size())/(1<<20))
	for range 3 {
		timed("CLI search (ReadSearch), loaded from disk", func() {
			if _, err := agent.ReadSearch(cfg, "s10k", "kilo123 note", 10); err != nil {
				t.Fatal(err)
			}
		})
	}
	os.Remove(agent.SearchIndexFile(a))
	timed("CLI search with no index on disk (as every one before), built from git", func() {
		if _, err := agent.ReadSearch(cfg, "s10k", "kilo123 note", 10); err != nil {
			t.Fatal(err)
		}
	})
}
