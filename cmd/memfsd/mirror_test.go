package main_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Scenarios of issue 22's mirror remote: every push to the primary is
// copied to a second URL in the background.

type mirrorAnswer struct {
	Mirror *struct {
		URL           string `json:"url"`
		Source        string `json:"source"`
		State         string `json:"state"`
		LastPushedTip string `json:"last_pushed_tip"`
		PrimaryTip    string `json:"primary_tip"`
		Pending       int    `json:"pending"`
		LastError     *struct {
			Class    string `json:"class"`
			Message  string `json:"message"`
			NextStep string `json:"next_step"`
		} `json:"last_error"`
		Log []struct {
			Outcome string `json:"outcome"`
			Class   string `json:"class"`
			Commits int    `json:"commits"`
		} `json:"log"`
	} `json:"mirror"`
}

func (p *proc) mirror(id string) mirrorAnswer {
	p.t.Helper()
	var m mirrorAnswer
	if code, err := p.get("/v1/agents/"+id+"/mirror", &m); err != nil || code != 200 {
		p.t.Fatalf("GET mirror %s: %d %v", id, code, err)
	}
	return m
}

// mirrorSameLog fails unless the mirror's main has the primary's commits,
// in order, and passes git fsck --strict.
func mirrorSameLog(t *testing.T, primary, mirror *gitserver.Server, id string) {
	t.Helper()
	want := git(t, primary.RepoDir(id), "log", "--format=%H %s", "main")
	got := git(t, mirror.RepoDir(id), "log", "--format=%H %s", "main")
	if got != want {
		t.Fatalf("mirror's log differs from the primary's:\nmirror:\n%s\nprimary:\n%s", got, want)
	}
	git(t, mirror.RepoDir(id), "fsck", "--strict")
	git(t, primary.RepoDir(id), "fsck", "--strict")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestMirror_DownThenUp: a mirror that answers 503 for a while, then
// comes back: every commit arrives in order, the turns never waited on it,
// and the failure shows in status and metrics with class and next step,
// then clears.
func TestMirror_DownThenUp(t *testing.T) {
	t.Parallel()
	primary, mirror := gitserver.New(t, token), gitserver.New(t, "")
	// Down and slow to say so: a turn that waited on it would show.
	down := mirror.AddFault(&gitserver.Fault{Count: -1, Status: 503, Delay: 700 * time.Millisecond})
	home := t.TempDir()
	p := startDaemon(t, primary, home, "--agent", "mir", "--agent", "base",
		"--mirror-template", mirror.URL+"/v1/git/{agent}/state.git", "--retry-initial", "50ms", "--retry-max", "400ms")
	// "base" has no mirror: the operator turned the template's off.
	if code, err := p.adminCall("DELETE", "/v1/agents/base/mirror", "", nil); err != nil || code != 200 {
		t.Fatalf("DELETE base's mirror: %d %v", code, err)
	}
	baseBefore := mirror.RequestsMatching("/v1/git/base/") // the template's, before the DELETE

	// Turns, interleaved, for the agent whose mirror is down and the one
	// without a mirror.
	const turns = 12
	lat := map[string][]time.Duration{}
	for i := range turns {
		for _, id := range []string{"base", "mir"} {
			if out, isErr := p.memory(id, fmt.Sprintf(`{"command":"create","path":"/memories/notes/n%02d.md","file_text":"note %d\n"}`, i, i)); isErr {
				t.Fatalf("memory %s: %s", id, out)
			}
			start := time.Now()
			tr := p.turn(id)
			lat[id] = append(lat[id], time.Since(start))
			if tr.Outcome != "pushed" {
				t.Fatalf("turn %s: %+v", id, tr)
			}
		}
	}
	t.Logf("turn latency, %d turns: no mirror median %s max %s; mirror down median %s max %s",
		turns, median(lat["base"]), slices.Max(lat["base"]), median(lat["mir"]), slices.Max(lat["mir"]))
	if m, b := median(lat["mir"]), median(lat["base"]); m > 3*b+500*time.Millisecond {
		t.Fatalf("turns waited on the mirror: median %s with the mirror down, %s without", m, b)
	}
	if mx := slices.Max(lat["mir"]); mx > 5*time.Second {
		t.Fatalf("a turn took %s with the mirror down", mx)
	}

	// While down: status shows the failure, the agent itself is clean.
	waitFor(t, 10*time.Second, "the mirror failure in status", func() bool {
		m := p.mirror("mir").Mirror
		return m != nil && m.State == "retrying" && m.LastError != nil
	})
	m := p.mirror("mir").Mirror
	if m.LastError.Class != "retryable" || !strings.Contains(m.LastError.NextStep, "retries with backoff") || m.Pending < turns || m.Source != "template" {
		t.Fatalf("mirror status while down: %+v %+v", m, m.LastError)
	}
	if st := p.status("mir"); st.State != "clean" {
		t.Fatalf("the agent's state is %q while only its mirror is down; want clean", st.State)
	}
	metrics := scrape(t, p)
	for _, want := range []string{`memfsd_mirror_failures_total{class="retryable"}`, `memfsd_mirror_pushes_total{outcome="failed"}`} {
		if v := metricValue(metrics, want); v < 1 {
			t.Fatalf("%s = %v while the mirror is down\n%s", want, v, metrics)
		}
	}
	if v := metricValue(metrics, "memfsd_mirror_pending_commits"); v < turns {
		t.Fatalf("memfsd_mirror_pending_commits = %v, want at least %d", v, turns)
	}
	if down.Hits.Load() == 0 {
		t.Fatal("the mirror saw no request")
	}

	// Up again: everything arrives, in order; the error clears.
	mirror.ClearFaults()
	waitFor(t, 30*time.Second, "the mirror to catch up", func() bool {
		m := p.mirror("mir").Mirror
		return m != nil && m.State == "synced" && m.LastError == nil && m.Pending == 0
	})
	mirrorSameLog(t, primary, mirror, "mir")
	m = p.mirror("mir").Mirror
	if m.LastPushedTip != git(t, primary.RepoDir("mir"), "rev-parse", "main") {
		t.Fatalf("last_pushed_tip %s, primary at %s", m.LastPushedTip, git(t, primary.RepoDir("mir"), "rev-parse", "main"))
	}
	if n := len(m.Log); n < 2 || m.Log[0].Outcome != "failed" || m.Log[n-1].Outcome != "pushed" {
		t.Fatalf("push log: %+v, want failures then a push", m.Log)
	}
	metrics = scrape(t, p)
	if v := metricValue(metrics, `memfsd_mirror_pushes_total{outcome="pushed"}`); v < 1 {
		t.Fatalf("no mirror push counted\n%s", metrics)
	}
	if v := metricValue(metrics, "memfsd_mirror_pending_commits"); v != 0 {
		t.Fatalf("memfsd_mirror_pending_commits = %v after catching up", v)
	}
	if n := mirror.RequestsMatching("/v1/git/base/"); n != baseBefore {
		t.Fatalf("the agent whose mirror is off reached the mirror host %d times", n-baseBefore)
	}

	// Later pushes follow in the background; the mirror is never fetched from.
	p.memory("mir", `{"command":"create","path":"/memories/after.md","file_text":"after\n"}`)
	p.turn("mir")
	waitFor(t, 10*time.Second, "the next commit on the mirror", func() bool {
		out, err := gitTry(mirror.RepoDir("mir"), "cat-file", "-e", "main:after.md")
		return err == nil && out == ""
	})
	mirrorSameLog(t, primary, mirror, "mir")
	if n := mirror.RequestsMatching("git-upload-pack"); n != 0 {
		t.Fatalf("memfsd fetched from the mirror %d times", n)
	}
}

func scrape(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := p.api.Get("http://memfsd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(data)
}

// metricValue is the value of the series named exactly (with labels).
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

// TestMirror_OnlyTheOperatorSetsIt: the mirror is set and unset on the
// admin socket (or `memfsd mirror`); the agent's own socket and the shared
// socket refuse it and nothing is recorded — a mirror URL chosen by the
// agent would copy its memory anywhere.
func TestMirror_OnlyTheOperatorSetsIt(t *testing.T) {
	t.Parallel()
	primary, mirror := gitserver.New(t, token), gitserver.New(t, "")
	home := t.TempDir()
	p := startDaemon(t, primary, home, "--agent", "a1")
	own := sockClient(agentSock(home, "a1"))
	evil := mirror.URL + "/v1/git/stolen/state.git"
	for _, c := range []struct {
		name string
		call func(method, path, body string) (int, error)
	}{
		{"own socket", func(m, path, body string) (int, error) { return p.callOn(own, m, path, body, nil) }},
		{"shared socket", func(m, path, body string) (int, error) { return p.call(m, path, body, nil) }},
	} {
		for _, r := range []struct{ method, path, body string }{
			{"PUT", "/v1/agents/a1/mirror", `{"url":"` + evil + `"}`},
			{"DELETE", "/v1/agents/a1/mirror", ""},
			{"POST", "/v1/agents/a1/mirror/push", `{"force":true}`},
		} {
			if code, err := c.call(r.method, r.path, r.body); err != nil || code != 403 {
				t.Fatalf("%s: %s %s answered %d %v, want 403", c.name, r.method, r.path, code, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(home, "agents", "a1", "mirror-url")); !os.IsNotExist(err) {
		t.Fatalf("a mirror was recorded through the agent's socket: %v", err)
	}
	if p.mirror("a1").Mirror != nil {
		t.Fatal("the agent has a mirror after refused requests")
	}
	if n := mirror.Requests(); n != 0 {
		t.Fatalf("the mirror host saw %d requests", n)
	}

	// Credentials in a per-agent URL are refused (they would be stored).
	if code, _ := p.adminCall("PUT", "/v1/agents/a1/mirror", `{"url":"http://u:pw@`+mirror.URL[len("http://"):]+`/v1/git/a1/state.git"}`, nil); code != 400 {
		t.Fatalf("a mirror URL with credentials answered %d, want 400", code)
	}
	// The primary is not a mirror.
	if code, _ := p.adminCall("PUT", "/v1/agents/a1/mirror", `{"url":"`+primary.RemoteURL("a1")+`"}`, nil); code != 400 {
		t.Fatalf("the primary as mirror answered %d, want 400", code)
	}

	// The operator sets it with the CLI (admin socket): pushed at once.
	if code, out := runCLI(t, primary, home, "mirror", "set", "--agent", "a1", "--url", mirror.RemoteURL("a1")); code != 0 {
		t.Fatalf("mirror set: %d %s", code, out)
	}
	waitFor(t, 10*time.Second, "the first mirror push", func() bool {
		m := p.mirror("a1").Mirror
		return m != nil && m.State == "synced" && m.LastPushedTip != ""
	})
	mirrorSameLog(t, primary, mirror, "a1")
	if m := p.mirror("a1").Mirror; m.Source != "agent" {
		t.Fatalf("source %q, want agent", m.Source)
	}
	// The agent sees the status (read-only) on its own socket.
	var seen mirrorAnswer
	if code, err := p.callOn(own, "GET", "/v1/agents/a1/mirror", "", &seen); err != nil || code != 200 || seen.Mirror == nil {
		t.Fatalf("GET mirror on the agent's socket: %d %v %+v", code, err, seen)
	}
	code, out := runCLI(t, primary, home, "mirror", "push", "--agent", "a1")
	if code != 0 || !strings.Contains(out, "up_to_date") {
		t.Fatalf("mirror push: %d %s", code, out)
	}
	code, out = runCLI(t, primary, home, "mirror", "status", "--agent", "a1")
	if code != 0 || !strings.Contains(out, "state: synced") || !strings.Contains(out, "pending: 0") {
		t.Fatalf("mirror status: %d %s", code, out)
	}

	// Unset: later commits stay off the mirror.
	tip := git(t, mirror.RepoDir("a1"), "rev-parse", "main")
	if code, out := runCLI(t, primary, home, "mirror", "unset", "--agent", "a1"); code != 0 || !strings.Contains(out, "mirror: none") {
		t.Fatalf("mirror unset: %d %s", code, out)
	}
	p.memory("a1", `{"command":"create","path":"/memories/later.md","file_text":"later\n"}`)
	if tr := p.turn("a1"); tr.Outcome != "pushed" {
		t.Fatalf("turn: %+v", tr)
	}
	time.Sleep(300 * time.Millisecond)
	if got := git(t, mirror.RepoDir("a1"), "rev-parse", "main"); got != tip {
		t.Fatalf("the mirror moved after unset: %s, was %s", got, tip)
	}
	if p.mirror("a1").Mirror != nil {
		t.Fatal("status still shows a mirror after unset")
	}
}
