package main_test

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// TestChaos is the soak: two daemons on one agent, a person committing with
// the git CLI in one of the folders, 30% of requests faulted, one daemon
// killed with SIGKILL and restarted at random; every write carries a unique
// token, and at the end every token must be on the remote (at its path or
// in a conflict copy). Two writer processes run for the whole soak, one
// truncating and writing, one appending, in different folders
// (chaosWriterScripts); the memory tool, direct writes and the person edit
// their files in the other folder, so pulls replace them while they are
// being written, and every line they wrote must be in the remote's history.
// MEMFSD_CHAOS_WRITES sets the number of operations (default 60 in the
// suite, 1,500 in scripts/soak.sh; scripts/chaos.sh runs 6,400).
func TestChaos(t *testing.T) {
	t.Parallel()
	writes := soak.Int(60, 1500)
	if v := os.Getenv("MEMFSD_CHAOS_WRITES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MEMFSD_CHAOS_WRITES=%q: %v", v, err)
		}
		writes = n
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("MEMFSD_CHAOS_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	const id = "chaos"
	srv := gitserver.New(t, token)
	homes := []string{t.TempDir(), t.TempDir()}
	// A person's commit that failed every retry leaves its file staged:
	// memfsd waits on it, then commits it as staged, within the soak.
	args := append([]string{"--agent", id, "--person-git-wait", "1s"}, fastRetryArgs()...)
	daemons := []*proc{startDaemon(t, srv, homes[0], args...), startDaemon(t, srv, homes[1], args...)}
	// The truncating writer works in the folder of the daemon that is killed
	// (it writes on while that daemon is down), the appending one in the
	// person's folder. writers[k]'s files are edited by others in the
	// folder of daemon k, never in the writer's own, where the edit would
	// race the writer itself.
	writers := []*chaosWriter{
		startChaosWriter(t, "truncate", memDir(homes[1], id)),
		startChaosWriter(t, "append", memDir(homes[0], id)),
	}
	srv.SetChaos(0.3, seed)
	dead := false
	var must []string
	kills, toolWrites, directWrites, personCommits, turns, writerEdits := 0, 0, 0, 0, 0, 0
	start := time.Now()
	for i := 0; i < writes; i++ {
		tok := fmt.Sprintf("tok-%d-%x", i, rng.Int63())
		k := rng.Intn(len(daemons))
		if dead && k == 1 {
			k = 0
		}
		switch r := rng.Intn(20); {
		case r < 8 && rng.Intn(4) == 0: // the tool edits a writer's file in the other folder
			rel := latestWriterFile(memDir(homes[k], id), writers[k].kind)
			if rel == "" {
				continue
			}
			var res struct {
				IsError bool `json:"is_error"`
			}
			code, err := daemons[k].call("POST", "/v1/agents/"+id+"/memory",
				`{"command":"str_replace","path":"/memories/`+rel+`","old_str":"`+writerTop+`\n","new_str":"`+writerTop+`\n`+tok+`\n"}`, &res)
			if err == nil && code == 200 && !res.IsError {
				must = append(must, tok)
				toolWrites++
				writerEdits++
			}
		case r < 8: // the memory tool, through the API
			var res struct {
				Content string `json:"content"`
				IsError bool   `json:"is_error"`
			}
			code, err := daemons[k].call("POST", "/v1/agents/"+id+"/memory",
				`{"command":"create","path":"/memories/t/`+tok+`.md","file_text":"`+tok+`\n"}`, &res)
			if err == nil && code == 200 && !res.IsError {
				must = append(must, tok)
				toolWrites++
			}
		case r < 14 && rng.Intn(2) == 0: // a direct write to a writer's file in the other folder
			j := rng.Intn(len(writers))
			if _, ok := insertBelowTop(memDir(homes[j], id), writers[j].kind, tok); ok {
				must = append(must, tok)
				directWrites++
				writerEdits++
			}
		case r < 14: // a direct write: append to one of a few shared files
			p := filepath.Join(memDir(homes[rng.Intn(2)], id), fmt.Sprintf("shared-%d.md", rng.Intn(3)))
			old, _ := os.ReadFile(p)
			if err := os.WriteFile(p, append(old, []byte(tok+"\n")...), 0o600); err == nil {
				must = append(must, tok)
				directWrites++
			}
		case r < 16: // a person commits in the first folder with the git CLI
			dir := memDir(homes[0], id)
			name := "person-" + tok + ".md"
			edited := false
			if rng.Intn(3) == 0 {
				// The person edits the truncating writer's file (written in
				// the second folder) and commits that.
				if rel, ok := insertBelowTop(dir, writers[0].kind, tok); ok {
					name, edited = rel, true
					writerEdits++
				}
			}
			if !edited {
				os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o644)
			}
			for attempt := 0; attempt < 30; attempt++ {
				if _, err := gitTry(dir, "add", "--", name); err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if _, err := gitTry(dir, "commit", "-q", "-m", "person "+tok, "--", name); err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				personCommits++
				break
			}
			// Committed by the person or, failing that, by the daemon: either way it must survive.
			must = append(must, tok)
		case r < 19:
			daemons[k].call("POST", "/v1/agents/"+id+"/turn?wait=30s", "", nil)
			turns++
		default:
			if dead {
				daemons[1] = startDaemon(t, srv, homes[1], args...)
				dead = false
			} else {
				daemons[1].cmd.Process.Signal(syscall.SIGKILL)
				daemons[1].cmd.Wait()
				dead = true
				kills++
			}
		}
	}
	for _, w := range writers {
		w.stop(t)
	}
	faults := srv.Faulted()
	srv.SetChaos(0, 0)
	if dead {
		daemons[1] = startDaemon(t, srv, homes[1], args...)
	}
	// Converge: turns on both until both are clean on the same head.
	converged := false
	for round := 0; round < 10 && !converged; round++ {
		a, b := daemons[0].turn(id), daemons[1].turn(id)
		a, b = daemons[0].turn(id), daemons[1].turn(id)
		converged = a.Status.State != "error" && b.Status.State != "error" &&
			a.Status.Head == b.Status.Head && a.Status.Head == a.Status.RemoteHead && len(a.Status.Dirty) == 0 && len(b.Status.Dirty) == 0
	}
	bare := srv.RepoDir(id)
	all := git(t, bare, "grep", "-h", "tok-", "main", "--")
	// A token missing from the final tree must at least be in the remote's
	// history: a later direct write can legitimately edit it away (the test
	// appends to shared files with read-modify-write, racing the syncs that
	// rewrite them, as any editor would). With --cc, a line that first
	// appears in a merge's result is in the history too.
	history := git(t, bare, "log", "-p", "--cc", "--all", "--format=%H")
	lost, editedAway := 0, 0
	for _, tok := range must {
		if strings.Contains(all, tok) {
			continue
		}
		if strings.Contains(history, tok) {
			editedAway++
			continue
		}
		lost++
		t.Errorf("token %s lost", tok)
	}
	// Every line a writer wrote, in some version of some file the remote
	// holds: at its path or in a conflict copy.
	lines := historyLines(history)
	writerLost := 0
	for _, w := range writers {
		for i := 0; i < w.written; i++ {
			if l := w.token(i); !lines[l] {
				w.lost++
				if w.lost <= 10 {
					t.Errorf("%s writer's line %s lost", w.kind, l)
				}
			}
		}
		writerLost += w.lost
	}
	lost += writerLost
	fsck := "clean"
	if out, err := gitTry(bare, "fsck", "--strict"); err != nil {
		fsck = "FAILED: " + out
	}
	for _, h := range homes {
		waitRepackIdle(t, memDir(h, id))
		if out, err := gitTry(memDir(h, id), "fsck", "--strict"); err != nil {
			fsck = "FAILED: " + out
		}
	}
	copies := strings.Count(git(t, bare, "ls-tree", "-r", "--name-only", "main"), ".conflict-")
	t.Logf("chaos: seed %d, %s, writes %d (tool %d, direct %d, person %d; %d of them edits of a writer's file), writer lines %d (truncate %d, lost %d; append %d, lost %d), turns %d, faults %d, kills %d, conflict copies %d, converged %v, edited away by a later write %d, lost %d, fsck %s",
		seed, time.Since(start).Round(time.Second), len(must), toolWrites, directWrites, personCommits, writerEdits,
		writers[0].written+writers[1].written, writers[0].written, writers[0].lost, writers[1].written, writers[1].lost,
		turns, faults, kills, copies, converged, editedAway, lost, fsck)
	fmt.Printf("CHAOS writes=%d faults=%d kills=%d edited_away=%d lost=%d fsck=%s converged=%v seed=%d\n", len(must), faults, kills, editedAway, lost, fsck, converged, seed)
	fmt.Printf("CHAOS writers truncate=%d truncate_lost=%d append=%d append_lost=%d writer_file_edits=%d\n",
		writers[0].written, writers[0].lost, writers[1].written, writers[1].lost, writerEdits)
	if fsck != "clean" || !converged {
		t.Fatalf("fsck %s, converged %v", fsck, converged)
	}
}

// chaosWriterScripts are the soak's writer processes: each adds the line
// "w<kind>-<i>" to its current file, <kind>-<i/chaosWriterLines>.md, then
// records i in $COUNT and pauses $PAUSE seconds. Each write keeps the file
// open $HOLD seconds before its last bytes, as a program that writes in
// parts, or works a moment before its output comes, does: a replace that
// swaps another file in under an open descriptor loses what is written
// through it after the swap. A new file starts with $TOP, below which
// others add lines, and two lines between those and the writer's, so the
// two sides' edits merge cleanly.
var chaosWriterScripts = map[string]string{
	// Read, then truncate and write in place (the shell's >, Node's
	// fs.writeFile, Python's open(p, "w")).
	"truncate": `i=0
while [ ! -e "$STOP" ]; do
  f="$DIR/$KIND-$((i / PER)).md"
  if [ -e "$f" ]; then c=$(cat "$f") || continue; else c=$(printf '%s\nwriter: %s\nlines:' "$TOP" "$KIND"); fi
  { printf '%s\n' "$c"; sleep "$HOLD"; printf 'w%s-%d\n' "$KIND" $i; } > "$f"
  echo $i > "$COUNT"; i=$((i+1))
  sleep "$PAUSE"
done`,
	// Append (the shell's >>).
	"append": `i=0
while [ ! -e "$STOP" ]; do
  f="$DIR/$KIND-$((i / PER)).md"
  [ -e "$f" ] || printf '%s\nwriter: %s\nlines:\n' "$TOP" "$KIND" > "$f"
  { sleep "$HOLD"; echo "w$KIND-$i"; } >> "$f"
  echo $i > "$COUNT"; i=$((i+1))
  sleep "$PAUSE"
done`,
}

// chaosWriterLines is how many lines a writer puts in one file before it
// starts the next: the truncating writer rewrites its whole file each time,
// and every version is committed.
const chaosWriterLines = 500

// chaosWriter is one writer process of the soak.
type chaosWriter struct {
	kind    string
	cmd     *exec.Cmd
	stopAt  string // the file whose existence stops the loop
	count   string // the file holding the last i written
	log     string
	written int // lines written, known after stop
	lost    int
}

// startChaosWriter starts the kind's writer in the memory folder dir; it
// runs until stop (or the test's end).
func startChaosWriter(t *testing.T, kind, dir string) *chaosWriter {
	t.Helper()
	tmp := t.TempDir()
	w := &chaosWriter{kind: kind, stopAt: filepath.Join(tmp, "stop"), count: filepath.Join(tmp, "count"), log: filepath.Join(tmp, "log")}

	w.cmd = exec.Command("bash", "-c", chaosWriterScripts[kind])
	w.cmd.Env = append(os.Environ(), "DIR="+dir, "KIND="+kind, "STOP="+w.stopAt, "COUNT="+w.count,
		"PER="+strconv.Itoa(chaosWriterLines), "PAUSE=0.1", "HOLD=0.03", "TOP="+writerTop)
	out, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w.cmd.Stdout, w.cmd.Stderr = out, out
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start the %s writer: %v", kind, err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	})
	return w
}

// stop ends the loop after its current write and reads how many lines it
// wrote.
func (w *chaosWriter) stop(t *testing.T) {
	t.Helper()
	os.WriteFile(w.stopAt, nil, 0o600)
	err := w.cmd.Wait()
	if out, _ := os.ReadFile(w.log); len(out) > 0 {
		t.Logf("%s writer's output:\n%s", w.kind, out)
	}
	if err != nil {
		t.Errorf("%s writer: %v", w.kind, err)
	}
	data, err := os.ReadFile(w.count)
	if err != nil {
		t.Fatalf("%s writer wrote nothing: %v", w.kind, err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s writer's count %q: %v", w.kind, data, err)
	}
	w.written = last + 1
}

// token is the line the writer wrote at its i-th write.
func (w *chaosWriter) token(i int) string { return fmt.Sprintf("w%s-%d", w.kind, i) }

// writerTop is the first line of a writer's file; others add their lines
// below it.
const writerTop = "top of the file"

// latestWriterFile returns the kind's newest file in dir that starts with
// writerTop (a path relative to dir), or "".
func latestWriterFile(dir, kind string) string {
	names, _ := filepath.Glob(filepath.Join(dir, kind+"-*.md"))
	rel, best := "", -1
	for _, n := range names {
		if k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(n), kind+"-"), ".md")); err == nil && k > best {
			best, rel = k, filepath.Base(n)
		}
	}
	if best < 0 {
		return ""
	}
	if data, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || !strings.HasPrefix(string(data), writerTop+"\n") {
		return ""
	}
	return rel
}

// insertBelowTop adds the line tok below the top line of the kind's newest
// file in dir (read, then write, as an editor would) and returns that file
// (relative to dir) and whether it did. Lines are added, never replaced: a
// line replaced before a commit took it would never reach the remote.
func insertBelowTop(dir, kind, tok string) (string, bool) {
	rel := latestWriterFile(dir, kind)
	if rel == "" {
		return "", false
	}
	p := filepath.Join(dir, rel)
	data, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(string(data), writerTop+"\n")
	if !ok {
		return "", false
	}
	return rel, os.WriteFile(p, []byte(writerTop+"\n"+tok+"\n"+rest), 0o600) == nil
}

// historyLines is the set of lines that appear in a `git log -p` output
// (added, removed or context, in a plain or combined diff): each was in
// some committed version of a file.
func historyLines(log string) map[string]bool {
	set := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		l := sc.Text()
		for i := 0; i < 2 && l != "" && strings.ContainsRune("+- ", rune(l[0])); i++ {
			l = l[1:]
			set[l] = true
		}
	}
	return set
}
