package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/retry"
)

const token = "tok-0123456789-secret"

type rig struct {
	srv     *gitserver.Server
	a       *agent.Agent
	host    *mcpserver.Host
	cs      *mcp.ClientSession
	mu      sync.Mutex
	updated []string
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newRig runs agent id (its loops on, as the daemon and `memfsd mcp` run
// it) on a real git server, its MCP host, and a Go SDK client session.
func newRig(t *testing.T, opts mcpserver.Options, pull time.Duration) *rig {
	t.Helper()
	r := &rig{srv: gitserver.New(t, token)}
	cfg := &agent.Config{Home: filepath.Join(t.TempDir(), "home"), BaseURL: r.srv.URL, Token: token,
		Retry: retry.Policy{Initial: 10 * time.Millisecond, Multiplier: 2, Max: 50 * time.Millisecond, Budget: 300 * time.Millisecond, AttemptTimeout: 5 * time.Second}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, "me")
	if err != nil {
		t.Fatal(err)
	}
	a.Background = true
	a.PullInterval = pull
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	waitFor(t, "the first clone", a.Ready)
	// One turn: the start-up sync is over when it answers.
	if res := a.Turn(nil, 10*time.Second); res.Outcome == agent.OutcomeDelayed {
		t.Fatalf("start-up: %+v", res)
	}
	r.a = a
	r.host = mcpserver.NewHost(a, opts)
	t.Cleanup(r.host.Close)
	r.cs = r.connect(t)
	return r
}

// connect opens another client session on the host (in memory).
func (r *rig) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.host.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			r.mu.Lock()
			r.updated = append(r.updated, req.Params.URI)
			r.mu.Unlock()
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-done })
	return cs
}

func (r *rig) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func (r *rig) log(t *testing.T) string {
	return testgit.Run(t, r.a.Dir(), "log", "--format=%s")
}

func (r *rig) remoteHead(t *testing.T) string {
	out, err := testgit.Try(r.srv.RepoDir("me"), "rev-parse", "refs/heads/main")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func (r *rig) localHead(t *testing.T) string {
	return strings.TrimSpace(testgit.Run(t, r.a.Dir(), "rev-parse", "HEAD"))
}

func TestTools_EditsAreCommitsPushedWhenIdle(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: 300 * time.Millisecond}, 0)
	tools, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "memory_history" || tl.Name == "memory_show" || tl.Name == "memory_search" {
			if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
				t.Errorf("%s: no readOnlyHint", tl.Name)
			}
		}
	}
	if got := strings.Join(names, ","); got != "memory,memory_history,memory_search,memory_show,memory_sync" {
		t.Fatalf("tools = %s", got)
	}

	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/notes.md", "file_text": "alpha\nbeta\n"}); isErr {
		t.Fatalf("create: %s", text)
	}
	if text, isErr := r.call(t, "memory", map[string]any{"command": "str_replace", "path": "/memories/notes.md", "old_str": "beta", "new_str": "gamma"}); isErr {
		t.Fatalf("str_replace: %s", text)
	}
	text, isErr := r.call(t, "memory", map[string]any{"command": "view", "path": "/memories/notes.md"})
	if isErr || !strings.HasPrefix(text, "Here's the content of /memories/notes.md with line numbers:") || !strings.Contains(text, "     2\tgamma") {
		t.Fatalf("view: %q", text)
	}
	if text, isErr := r.call(t, "memory", map[string]any{"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/topics/notes.md"}); isErr {
		t.Fatalf("rename: %s", text)
	}
	// A read-only block: the API's text, as a result with isError.
	text, isErr = r.call(t, "memory", map[string]any{"command": "str_replace", "path": "/memories/system/persona.md", "old_str": "a", "new_str": "b"})
	if !isErr || !strings.Contains(text, "/memories/system/persona.md is read-only and cannot be modified") {
		t.Fatalf("persona write: isError=%v %q", isErr, text)
	}
	log := r.log(t)
	for _, want := range []string{"memory: create notes.md", "memory: str_replace notes.md", "memory: rename notes.md"} {
		if !strings.Contains(log, want) {
			t.Errorf("git log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "persona") {
		t.Errorf("the refused write made a commit:\n%s", log)
	}
	// No call for PushIdle: pushed.
	local := r.localHead(t)
	waitFor(t, "the idle push", func() bool { return r.remoteHead(t) == local })

	hist, isErr := r.call(t, "memory_history", map[string]any{"path": "/memories/topics/notes.md"})
	if isErr || !strings.Contains(hist, "memory: rename") {
		t.Fatalf("history: %s", hist)
	}
	show, isErr := r.call(t, "memory_show", map[string]any{"path": "topics/notes.md"})
	if isErr || show != "alpha\ngamma\n" {
		t.Fatalf("show: %q", show)
	}
}

func TestTools_SyncPushesNow(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/a.md", "file_text": "x\n"}); isErr {
		t.Fatal(text)
	}
	if r.remoteHead(t) == r.localHead(t) {
		t.Fatal("pushed before memory_sync (PushIdle is an hour)")
	}
	text, isErr := r.call(t, "memory_sync", map[string]any{})
	if isErr || !strings.HasPrefix(text, "sync: pushed") {
		t.Fatalf("memory_sync: %q", text)
	}
	if r.remoteHead(t) != r.localHead(t) {
		t.Fatal("memory_sync answered pushed but the remote is behind")
	}
}

func TestTools_BadInputAnswersAndWritesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	before := r.log(t)
	if _, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool answered no error")
	}
	for _, args := range []any{
		map[string]any{"command": "create", "path": 5, "file_text": "x"},
		map[string]any{"command": "create", "path": "/memories/x.md", "file_text": []int{1}},
		map[string]any{"command": "explode", "path": "/memories/x.md"},
		map[string]any{"command": "create", "path": "/memories/../etc/x", "file_text": "x"},
		map[string]any{"command": "create", "path": "/memories/x.md", "file_text": "x", "path2": "y"},
	} {
		text, isErr := r.call(t, "memory", args)
		if !isErr || text == "" {
			t.Errorf("%v: isError=%v %q", args, isErr, text)
		}
	}
	if text, isErr := r.call(t, "memory_show", map[string]any{"path": 7}); !isErr || !strings.Contains(text, "invalid input") {
		t.Errorf("memory_show with a number: %v %q", isErr, text)
	}
	if after := r.log(t); after != before {
		t.Fatalf("bad input made commits:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(r.a.Dir(), "x.md")); err == nil {
		t.Fatal("bad input left a file")
	}
	// Still serving.
	if text, isErr := r.call(t, "memory", map[string]any{"command": "view", "path": "/memories"}); isErr {
		t.Fatalf("view after bad input: %s", text)
	}
}

func TestResources_ListReadSubscribe(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 100*time.Millisecond)
	ctx := context.Background()
	list, err := r.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, res := range list.Resources {
		if res.URI == "memory:///system/persona.md" {
			found = res.MIMEType == "text/markdown"
		}
	}
	if !found {
		t.Fatalf("no memory:///system/persona.md (text/markdown) in %d resources", len(list.Resources))
	}
	read, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory:///system/persona.md"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text == "" {
		t.Fatalf("read persona: %v %+v", err, read)
	}
	prompt, err := r.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "memory_context"})
	if err != nil || !strings.Contains(prompt.Messages[0].Content.(*mcp.TextContent).Text, "<memory_blocks>") {
		t.Fatalf("context prompt: %v", err)
	}
	ctxRes, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ContextURI})
	if err != nil || !strings.Contains(ctxRes.Contents[0].Text, "system/persona.md") {
		t.Fatalf("context resource: %v", err)
	}

	// A write through the tool and a commit another writer pushes (pulled
	// while the session is open) both notify the subscriber.
	for _, uri := range []string{"memory:///notes.md", "memory:///peer.md"} {
		if err := r.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/notes.md", "file_text": "x\n"}); isErr {
		t.Fatal(text)
	}
	r.waitUpdated(t, "memory:///notes.md")
	local := r.localHead(t)
	waitFor(t, "the pull loop's push", func() bool { return r.remoteHead(t) == local })
	peer := filepath.Join(t.TempDir(), "peer")
	u := strings.Replace(r.srv.RemoteURL("me"), "http://", "http://memfsd:"+token+"@", 1)
	testgit.Run(t, filepath.Dir(peer), "clone", "-q", u, peer)
	if err := os.WriteFile(filepath.Join(peer, "peer.md"), []byte("from the peer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testgit.Run(t, peer, "add", "peer.md")
	testgit.Run(t, peer, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "peer")
	testgit.Run(t, peer, "push", "-q", "origin", "HEAD:main")
	r.waitUpdated(t, "memory:///peer.md")
	got, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory:///peer.md"})
	if err != nil || got.Contents[0].Text != "from the peer\n" {
		t.Fatalf("read the pulled file: %v %+v", err, got)
	}
}

func (r *rig) waitUpdated(t *testing.T, uri string) {
	t.Helper()
	waitFor(t, "notifications/resources/updated for "+uri, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, u := range r.updated {
			if u == uri {
				return true
			}
		}
		return false
	})
}

func TestTools_ReminderRidesOnTheNextResult(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	// A conflict copy left by a sync is what a reminder names; the
	// simplest reminder to raise here is commits that cannot be pushed.
	r.srv.FailNext("git-receive-pack", 100, 503)
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/a.md", "file_text": "x\n"}); isErr {
		t.Fatal(text)
	}
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_sync", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, c := range res.Content {
		all = append(all, c.(*mcp.TextContent).Text)
	}
	data, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(strings.Join(all, "\n"), "<system-reminder>") {
		t.Fatalf("no reminder after a failed push: %s %s", all, data)
	}
}
