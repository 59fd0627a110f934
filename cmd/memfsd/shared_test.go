package main_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type sharedAnswer struct {
	Shared []struct {
		Name      string `json:"name"`
		Write     string `json:"write"`
		RemoteURL string `json:"remote_url"`
		View      string `json:"view"`
	} `json:"shared"`
	Error string `json:"error"`
}

func (p *proc) sharedList(id string) sharedAnswer {
	p.t.Helper()
	var out sharedAnswer
	if code, err := p.get("/v1/agents/"+id+"/shared", &out); err != nil || code != 200 {
		p.t.Fatalf("GET shared of %s: %d %v %s", id, code, err, out.Error)
	}
	return out
}

// TestShared_AttachListDetachPersist: attaching is the operator's (the
// agent's socket answers 403); memfsd shared attach goes through the admin
// socket, the default remote is letta-code's
// <base>/v1/git/<agent>/repositories/<name>.git, a second agent attached
// to the name takes the home's remote, another URL for it is refused 409,
// bad policies and names 400; the attachments survive a restart and
// memfsd shared detach drops one.
func TestShared_AttachListDetachPersist(t *testing.T) {
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "s1", "--agent", "s2")

	var fail sharedAnswer
	if code, _ := p.call("PUT", "/v1/agents/s1/shared/team", `{"write":"allow"}`, &fail); code != 403 || !strings.Contains(fail.Error, "admin socket") {
		t.Fatalf("PUT shared on the agent's socket: %d %+v", code, fail)
	}
	if code, out := runCLI(t, srv, home, "shared", "attach", "team", "--agent", "s1", "--write", "allow"); code != 0 || !strings.Contains(out, "team") {
		t.Fatalf("memfsd shared attach: %d %s", code, out)
	}
	if code, out := runCLI(t, srv, home, "shared", "attach", "team", "--agent", "s2", "--write", "propose"); code != 0 {
		t.Fatalf("memfsd shared attach s2: %d %s", code, out)
	}
	want := srv.SharedURL("s1", "team")
	l1, l2 := p.sharedList("s1"), p.sharedList("s2")
	if len(l1.Shared) != 1 || l1.Shared[0].Write != "allow" || l1.Shared[0].RemoteURL != want {
		t.Fatalf("s1's shared: %+v, want team allow %s", l1, want)
	}
	if len(l2.Shared) != 1 || l2.Shared[0].Write != "propose" || l2.Shared[0].RemoteURL != want {
		t.Fatalf("s2's shared: %+v, want team propose at s1's URL %s (one name, one repository per home)", l2, want)
	}
	for _, bad := range []struct {
		path, body string
		code       int
	}{
		{"/v1/agents/s2/shared/team", `{"write":"maybe"}`, 400},
		{"/v1/agents/s2/shared/memory", `{"write":"allow"}`, 400},
		{"/v1/agents/s2/shared/team", `{"remote_url":"` + srv.SharedURL("s2", "other") + `"}`, 409},
		{"/v1/agents/s2/shared/x", `{"remote_url":"https://u:p@host/x.git"}`, 400},
	} {
		if code, _ := p.adminCall("PUT", bad.path, bad.body, &fail); code != bad.code {
			t.Fatalf("PUT %s %s: %d %+v, want %d", bad.path, bad.body, code, fail, bad.code)
		}
	}

	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.logs.String())
	}
	p = startDaemon(t, srv, home, "--agent", "s1", "--agent", "s2")
	if l := p.sharedList("s2"); len(l.Shared) != 1 || l.Shared[0].Write != "propose" {
		t.Fatalf("s2's shared after a restart: %+v", l)
	}
	if code, out := runCLI(t, srv, home, "shared", "detach", "team", "--agent", "s2"); code != 0 {
		t.Fatalf("memfsd shared detach: %d %s", code, out)
	}
	if l := p.sharedList("s2"); len(l.Shared) != 0 {
		t.Fatalf("s2's shared after detach: %+v", l)
	}
	code, out := runCLI(t, srv, home, "shared", "list", "--agent", "s1", "--json")
	var listed sharedAnswer
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Shared) != 1 {
		t.Fatalf("memfsd shared list --json: %d %s", code, out)
	}
	if code, out := runCLI(t, srv, home, "shared", "detach", "nope", "--agent", "s1"); code == 0 {
		t.Fatalf("detach of a name not attached succeeded: %s", out)
	}
}
