package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// The hostile-agent soak (issue 38's last item): one daemon, hostile
// agents doing in a loop everything issues 27 and 38 walled off, beside
// well-behaved agents writing as real programs do and ending turns.
//
//   - h1's folder and .git: sparse 1 TB files and a file just over
//     --max-file-bytes; its objects/XX fan-out folders and objects/pack
//     linked to g1's, and info/alternates naming g1's objects, then a
//     read through h1's socket and the API of a note g1's own git
//     committed (its objects loose); a zlib bomb
//     committed with its own git, read by file?rev=, search and the push
//     check.
//   - h2's MCP: a session subscribed to 200 files whose GET /mcp stream
//     is never read (its files rewritten every round: another session of
//     h2's must be told of each round), and more sessions than
//     --mcp-max-sessions, every round.
//   - h3: an operator's `block set` made pending by a remote outage of h3's
//     only (the git server's faults match one repository's path), and the
//     agent's shell resetting its branch past it (`git reset --hard`),
//     every round, until the outage ends.
//   - g1, g2, g3: the writers real programs are (truncate and write,
//     append, temp and rename) each adding lines to its file, and a turn
//     for each every 250 ms.
//
// Each cycle ends with SIGTERM; the soak runs several on the same home
// (a restart: the start-up scan meets the sparse files and the bomb).
// After each: the daemon exited within --shutdown-timeout; every line the
// good agents wrote is in their file at the remote's tip (git show, the
// final push included); h3's operator change is on its remote; the
// daemon's RSS, sampled every 50 ms, stayed under hostileRSSBound.
func TestWalls_HostileAgents(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	const (
		maxFileBytes    = 256 << 10
		maxSessions     = 8
		shutdownTimeout = 10 * time.Second
		// exitGrace is the process's own exit after its shutdown's
		// bound: up to 1.2 s for a race-built daemon of 400-600 MiB
		// (a plain one: milliseconds).
		exitGrace = time.Second
		// minRounds: the non-reader's buffers are full by the third
		// round of 200 changed files (TestMCP_NonReaderDropped).
		minRounds = 6
	)
	good := []struct{ id, kind string }{{"g1", "truncate"}, {"g2", "append"}, {"g3", "rename"}}
	args := []string{"--max-file-bytes", strconv.Itoa(maxFileBytes), "--mcp-max-sessions", strconv.Itoa(maxSessions),
		"--mcp-write-timeout", "2s", "--shutdown-timeout", shutdownTimeout.String(),
		"--retry-initial", "50ms", "--retry-max", "200ms", "--retry-budget", "1s"}
	for _, id := range []string{"g1", "g2", "g3", "h1", "h2", "h3"} {
		args = append(args, "--agent", id)
	}
	cycles, length := soak.Int(1, 3), soak.Duration(4*time.Second, 50*time.Second)
	if s, err := strconv.Atoi(os.Getenv("MEMFSD_HOSTILE_SECONDS")); err == nil && s > 0 {
		length = time.Duration(s) * time.Second // a cycle's length, to try things
	}
	bound := hostileRSSBound()

	var written, onRemote, lost, rounds, refused, leftBehind int
	var peak int
	var slowestTold time.Duration
	var shutdowns []string
	var bombCommit string
	for c := range cycles {
		p := startDaemon(t, srv, home, args...)
		pid := p.cmd.Process.Pid
		if c == 0 {
			_, _, bombCommit = commitZlibBombs(t, memDir(home, "h1"))
		}

		// The daemon's RSS, sampled until SIGTERM.
		sampling := make(chan struct{})
		var sampled sync.WaitGroup
		var cyclePeak atomic.Int64
		sampled.Add(1)
		go func() {
			defer sampled.Done()
			for {
				if rss := int64(rssMiB(pid)); rss > cyclePeak.Load() {
					cyclePeak.Store(rss)
				}
				select {
				case <-sampling:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()

		// g1's own git commits a private note (its objects loose), which
		// h1 then reaches for through links in its own .git.
		g1Dir := memDir(home, "g1")
		private := fmt.Sprintf("private-%d.md", c)
		if err := os.WriteFile(filepath.Join(g1Dir, private), []byte(fmt.Sprintf("g1's private note %d\n", c)), 0o600); err != nil {
			t.Fatal(err)
		}
		git(t, g1Dir, "add", private)
		git(t, g1Dir, "commit", "-q", "-m", "g1's own note", "--", private)
		privCommit := strings.TrimSpace(git(t, g1Dir, "rev-parse", "HEAD"))

		// The good agents: a writer each, and turns.
		file := fmt.Sprintf("f-%d.md", c)
		type writer struct {
			id, stop, count string
			cmd             *exec.Cmd
		}
		var writers []writer
		for _, g := range good {
			tmp := t.TempDir()
			f := filepath.Join(memDir(home, g.id), file)
			if err := os.WriteFile(f, []byte(g.kind+" writer, cycle "+strconv.Itoa(c)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			w := writer{id: g.id, stop: filepath.Join(tmp, "stop"), count: filepath.Join(tmp, "count")}
			w.cmd = exec.Command("bash", "-c", agentWriters[g.kind])
			w.cmd.Env = append(os.Environ(), "F="+f, "STOP="+w.stop, "COUNT="+w.count, "TMP="+filepath.Join(tmp, "f.tmp"), "PAUSE=0.02")
			if err := w.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if w.cmd.ProcessState == nil {
					w.cmd.Process.Kill()
					w.cmd.Wait()
				}
			})
			writers = append(writers, w)
		}
		turning := make(chan struct{})
		var turned sync.WaitGroup
		turned.Add(1)
		go func() {
			defer turned.Done()
			for {
				for _, g := range good {
					p.kickTurn(t, g.id)
				}
				select {
				case <-turning:
					return
				case <-time.After(250 * time.Millisecond):
				}
			}
		}()

		// h2: a session that never reads its stream, first (the others
		// then fill the agent's sessions).
		setUpNonReader(t, home, "h2")
		mcpClient := newRawMCP(agentSock(home, "h2"))
		// Beside it, h2's reading session must be told of every round.
		reader, told := connectNotify(t, &mcp.StreamableClientTransport{Endpoint: "http://memfsd/mcp", HTTPClient: newRawMCP(agentSock(home, "h2")).hc}, nil, rawProtocol)
		if err := reader.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "memfsd://context"}); err != nil {
			t.Fatal(err)
		}

		// h3: the remote is down for h3 only; the operator sets its persona.
		srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/h3/state.git/git-receive-pack", Count: -1, Status: http.StatusServiceUnavailable})
		srv.AddFault(&gitserver.Fault{Match: "/v1/git/h3/state.git/info/refs?service=git-receive-pack", Count: -1, Status: http.StatusServiceUnavailable})
		persona := fmt.Sprintf("---\ndescription: the operator's persona, cycle %d\nread_only: true\n---\nI am owed (cycle %d).\n", c, c)
		pf := filepath.Join(t.TempDir(), "persona.md")
		os.WriteFile(pf, []byte(persona), 0o600)
		if code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", "h3", "--file", pf); code == 0 || !strings.Contains(out, "not on the remote yet") {
			t.Fatalf("block set during h3's outage: exit %d: %s", code, out)
		}

		h1Dir, h1Sock := memDir(home, "h1"), unixClient(agentSock(home, "h1"))
		resets := 0
		for r, end := 0, time.Now().Add(length); time.Now().Before(end) || r < minRounds; r++ {
			rounds++
			// h1: sparse and huge files.
			sparse := filepath.Join(h1Dir, fmt.Sprintf("sparse-%d.md", r%3))
			if out, err := exec.Command("truncate", "-s", "1T", sparse).CombinedOutput(); err != nil {
				t.Fatalf("truncate: %v %s", err, out)
			}
			huge := make([]byte, maxFileBytes+1)
			copy(huge, fmt.Sprintf("round %d\n", r))
			os.WriteFile(filepath.Join(h1Dir, fmt.Sprintf("huge-%d.md", r%3)), huge, 0o600)
			// h1: links in its .git to g1's; g1's file at g1's tip asked
			// for through h1's socket and the API.
			restore := linkGitAcross(t, filepath.Join(h1Dir, ".git"), filepath.Join(g1Dir, ".git"))
			p.kickTurn(t, "h1")
			for _, cl := range []*http.Client{h1Sock, p.api} {
				for _, rev := range []string{privCommit, privCommit[:7], privCommit[:4]} {
					if code, body := getText(t, cl, "/v1/agents/h1/file?path="+private+"&rev="+rev); code == 200 || strings.Contains(body, "private note") {
						t.Errorf("round %d: h1's file %s at g1's commit %s answered %d %.200q", r, private, rev, code, body)
					}
				}
			}
			restore()
			// h1: the bomb read, searched and pushed.
			if code, body := getText(t, h1Sock, "/v1/agents/h1/file?path=bomb.md&rev="+bombCommit); code == 200 {
				t.Errorf("round %d: h1's bomb.md answered 200 (%d bytes)", r, len(body))
			}
			getText(t, h1Sock, "/v1/agents/h1/search?q=zeros")
			p.kickTurn(t, "h1")
			// h2: more sessions than the bound; its non-reader's files.
			for range maxSessions + 2 {
				if sid, code, body, err := mcpClient.initialize(); code == http.StatusTooManyRequests {
					refused++
				} else if err != nil || sid == "" {
					t.Errorf("round %d: h2's initialize: %d %v %.200s", r, code, err, body)
				}
			}
			toldBefore, wrote := told.count("memfsd://context"), time.Now()
			writeRound(t, home, "h2", r)
			// h2 turns too: a backlog of rounds never pushed made its
			// push's pack build (~5,000 objects: >20 s under the race
			// detector, not cancelled by shutdown) hold its commits and
			// so its notifications past any bound (docs/testing.md,
			// Hostile agents).
			p.kickTurn(t, "h2")
			// h3: the operator's change dropped by the agent's shell.
			if subject, err := gitTry(memDir(home, "h3"), "log", "-1", "--format=%s"); err == nil && strings.Contains(subject, "operator set system/persona.md") {
				if _, err := gitTry(memDir(home, "h3"), "reset", "-q", "--hard", "HEAD~1"); err == nil {
					resets++
				}
			}
			p.kickTurn(t, "h3")
			waitFor(t, 60*time.Second, fmt.Sprintf("cycle %d round %d: h2's reading session told of the change beside the non-reader", c, r), func() bool {
				return told.count("memfsd://context") > toldBefore
			})
			slowestTold = max(slowestTold, time.Since(wrote))
			if p.cmd.ProcessState != nil || syscall.Kill(pid, 0) != nil {
				t.Fatalf("cycle %d round %d: the daemon died:\n%s", c, r, p.logs.String())
			}
		}
		if resets == 0 {
			t.Errorf("cycle %d: h3's branch was never reset past the operator's change", c)
		}
		for _, name := range []string{"sparse-0.md", "huge-0.md"} {
			waitFor(t, 30*time.Second, "h1's "+name+" held too_large", func() bool { return p.hasProblem("h1", name, "too_large") })
		}

		// h3's outage ends: the operator's change reaches its remote.
		srv.ClearFaults()
		waitFor(t, 60*time.Second, "h3's operator persona on its remote", func() bool {
			p.kickTurn(t, "h3")
			got, err := gitTry(srv.RepoDir("h3"), "show", "main:system/persona.md")
			return err == nil && got+"\n" == persona
		})

		// The writers stop; SIGTERM at once: the final push carries the
		// last lines.
		for _, w := range writers {
			os.WriteFile(w.stop, nil, 0o600)
		}
		for _, w := range writers {
			if err := w.cmd.Wait(); err != nil {
				t.Errorf("%s's writer: %v", w.id, err)
			}
		}
		close(turning)
		turned.Wait()
		if hwm := peakRSSMiB(pid); hwm > int(cyclePeak.Load()) {
			cyclePeak.Store(int64(hwm))
		}
		reader.Close()
		start := time.Now()
		watchExit(pid)
		p.cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		select {
		case err := <-exited:
			// The process's exit, not cmd.Wait's (which also waits for
			// its output pipe): /proc's state went Z before the reap.
			took := exitAt(pid).Sub(start)
			if took <= 0 {
				took = time.Since(start)
			}
			shutdowns = append(shutdowns, took.Round(time.Millisecond).String())
			if took > shutdownTimeout+exitGrace {
				t.Errorf("cycle %d: SIGTERM to exit %s, over --shutdown-timeout %s (+%s for the exit)", c, took, shutdownTimeout, exitGrace)
			}
			// An agent still closing at the bound is left behind (named
			// in the log), its commits local for the next start.
			for l := range strings.Lines(p.logs.String()) {
				if strings.Contains(l, "still closing") || strings.Contains(l, "shutdown timeout reached") {
					leftBehind++
					t.Logf("cycle %d: exit %v at the bound: %s", c, err, strings.TrimSpace(l))
				}
			}
		case <-time.After(shutdownTimeout + 5*time.Second):
			t.Fatalf("cycle %d: the daemon still runs %s after SIGTERM (--shutdown-timeout %s)", c, shutdownTimeout+5*time.Second, shutdownTimeout)
		}
		close(sampling)
		sampled.Wait()
		peak = max(peak, int(cyclePeak.Load()))

		// Every line each good agent wrote, in its file at the remote's tip.
		for _, w := range writers {
			data, err := os.ReadFile(w.count)
			if err != nil {
				t.Fatalf("%s's writer wrote nothing: %v", w.id, err)
			}
			last, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			tipText, _ := gitTry(srv.RepoDir(w.id), "show", "main:"+file)
			have := map[string]bool{}
			for l := range strings.Lines(tipText) {
				have[strings.TrimSpace(l)] = true
			}
			missing := 0
			for i := 0; i <= last; i++ {
				if l := fmt.Sprintf("agent-%d", i); !have[l] {
					if missing++; missing <= 5 {
						t.Errorf("cycle %d: %s's line %s is not in %s at the remote's tip", c, w.id, l, file)
					}
				}
			}
			written += last + 1
			onRemote += last + 1 - missing
			lost += missing
		}
		if _, err := gitTry(srv.RepoDir("h1"), "cat-file", "-e", bombCommit); err == nil {
			t.Errorf("cycle %d: h1's bomb commit reached its remote", c)
		}
		t.Logf("hostile cycle %d: %d rounds, %d resets of h3 past the operator's change, peak RSS %d MiB, shutdown %s", c, rounds, resets, cyclePeak.Load(), shutdowns[len(shutdowns)-1])
	}
	t.Logf("hostile: %d cycles of %s, %d hostile rounds, %d MCP sessions refused; good agents' lines written %d, on the remote %d, lost %d; daemon peak RSS %d MiB (bound %d); shutdowns %s (bound %s), %d of them at the bound with an agent still closing; h2's reading session told of a round within %s at worst",
		cycles, length, rounds, refused, written, onRemote, lost, peak, bound, strings.Join(shutdowns, " "), shutdownTimeout, leftBehind, slowestTold.Round(time.Millisecond))
	if refused == 0 {
		t.Error("no MCP session of h2 was refused: the bound was never reached")
	}
	if peak > bound {
		t.Errorf("daemon peak RSS %d MiB, want under %d", peak, bound)
	}
}

// exitSeen holds, by pid, when watchExit saw the process exit.
var exitSeen sync.Map

// watchExit polls /proc every 5 ms until pid is a zombie (exited, not
// yet reaped) or gone, and records when in exitSeen.
func watchExit(pid int) {
	go func() {
		for {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := strings.LastIndexByte(string(data), ')'); err != nil || i > 0 && i+2 < len(data) && data[i+2] == 'Z' {
				exitSeen.Store(pid, time.Now())
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

// exitAt is when watchExit saw pid exit (waiting up to 100 ms for it),
// or the zero time.
func exitAt(pid int) time.Time {
	for i := 0; i < 20; i++ {
		if _, ok := exitSeen.Load(pid); ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, ok := exitSeen.Load(pid); ok {
		return v.(time.Time)
	}
	return time.Time{}
}

// hostileRSSBound is the daemon's RSS bound in the hostile soak (MiB): a
// daemon built with -race (the soaks build it so) holds several times a
// plain one's memory. Either is far below one bomb inflated (1 GiB).
func hostileRSSBound() int {
	if raceDaemon() {
		return 800
	}
	return 300
}

// linkGitAcross makes from's .git reach into to's objects as a hostile
// shell would: every fan-out folder to has (up to 16) linked in place of
// from's, objects/pack linked to to's, and info/alternates naming to's
// objects. It returns what puts from's own objects back.
func linkGitAcross(t *testing.T, from, to string) (restore func()) {
	t.Helper()
	var undo []func()
	swap := func(rel string) {
		mine, theirs := filepath.Join(from, "objects", rel), filepath.Join(to, "objects", rel)
		kept := mine + ".mine"
		if err := os.Rename(mine, kept); err != nil && !os.IsNotExist(err) {
			return
		}
		if err := os.Symlink(theirs, mine); err != nil {
			os.Rename(kept, mine)
			return
		}
		undo = append(undo, func() {
			os.Remove(mine)
			os.Rename(kept, mine)
		})
	}
	ents, _ := os.ReadDir(filepath.Join(to, "objects"))
	n := 0
	for _, e := range ents {
		if len(e.Name()) == 2 && e.IsDir() && n < 16 {
			swap(e.Name())
			n++
		}
	}
	swap("pack")
	alt := filepath.Join(from, "objects", "info", "alternates")
	os.MkdirAll(filepath.Dir(alt), 0o755)
	if os.WriteFile(alt, []byte(filepath.Join(to, "objects")+"\n"), 0o644) == nil {
		undo = append(undo, func() { os.Remove(alt) })
	}
	return func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}
