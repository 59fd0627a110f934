package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
	"github.com/memfsd/memfsd/internal/testgit"
)

const token = "e2e-token-9f8e7d"

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memfsd-bin-")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "memfsd")
	flag.Parse()
	// The end-to-end tests spend most of their time waiting on daemons
	// (debounces, backoffs, a remote's answer), not on a CPU: run more of
	// them at once than the default (GOMAXPROCS) unless -parallel says.
	setParallel := false
	flag.Visit(func(f *flag.Flag) { setParallel = setParallel || f.Name == "test.parallel" })
	if !setParallel {
		flag.Set("test.parallel", "6")
	}
	args := []string{"build", "-o", binPath, "."}
	if raceDaemon() {
		args = []string{"build", "-race", "-o", binPath, "."}
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build memfsd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// raceDaemon says whether the daemon the tests start is built with the race
// detector. The suite runs the binary people deploy: a race-built daemon
// took 231 s of CPU in this package against 131 s (2 cores: the suite's
// largest cost after compiling), while the daemon's code runs under the
// race detector in its own packages' tests (agent, daemon, gitmem, ...).
// The soaks (MEMFSD_SOAK=1) and scripts/soak.sh's e2e-race pass
// (MEMFSD_RACE_DAEMON=1: this whole package again) build it with -race;
// benchmarks and MEMFSD_NORACE=1 never do.
func raceDaemon() bool {
	if f := flag.Lookup("test.bench"); (f != nil && f.Value.String() != "") || os.Getenv("MEMFSD_NORACE") == "1" {
		return false
	}
	return soak.On() || os.Getenv("MEMFSD_RACE_DAEMON") == "1"
}

// proc is a running `memfsd run`.
type proc struct {
	t     testing.TB
	home  string
	cmd   *exec.Cmd
	logs  *syncBuffer
	api   *http.Client // the agent's socket
	admin *http.Client // the operator's socket
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDaemon runs the binary on home against srv (args add flags) and
// waits until it is healthy and every agent's start-up sync has ended.
func startDaemon(t testing.TB, srv *gitserver.Server, home string, args ...string) *proc {
	t.Helper()
	p := launchDaemon(t, srv, home, args...)
	p.waitHealthy(60 * time.Second)
	// Healthy means every work tree is usable; the start-up syncs run on in
	// the background. Most scenarios start from a settled daemon.
	waitFor(t, 60*time.Second, "start-up syncs done", func() bool {
		var out struct {
			Agents []status `json:"agents"`
		}
		if code, err := p.get("/v1/agents", &out); err != nil || code != 200 {
			return false
		}
		for _, st := range out.Agents {
			if st.LastSyncAt == nil && string(st.LastError) == "null" {
				return false
			}
		}
		return true
	})
	return p
}

func (p *proc) waitHealthy(d time.Duration) {
	p.t.Helper()
	waitFor(p.t, d, "daemon healthy", func() bool {
		code, _ := p.get("/healthz", nil)
		return code == 200
	})
}

// launchDaemon starts the binary and returns at once.
func launchDaemon(t testing.TB, srv *gitserver.Server, home string, args ...string) *proc {
	t.Helper()
	return launchDaemonAs(t, srv, home, binPath, nil, args...)
}

// launchDaemonAs is launchDaemon with the binary at bin, run as cred's
// user and group when cred is not nil (the test process is root).
func launchDaemonAs(t testing.TB, srv *gitserver.Server, home, bin string, cred *syscall.Credential, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, home: home, logs: &syncBuffer{}}
	full := append([]string{"run", "--home", home, "--base-url", srv.URL, "--debounce", "50ms", "--log-level", "debug"}, args...)
	p.cmd = exec.Command(bin, full...)
	if cred != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	p.cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	// Wait returns at most this long after the daemon exits, even if
	// something still held its output pipe: a clean-up never hangs on it.
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(home, "memfsd.sock")
	p.admin = unixClient(filepath.Join(home, "admin.sock"))
	p.api = &http.Client{Timeout: clientTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", p.logs.String())
		}
	})
	return p
}

// clientTimeout bounds a test's request to a daemon. It outlasts the
// longest server-side wait a test asks for (a turn's ?wait=60s answers
// "delayed" at 60 s): with the two equal, a turn under load 28 was cut
// by the client just before its answer (TestChaos, a fresh-clone run).
const clientTimeout = 120 * time.Second

func unixClient(sock string) *http.Client {
	return &http.Client{Timeout: clientTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func (p *proc) get(path string, out any) (int, error) { return p.call("GET", path, "", out) }

// adminCall is call on the operator's socket.
func (p *proc) adminCall(method, path, body string, out any) (int, error) {
	return p.callOn(p.admin, method, path, body, out)
}

func (p *proc) call(method, path, body string, out any) (int, error) {
	return p.callOn(p.api, method, path, body, out)
}

func (p *proc) callOn(c *http.Client, method, path, body string, out any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://memfsd"+path, rd)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s: %v", data, err)
		}
	}
	return resp.StatusCode, nil
}

type turnResult struct {
	Outcome string `json:"outcome"`
	Pushed  int    `json:"pushed"`
	Status  status `json:"status"`
	Error   string `json:"error"`
}

type status struct {
	Agent       string          `json:"agent"`
	State       string          `json:"state"`
	Head        string          `json:"head"`
	RemoteHead  string          `json:"remote_head"`
	Ahead       int             `json:"ahead"`
	Dirty       []string        `json:"dirty"`
	LastError   json.RawMessage `json:"last_error"`
	Conflicts   []string        `json:"conflicts"`
	HeldDeletes []string        `json:"held_deletes"`
	// HeldRemoteDeletes are files a held remote update would delete.
	HeldRemoteDeletes []string   `json:"held_remote_deletes"`
	LastSyncAt        *time.Time `json:"last_sync_at"`
	// GitRefused is what in the agent's .git memfsd would not read.
	GitRefused []string `json:"git_refused"`
}

func (p *proc) turn(id string) turnResult {
	p.t.Helper()
	var tr turnResult
	code, err := p.call("POST", "/v1/agents/"+id+"/turn?wait=60s", "", &tr)
	if err != nil || code != 200 {
		p.t.Fatalf("turn %s: %d %v", id, code, err)
	}
	return tr
}

func (p *proc) status(id string) status {
	p.t.Helper()
	var st status
	if code, err := p.get("/v1/agents/"+id+"/status", &st); err != nil || code != 200 {
		p.t.Fatalf("status %s: %d %v", id, code, err)
	}
	return st
}

// stop sends sig and waits for the exit.
func (p *proc) stop(sig syscall.Signal) error {
	p.cmd.Process.Signal(sig)
	return p.cmd.Wait()
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// git runs the git CLI as a person would beside the daemon: a command
// refused because memfsd holds .git/index.lock at that instant (git fails
// before it changes anything) is tried again, for up to 10 s, as the
// person would; any other failure fails the test.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, err := testgit.Try(dir, args...)
		if err == nil {
			return out
		}
		if !strings.Contains(out, "index.lock': File exists") || time.Now().After(deadline) {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func commitCount(t testing.TB, dir, rev string) int {
	var n int
	fmt.Sscan(git(t, dir, "rev-list", "--count", rev), &n)
	return n
}

func memDir(home, id string) string { return filepath.Join(home, "agents", id, "memory") }

// gitTry runs git and returns its output and error without failing the test.
func gitTry(dir string, args ...string) (string, error) { return testgit.Try(dir, args...) }

// waitRepackIdle waits until no repack runs in the work tree dir (no live
// process holds .git/gc.pid, twice in a row; a killed daemon's is left
// behind): a git fsck beside a running repack sees loose objects vanish
// under it into the new pack.
func waitRepackIdle(t testing.TB, dir string) {
	t.Helper()
	idle := func() bool {
		data, err := os.ReadFile(filepath.Join(dir, ".git", "gc.pid"))
		if os.IsNotExist(err) {
			return true
		}
		var pid int
		if _, serr := fmt.Sscanf(string(data), "%d", &pid); serr != nil || pid <= 0 {
			return false // being written
		}
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	// A repack's delta search under -race on a loaded 2-core machine (the
	// suite's other packages beside it) took over 90 s once.
	waitFor(t, 3*time.Minute, "no repack running in "+dir, func() bool {
		if !idle() {
			return false
		}
		time.Sleep(300 * time.Millisecond) // a queued second repack starts within this
		return idle()
	})
}
