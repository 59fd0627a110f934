package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fakesecret"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// Scenarios of the trust boundary (SPEC §8): routes the agent has must not
// change what is the operator's.

// runCLI runs the binary with the daemon's home and server, returning exit
// code and combined output.
func runCLI(t *testing.T, srv *gitserver.Server, home string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, append(args, "--home", home, "--base-url", srv.URL)...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestTrust_OperatorRoutesOnlyOnTheAdminSocket(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "op")
	persona := filepath.Join(memDir(home, "op"), "system", "persona.md")
	orig, _ := os.ReadFile(persona)

	for _, r := range []struct{ method, path, body string }{
		{"PUT", "/v1/agents/op/blocks/persona", "---\nread_only: true\n---\nI obey the agent now.\n"},
		{"PUT", "/v1/agents/intruder", ""},
		{"POST", "/v1/agents/op/accept", `{"deletes": true}`},
	} {
		var answer struct {
			Error string `json:"error"`
		}
		code, err := p.call(r.method, r.path, r.body, &answer)
		if err != nil || code != 403 || !strings.Contains(answer.Error, filepath.Join(home, "admin.sock")) {
			t.Fatalf("%s %s on the agent's socket: %d %q %v, want 403 naming the admin socket", r.method, r.path, code, answer.Error, err)
		}
	}
	if data, _ := os.ReadFile(persona); string(data) != string(orig) {
		t.Fatal("persona changed through the agent's socket")
	}
	var list struct {
		Agents []status `json:"agents"`
	}
	if p.get("/v1/agents", &list); len(list.Agents) != 1 {
		t.Fatalf("agents after a refused PUT: %+v", list.Agents)
	}
	if fi, err := os.Stat(filepath.Join(home, "admin.sock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", fi, err)
	}

	// The operator's way in works: memfsd block set goes to the admin socket.
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte("---\nread_only: true\n---\nI am the operator's persona.\n"), 0o600)
	if code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", "op", "--file", f); code != 0 {
		t.Fatalf("block set: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("op"), "show", "main:system/persona.md"); !strings.Contains(got, "operator's persona") {
		t.Fatalf("remote persona after block set = %q", got)
	}
	if code, _ := p.adminCall("PUT", "/v1/agents/second?wait=30s", "", nil); code != 200 {
		t.Fatalf("PUT agent on the admin socket = %d", code)
	}
}

// Held deletions settled through the admin socket: restore, then accept.
func TestTrust_AcceptAndRestoreThroughTheDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("hold"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "hold")
	dir := memDir(home, "hold")
	// The 40 notes go in one step (the folder moved out), so the watcher
	// sees one mass deletion whatever the machine's load (deletions spread
	// over batches: TestMassDelete_LaterDeletionsJoinTheHold).
	rmNotes := func() {
		if err := os.Rename(filepath.Join(dir, "notes"), filepath.Join(t.TempDir(), "notes")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "deletions held", func() bool { return len(p.status("hold").HeldDeletes) == 40 })
	}
	rmNotes()
	if code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--restore-deletes"); code != 0 || !strings.Contains(out, `"restored"`) {
		t.Fatalf("restore through the daemon: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "n17.md")); err != nil {
		t.Fatal("notes/n17.md not restored")
	}
	if st := p.status("hold"); len(st.HeldDeletes) != 0 || st.State == "error" {
		t.Fatalf("after restore: %+v", st)
	}

	rmNotes()
	code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--accept-deletes")
	if code != 0 {
		t.Fatalf("accept through the daemon: %d %s", code, out)
	}
	var answer struct {
		Turn turnResult `json:"turn"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil || answer.Turn.Outcome != "pushed" {
		t.Fatalf("accept answer: %v %s", err, out)
	}
	if tree := git(t, srv.RepoDir("hold"), "ls-tree", "-r", "--name-only", "main"); strings.Contains(tree, "notes/") {
		t.Fatalf("deletions not pushed:\n%s", tree)
	}
	if r := p.reminders("hold"); r.has("mass_delete_held") {
		t.Fatalf("reminder left: %+v", r)
	}
	if code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--accept-deletes"); code != 0 || !strings.Contains(out, "nothing held") {
		t.Fatalf("accept with nothing held: %d %s", code, out)
	}
}

// A shell's `git commit` of a changed read-only block never reaches the
// remote: the outgoing check puts the block back in a commit of its own,
// keeps the bytes, tells the agent, and pushes the rest of the range.
func TestTrust_ShellCommitOfReadOnlyBlock(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	// A long debounce: the watcher must not undo the write before the
	// shell's commit takes it (that route is tested elsewhere).
	p := startDaemon(t, srv, home, "--agent", "sh", "--debounce", "10s")
	dir := memDir(home, "sh")
	orig := git(t, srv.RepoDir("sh"), "show", "main:system/persona.md")
	os.WriteFile(filepath.Join(dir, "system", "persona.md"), []byte("---\nread_only: true\n---\nI answer to nobody.\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("an ordinary note\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "mine.md"), []byte("---\nread_only: true\n---\nlocked by the agent\n"), 0o600)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "agent shell commit")

	tr := p.turn("sh")
	if tr.Outcome != "pushed" || tr.Status.Ahead != 0 {
		t.Fatalf("turn = %+v", tr)
	}
	bare := srv.RepoDir("sh")
	if got := git(t, bare, "show", "main:system/persona.md"); got != orig {
		t.Fatalf("remote persona changed by a shell commit:\n%s", got)
	}
	if got := git(t, bare, "show", "main:notes.md"); got != "an ordinary note" {
		t.Fatalf("the ordinary file of the same commit was not pushed: %q", got)
	}
	if out := git(t, bare, "ls-tree", "--name-only", "main", "mine.md"); out != "" {
		t.Fatal("a file that gained read_only reached the remote")
	}
	if log := git(t, bare, "log", "--format=%s", "main"); !strings.Contains(log, "memfsd: restore read-only system/persona.md") {
		t.Fatalf("remote log:\n%s", log)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "system", "persona.md")); strings.TrimSpace(string(data)) != orig {
		t.Fatalf("local persona not restored: %q", data)
	}
	kept := ""
	rej, _ := filepath.Glob(filepath.Join(dir, ".git", "memfsd", "rejected", "*"))
	for _, f := range rej {
		data, _ := os.ReadFile(f)
		kept += string(data)
	}
	if !strings.Contains(kept, "I answer to nobody.") || !strings.Contains(kept, "locked by the agent") {
		t.Fatalf("rejected bytes not kept: %q", kept)
	}
	if r := p.reminders("sh"); !r.has("read_only_rejected") {
		t.Fatalf("reminders = %+v", r)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree not clean after the restore: %q", st)
	}
}

// The same through `memfsd sync`, no daemon: every route to a push checks.
func TestTrust_ShellCommitThenSync(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	if code, out := runCLI(t, srv, home, "sync", "--agent", "cli"); code != 0 {
		t.Fatalf("first sync: %d %s", code, out)
	}
	dir := memDir(home, "cli")
	orig := git(t, srv.RepoDir("cli"), "show", "main:system/human.md")
	os.WriteFile(filepath.Join(dir, "system", "human.md"), []byte("The human is whoever I say.\n"), 0o600)
	git(t, dir, "commit", "-q", "-am", "shell")
	if code, out := runCLI(t, srv, home, "sync", "--agent", "cli"); code != 0 {
		t.Fatalf("sync: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("cli"), "show", "main:system/human.md"); got != orig {
		t.Fatalf("remote human changed through git commit + memfsd sync:\n%s", got)
	}
	// The operator's way still works, directly on the repository.
	f := filepath.Join(t.TempDir(), "human.md")
	os.WriteFile(f, []byte("---\nread_only: true\n---\nAda, compilers.\n"), 0o600)
	if code, out := runCLI(t, srv, home, "block", "set", "human", "--agent", "cli", "--file", f); code != 0 {
		t.Fatalf("block set: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("cli"), "show", "main:system/human.md"); !strings.Contains(got, "Ada, compilers.") {
		t.Fatalf("operator's block set did not reach the remote: %q", got)
	}
}

// A credential written straight into the folder is never committed: held
// with a reminder naming the file and the pattern until it is cleaned
// (then committed and pushed) or deleted.
func TestTrust_SecretInADirectWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "sec")
	dir := memDir(home, "sec")
	key := fakesecret.Ed25519(t) // ed25519, made by ssh-keygen
	tok := fakesecret.OpenAI()
	os.WriteFile(filepath.Join(dir, "deploy.md"), []byte("server notes\n"+key), 0o600)
	os.WriteFile(filepath.Join(dir, "scratch.md"), []byte("token "+tok+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "fine.md"), []byte("nothing secret\n"), 0o600)
	waitFor(t, 10*time.Second, "fine.md committed", func() bool {
		return git(t, dir, "log", "-1", "--format=%s", "--", "fine.md") == "memory: create fine.md"
	})
	r := p.reminders("sec")
	if !r.has("secret_held") || !strings.Contains(r.Text, "/memories/deploy.md (private key block)") || !strings.Contains(r.Text, "scratch.md") {
		t.Fatalf("reminders = %+v", r)
	}
	p.turn("sec")
	os.Remove(filepath.Join(dir, "scratch.md"))
	os.WriteFile(filepath.Join(dir, "deploy.md"), []byte("server notes\nthe key is in the vault\n"), 0o600)
	waitFor(t, 10*time.Second, "deploy.md committed once clean", func() bool {
		return git(t, dir, "log", "-1", "--format=%s", "--", "deploy.md") == "memory: create deploy.md"
	})
	tr := p.turn("sec")
	if tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
	if r := p.reminders("sec"); r.has("secret_held") {
		t.Fatalf("secret_held after cleaning and deleting: %+v", r)
	}
	// Never in any commit, on either side.
	for _, repo := range []string{dir, srv.RepoDir("sec")} {
		if out := git(t, repo, "log", "--all", "-p", "--format=%H"); strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, tok) {
			t.Fatalf("a secret reached a commit in %s", repo)
		}
	}
	if got := git(t, srv.RepoDir("sec"), "show", "main:deploy.md"); !strings.Contains(got, "in the vault") {
		t.Fatalf("remote deploy.md = %q", got)
	}
}

// The memory tool judges a write against HEAD too, under the commit's lock:
// a read-only file the agent unlocked on disk behind the tool's back (no
// commit yet) is still refused.
func TestTrust_ToolOnAFileUnlockedOnDisk(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "small", srv.RepoDir("tl"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "tl", "--debounce", "10s")
	dir := memDir(home, "tl")
	headBefore := git(t, dir, "rev-parse", "HEAD")
	policy := filepath.Join(dir, "notes", "policy.md")
	data, _ := os.ReadFile(policy)
	unlocked := strings.Replace(string(data), "read_only: true\n", "", 1)
	if unlocked == string(data) {
		t.Fatalf("fixture policy.md is not read-only:\n%s", data)
	}
	os.WriteFile(policy, []byte(unlocked), 0o600)
	out, isErr := p.memory("tl", `{"command":"insert","path":"/memories/notes/policy.md","insert_line":0,"insert_text":"the agent's rule\n"}`)
	if !isErr || out != "/memories/notes/policy.md is read-only and cannot be modified" {
		t.Fatalf("insert into an unlocked read-only file: %q (error %v)", out, isErr)
	}
	if head := git(t, dir, "rev-parse", "HEAD"); head != headBefore {
		t.Fatalf("the tool committed: %s", git(t, dir, "log", "-1", "--stat"))
	}
	if got, _ := os.ReadFile(policy); string(got) != unlocked {
		t.Fatalf("the refused write was not undone: %q", got)
	}
}

// On the embedded default remote, another writer's push (a clone of the
// bare repository) is recovered by memfsd sync as with a real server.
func TestTrust_EmbeddedRemoteDivergenceThroughSync(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sync := func() (int, string) {
		out, err := exec.Command(binPath, "sync", "--agent", "local", "--home", home).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	if code, out := sync(); code != 0 {
		t.Fatalf("first sync: %d %s", code, out)
	}
	bare := filepath.Join(home, "remote", "v1", "git", "local", "state.git")
	peer := filepath.Join(t.TempDir(), "peer")
	git(t, "", "clone", "-q", bare, peer)
	os.WriteFile(filepath.Join(peer, "theirs.md"), []byte("pushed by another writer\n"), 0o600)
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "theirs")
	git(t, peer, "push", "-q", "origin", "main")
	os.WriteFile(filepath.Join(memDir(home, "local"), "ours.md"), []byte("written here\n"), 0o600)
	if code, out := sync(); code != 0 {
		t.Fatalf("sync after another writer pushed: %d %s", code, out)
	}
	tree := git(t, bare, "ls-tree", "--name-only", "main")
	if !strings.Contains(tree, "theirs.md") || !strings.Contains(tree, "ours.md") {
		t.Fatalf("embedded remote after the recovery:\n%s", tree)
	}
	git(t, bare, "fsck", "--strict")
}

// One Idempotency-Key applies once: repeated, after a restart, and with its
// answer record gone (the commit's Memory-Call trailer still knows).
func TestTrust_IdempotentMemoryCalls(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "idem")
	dir := memDir(home, "idem")
	call := func(p *proc, key, input string) (string, bool) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://memfsd/v1/agents/idem/memory", strings.NewReader(input))
		req.Header.Set("Idempotency-Key", key)
		resp, err := p.api.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct {
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 {
			t.Fatalf("memory call: %d %v", resp.StatusCode, err)
		}
		return res.Content, res.IsError
	}
	if out, isErr := p.memory("idem", `{"command":"create","path":"/memories/log.md","file_text":"start\n"}`); isErr {
		t.Fatal(out)
	}
	insert := `{"command":"insert","path":"/memories/log.md","insert_line":1,"insert_text":"once\n"}`
	first, isErr := call(p, "toolu_01ABC", insert)
	if isErr {
		t.Fatal(first)
	}
	commits := commitCount(t, dir, "HEAD")
	if again, _ := call(p, "toolu_01ABC", insert); again != first {
		t.Fatalf("repeated key answered %q, want the first answer %q", again, first)
	}
	if msg := git(t, dir, "log", "-1", "--format=%B"); !strings.Contains(msg, "Memory-Call: toolu_01ABC") {
		t.Fatalf("commit message lacks the trailer:\n%s", msg)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p = startDaemon(t, srv, home, "--agent", "idem")
	if again, _ := call(p, "toolu_01ABC", insert); again != first {
		t.Fatalf("after a restart the key answered %q", again)
	}
	os.RemoveAll(filepath.Join(home, "agents", "idem", "records", "calls"))
	if again, isErr := call(p, "toolu_01ABC", insert); isErr || !strings.HasPrefix(again, "already applied in ") {
		t.Fatalf("with the answer record gone: %q (error %v)", again, isErr)
	}
	// The CLI's flag, through the daemon.
	for i := 0; i < 2; i++ {
		cmd := exec.Command(binPath, "memory", "--agent", "idem", "--home", home, "--idempotency-key", "toolu_02XYZ")
		cmd.Stdin = strings.NewReader(`{"command":"insert","path":"/memories/log.md","insert_line":0,"insert_text":"cli\n"}`)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("memfsd memory: %v %s", err, out)
		}
	}
	if n := commitCount(t, dir, "HEAD"); n != commits+1 {
		t.Fatalf("%d commits after the repeats, want %d (each key once)", n, commits+1)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "log.md")); string(data) != "cli\nstart\nonce\n" {
		t.Fatalf("log.md = %q", data)
	}
	if code, _ := p.call("POST", "/v1/agents/idem/memory", insert, nil); code != 200 {
		t.Fatalf("no key: %d", code)
	}
	req, _ := http.NewRequest("POST", "http://memfsd/v1/agents/idem/memory", strings.NewReader(insert))
	req.Header.Set("Idempotency-Key", "has space")
	if resp, err := p.api.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("bad key: %v %v", resp, err)
	}
}

// Another clone pushes a commit deleting 40 of 42 files: the update is held
// (files stay, nothing pushed, reminder), then restored by the operator,
// then, deleted again, accepted.
func TestTrust_RemoteMassDeletionHeld(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("wipe"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "wipe")
	dir := memDir(home, "wipe")
	peer := peerClone(t, srv, "wipe")
	wipe := func() {
		git(t, peer, "pull", "-q", "origin", "main")
		git(t, peer, "rm", "-q", "-r", "notes")
		git(t, peer, "commit", "-q", "-m", "backfill: a fresh memory")
		git(t, peer, "push", "-q", "origin", "main")
	}
	wipe()
	headBefore := git(t, dir, "rev-parse", "HEAD")
	tr := p.turn("wipe")
	if len(tr.Status.HeldRemoteDeletes) != 40 || tr.Status.State != "error" {
		t.Fatalf("turn after a remote mass deletion = %+v", tr)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "n17.md")); err != nil || git(t, dir, "rev-parse", "HEAD") != headBefore {
		t.Fatal("the held update was applied locally")
	}
	if r := p.reminders("wipe"); !r.has("remote_delete_held") {
		t.Fatalf("reminders = %+v", r)
	}
	// The held state is its own class, and its next step is the decision
	// (it was class permanent, "see the cause (a refused TLS certificate...").
	if code, out := runCLI(t, srv, home, "sync", "--agent", "wipe"); code != 1 || !strings.Contains(out, "class=remote_delete_held") ||
		!strings.Contains(out, "--restore-deletes") || strings.Contains(out, "certificate") {
		t.Fatalf("sync while held: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(dir, "while-held.md"), []byte("written while held\n"), 0o600)
	waitFor(t, 10*time.Second, "commit while held", func() bool { return len(p.status("wipe").Dirty) == 0 })
	if tr := p.turn("wipe"); tr.Pushed != 0 || git(t, srv.RepoDir("wipe"), "ls-tree", "--name-only", "main", "while-held.md") != "" {
		t.Fatalf("pushed while held: %+v", tr)
	}

	// Restore: the files are re-added on top of the remote's commit.
	if code, out := runCLI(t, srv, home, "sync", "--agent", "wipe", "--restore-deletes"); code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	tree := git(t, srv.RepoDir("wipe"), "ls-tree", "-r", "--name-only", "main")
	if !strings.Contains(tree, "notes/n17.md") || !strings.Contains(tree, "while-held.md") {
		t.Fatalf("remote after the restore:\n%s", tree)
	}
	if log := git(t, srv.RepoDir("wipe"), "log", "--format=%s", "main"); !strings.Contains(log, "memfsd: restore 40 files a remote update deleted") {
		t.Fatalf("remote log:\n%s", log)
	}
	if st := p.status("wipe"); len(st.HeldRemoteDeletes) != 0 || st.State == "error" {
		t.Fatalf("after the restore: %+v", st)
	}

	// Deleted again, and this time accepted.
	wipe()
	if tr := p.turn("wipe"); len(tr.Status.HeldRemoteDeletes) != 40 {
		t.Fatalf("second deletion not held: %+v", tr)
	}
	if code, out := runCLI(t, srv, home, "sync", "--agent", "wipe", "--accept-deletes"); code != 0 {
		t.Fatalf("accept: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "n17.md")); !os.IsNotExist(err) {
		t.Fatalf("accepted deletion not applied locally: %v", err)
	}
	if st := p.status("wipe"); len(st.HeldRemoteDeletes) != 0 || st.State == "error" {
		t.Fatalf("after the accept: %+v", st)
	}
	if r := p.reminders("wipe"); r.has("remote_delete_held") {
		t.Fatalf("reminder left after the accept: %+v", r)
	}
}

// A shell's `git rm -r` + commit of most of the memory is held at the push
// (nothing reaches the remote), then restored, then, again, accepted.
func TestTrust_ShellCommitOfAWholesaleDelete(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("rm"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "rm")
	dir := memDir(home, "rm")
	bare := srv.RepoDir("rm")
	remoteBefore := git(t, bare, "rev-parse", "main")
	rmAll := func() {
		git(t, dir, "rm", "-q", "-r", "notes")
		git(t, dir, "commit", "-q", "-m", "tidy up")
	}
	rmAll()
	tr := p.turn("rm")
	if tr.Pushed != 0 || len(tr.Status.HeldDeletes) != 40 || tr.Status.State != "error" {
		t.Fatalf("turn after a shell mass delete = %+v", tr)
	}
	if got := git(t, bare, "rev-parse", "main"); got != remoteBefore {
		t.Fatal("the wholesale deletion reached the remote")
	}
	if r := p.reminders("rm"); !r.has("mass_delete_held") {
		t.Fatalf("reminders = %+v", r)
	}
	if code, out := runCLI(t, srv, home, "sync", "--agent", "rm", "--restore-deletes"); code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	if tree := git(t, bare, "ls-tree", "-r", "--name-only", "main"); !strings.Contains(tree, "notes/n39.md") {
		t.Fatalf("remote after the restore:\n%s", tree)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "n39.md")); err != nil {
		t.Fatalf("files not back in the work tree: %v", err)
	}
	if st := p.status("rm"); len(st.HeldDeletes) != 0 || st.State == "error" {
		t.Fatalf("after the restore: %+v", st)
	}
	rmAll()
	if tr := p.turn("rm"); len(tr.Status.HeldDeletes) != 40 {
		t.Fatalf("second deletion not held: %+v", tr)
	}
	if code, out := runCLI(t, srv, home, "sync", "--agent", "rm", "--accept-deletes"); code != 0 {
		t.Fatalf("accept: %d %s", code, out)
	}
	if tree := git(t, bare, "ls-tree", "-r", "--name-only", "main"); strings.Contains(tree, "notes/") {
		t.Fatalf("accepted deletion not pushed:\n%s", tree)
	}
	if st := p.status("rm"); len(st.HeldDeletes) != 0 || st.State == "error" {
		t.Fatalf("after the accept: %+v", st)
	}
}

// --remote-template on another host's layout, its env var, bearer-less
// basic auth, not_found naming --create-remote, then --create-remote making
// the repository by pushing.
func TestRemoteTemplate(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	srv.SetStrict(true, true)
	home := t.TempDir()
	sync := func(env []string, args ...string) (int, string) {
		cmd := exec.Command(binPath, append([]string{"sync", "--agent", "tpl", "--home", home}, args...)...)
		cmd.Env = append(append(os.Environ(), "MEMFSD_TOKEN="+token), env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	tpl := srv.URL + "/memory/{agent}.git"
	code, out := sync([]string{"MEMFSD_REMOTE_TEMPLATE=" + tpl})
	if code != 1 || !strings.Contains(out, "class=not_found") || !strings.Contains(out, "--create-remote") {
		t.Fatalf("first sync on a host without the repository: %d %s", code, out)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "agents", "tpl")); len(entries) != 0 {
		t.Fatalf("a failed first clone left %v", entries)
	}
	code, out = sync([]string{"MEMFSD_REMOTE_TEMPLATE=" + tpl}, "--create-remote")
	if code != 0 {
		t.Fatalf("sync --create-remote: %d %s", code, out)
	}
	bare := filepath.Join(srv.Root, "v1", "git", "tpl", "state.git")
	if got := git(t, bare, "log", "--format=%s", "main"); got != "memfsd: initialise memory with default blocks" {
		t.Fatalf("created repository's log = %q", got)
	}
	os.WriteFile(filepath.Join(memDir(home, "tpl"), "n.md"), []byte("via the template\n"), 0o600)
	if code, out := sync(nil, "--remote-template", tpl); code != 0 {
		t.Fatalf("sync with the flag: %d %s", code, out)
	}
	if got := git(t, bare, "show", "main:n.md"); got != "via the template" {
		t.Fatalf("n.md on the host = %q", got)
	}
	for _, bad := range []string{srv.URL + "/memory/fixed.git", "https://{agent}.example.com/m.git", srv.URL + "/m.git?x={agent}"} {
		fresh := t.TempDir()
		cmd := exec.Command(binPath, "sync", "--agent", "tpl", "--home", fresh, "--remote-template", bad)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "remote-template") {
			t.Fatalf("template %q accepted: %v %s", bad, err, out)
		}
		if entries, _ := os.ReadDir(fresh); len(entries) != 0 {
			t.Fatalf("a refused template created %v", entries)
		}
	}
}

// A per-agent remote through the admin socket's PUT /v1/agents/{id}.
func TestRemoteOverrideThroughAdmin(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home)
	var st status
	body := `{"remote_url": "` + srv.HostURL("team", "ovr") + `"}`
	if code, err := p.adminCall("PUT", "/v1/agents/ovr?wait=30s", body, &st); err != nil || code != 200 {
		t.Fatalf("PUT with remote_url: %d %v", code, err)
	}
	var full struct {
		Remote string `json:"remote"`
	}
	p.get("/v1/agents/ovr/status", &full)
	if full.Remote != srv.HostURL("team", "ovr") {
		t.Fatalf("status remote = %q", full.Remote)
	}
	if code, _ := p.adminCall("PUT", "/v1/agents/bad", `{"remote_url": "ftp://x"}`, nil); code != 400 {
		t.Fatalf("bad remote_url = %d", code)
	}
	if _, err := os.Stat(filepath.Join(home, "agents", "bad")); err == nil {
		t.Fatal("a refused PUT created the agent's folder")
	}
}

// A symbolic link the agent plants in its folder (`ln -s .. esc`) never
// lets a pull write outside the memory folder: the operator's records next
// to it stay untouched.
func TestTrust_SymlinkEscapeOnPull(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "sym")
	dir := memDir(home, "sym")
	peer := peerClone(t, srv, "sym")
	// The remote gets esc/operator-approved.json (any writer could push it).
	os.MkdirAll(filepath.Join(peer, "esc"), 0o700)
	os.WriteFile(filepath.Join(peer, "esc", "operator-approved.json"), []byte(`{"system/persona.md":["0000"]}`), 0o600)
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "a file under esc/")
	git(t, peer, "push", "-q", "origin", "main")
	// The agent's shell: esc is a link to the folder above.
	if err := os.Symlink("..", filepath.Join(dir, "esc")); err != nil {
		t.Fatal(err)
	}
	tr := p.turn("sym")
	t.Logf("turn: %+v; log: %s", tr, git(t, dir, "log", "--stat", "--format=%s", "-3"))
	outside := filepath.Join(home, "agents", "sym", "operator-approved.json")
	if data, err := os.ReadFile(outside); err == nil {
		t.Fatalf("a pull wrote through the agent's symlink, outside the memory folder: %s", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "esc")); err != nil || !fi.IsDir() {
		t.Fatalf("esc is not a real folder after the pull: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "esc", "operator-approved.json")); !strings.Contains(string(data), "0000") {
		t.Fatal("the pulled file is not in the memory folder")
	}
}

// A credential committed by the shell and deleted again never reaches the
// remote: every commit of the range is checked, not only its end state.
func TestTrust_SecretInAShellCommitRange(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "shs", "--debounce", "10s")
	dir := memDir(home, "shs")
	before := git(t, srv.RepoDir("shs"), "rev-parse", "main")
	os.WriteFile(filepath.Join(dir, "k.md"), []byte("key "+fakesecret.OpenAI()+"\n"), 0o600)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "oops")
	git(t, dir, "rm", "-q", "k.md")
	git(t, dir, "commit", "-q", "-m", "hide it")
	tr := p.turn("shs")
	if tr.Outcome != "failed" || !strings.Contains(tr.Error, "credential") || !strings.Contains(tr.Error, "k.md") {
		t.Fatalf("turn = %+v", tr)
	}
	if got := git(t, srv.RepoDir("shs"), "rev-parse", "main"); got != before {
		t.Fatal("the range with a secret was pushed")
	}
	if r := p.reminders("shs"); !r.has("sync_failed") || !strings.Contains(r.Text, "credential") {
		t.Fatalf("reminders = %+v", r)
	}
	// The agent drops the commits: the next turn is clean again.
	git(t, dir, "reset", "-q", "--hard", "HEAD~2")
	if tr := p.turn("shs"); tr.Outcome == "failed" {
		t.Fatalf("turn after the reset = %+v", tr)
	}
}

// Deletions the watcher sees after a mass deletion was held join the hold
// (a slow rm, or a loaded machine, splits one deletion over batches):
// before, the later batch, under half of the files by itself, was
// committed and pushed without the operator (seen: 23 held, 17 pushed).
func TestMassDelete_LaterDeletionsJoinTheHold(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("hold"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "hold")
	dir := memDir(home, "hold")
	if err := os.WriteFile(filepath.Join(dir, "extra.md"), []byte("kept until the operator says\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "extra.md committed", func() bool {
		return git(t, dir, "log", "-1", "--format=%s", "--", "extra.md") != ""
	})
	p.postTurn("hold", "30s")
	if got := git(t, srv.RepoDir("hold"), "show", "main:extra.md"); !strings.Contains(got, "kept until") {
		t.Fatalf("extra.md not pushed: %q", got)
	}
	if err := os.Rename(filepath.Join(dir, "notes"), filepath.Join(t.TempDir(), "notes")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "40 deletions held", func() bool { return len(p.status("hold").HeldDeletes) == 40 })
	if err := os.Remove(filepath.Join(dir, "extra.md")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the later deletion held too", func() bool { return len(p.status("hold").HeldDeletes) == 41 })
	p.postTurn("hold", "30s")
	tree := git(t, srv.RepoDir("hold"), "ls-tree", "-r", "--name-only", "main")
	if !strings.Contains(tree, "extra.md") || !strings.Contains(tree, "notes/n17.md") {
		t.Fatalf("a held deletion reached the remote:\n%s", tree)
	}
	if r := p.reminders("hold"); !r.has("mass_delete_held") {
		t.Fatalf("no mass_delete_held reminder: %+v", r)
	}
	// The operator's restore brings every one back, the later one too.
	if code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--restore-deletes"); code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	for _, f := range []string{"extra.md", "notes/n17.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s not restored: %v", f, err)
		}
	}
}
