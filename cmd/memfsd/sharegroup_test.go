package main_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// The uids of the sidecar test: memfsd runs as 1000:1000, the agent as
// 1001 in group 1000 (the Kubernetes example's runAsUser/runAsGroup).
const (
	sidecarUID = 1000
	agentUID   = 1001
	sharedGID  = 1000
)

// sharedBase makes a folder both users can pass through (t.TempDir is
// root's 0700) and puts a copy of the binary in it they can run.
func sharedBase(t *testing.T) (base, bin string) {
	t.Helper()
	base, err := os.MkdirTemp("", "memfsd-share-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(base); d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not passable by other users (%v): the other-uid test needs a temp folder they can reach", d, err)
		}
	}
	// A hard link, not a copy: a file just written can be held open for
	// writing by another test's fork, and exec refuses it (text file busy).
	bin = filepath.Join(base, "memfsd")
	if err := os.Link(binPath, bin); err != nil {
		t.Skipf("link the binary into %s: %v", base, err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, sidecarUID, sharedGID); err != nil {
		t.Fatal(err)
	}
	return base, bin
}

// agentShell runs script with sh in dir as the agent: another uid in
// memfsd's group.
func agentShell(t *testing.T, dir, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	// Its own primary group, memfsd's as a supplementary one (usermod -aG,
	// the systemd example); in Kubernetes memfsd's group is its primary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentUID, Groups: []uint32{sharedGID}}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A sidecar and an agent that run as different users in one group (issue
// 40): with --share-group the agent (uid 1001, group 1001, in group 1000)
// reads its
// blocks, writes a file that memfsd (uid 1000) commits and pushes, and
// ends its turn on its own socket; a read-only block it overwrites is put
// back and never reaches the remote; memfsd's home stays unlistable and
// its records and the admin socket out of reach. Without --share-group the agent gets
// "Permission denied" at its first read.
func TestShareGroup_AgentAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: runs memfsd and the agent as uids 1000 and 1001, which needs root (this process is not)")
	}
	t.Parallel()
	const persona = "---\ndescription: the operator's persona\nread_only: true\n---\nI am the operator's.\n"
	base, bin := sharedBase(t)
	home := filepath.Join(base, "home")
	srv := gitserver.New(t, token)
	p := launchDaemonAs(t, srv, home, bin, &syscall.Credential{Uid: sidecarUID, Gid: sharedGID}, "--agent", "sg", "--share-group")
	p.waitHealthy(60 * time.Second)
	waitFor(t, 60*time.Second, "start-up sync", func() bool { return p.status("sg").LastSyncAt != nil })
	blockSet(t, srv, home, "sg", "persona", persona)

	dir := memDir(home, "sg")
	sock := agentSock(home, "sg")
	for _, c := range []struct {
		path string
		want fs.FileMode
	}{{home, 0o710}, {filepath.Join(home, "agents"), 0o710}, {filepath.Dir(dir), 0o710}, {dir, 0o770}, {filepath.Join(dir, "system"), 0o770}, {filepath.Join(dir, "system", "persona.md"), 0o660}, {sock, 0o660}, {filepath.Join(home, "admin.sock"), 0o600}} {
		if fi, err := os.Lstat(c.path); err != nil || fi.Mode().Perm() != c.want {
			t.Errorf("%s: %v, want mode %o", c.path, modeOrErr(fi, err), c.want)
		}
	}

	// The agent's shell: umask 0007 (docs/operator.md, Deploy), so what
	// it makes is the group's too.
	script := `umask 0007
set -e
cat system/persona.md
mkdir -p notes
echo "written by uid $(id -u)" > notes/a.md
printf 'the agent was here\n' > system/persona.md
` + bin + ` turn --agent sg --wait 60s --listen unix://` + sock + `
`
	out, err := agentShell(t, dir, script)
	if err != nil {
		t.Fatalf("the agent's shell (uid %d, gid %d): %v\n%s", agentUID, sharedGID, err, out)
	}
	if !strings.Contains(out, "I am the operator's.") || !strings.Contains(out, `"outcome"`) {
		t.Fatalf("the agent's shell printed:\n%s\nwant its persona and the turn's outcome", out)
	}
	bare := srv.RepoDir("sg")
	waitFor(t, 30*time.Second, "notes/a.md on the remote", func() bool {
		got, err := gitTry(bare, "show", "main:notes/a.md")
		return err == nil && strings.TrimSpace(got) == "written by uid 1001"
	})
	p.turn("sg")
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != persona {
		t.Fatalf("remote persona = %q, want the operator's: a read-only block changed by the agent in the group", got)
	}
	waitFor(t, 30*time.Second, "the persona put back", func() bool {
		got, _ := os.ReadFile(filepath.Join(dir, "system", "persona.md"))
		return string(got) == persona
	})
	// The folder is set-group-ID: what the agent made is memfsd's group's.
	if fi, err := os.Stat(dir); err != nil || fi.Mode()&fs.ModeSetgid == 0 {
		t.Errorf("memory folder: %v, want set-group-ID", modeOrErr(fi, err))
	}
	if fi, err := os.Stat(filepath.Join(dir, "notes", "a.md")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != agentUID || fi.Sys().(*syscall.Stat_t).Gid != sharedGID {
		t.Fatalf("notes/a.md: %v %v, want the agent's file in group %d", fi, err, sharedGID)
	}

	// The agent replaces the read-only block with a file of its own (its
	// owner now): put back all the same.
	if out, err := agentShell(t, dir, "umask 0007; rm system/persona.md && printf 'mine now\\n' > system/persona.md"); err != nil {
		t.Fatalf("the agent's rm and write: %v\n%s", err, out)
	}
	p.turn("sg")
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != persona {
		t.Fatalf("remote persona = %q after the agent replaced the file, want the operator's", got)
	}
	waitFor(t, 30*time.Second, "the replaced persona put back", func() bool {
		got, _ := os.ReadFile(filepath.Join(dir, "system", "persona.md"))
		return string(got) == persona
	})

	// What is memfsd's alone stays so.
	for _, probe := range []string{"ls " + home, "cat " + filepath.Join(filepath.Dir(dir), "origin-url"), bin + " health --listen unix://" + filepath.Join(home, "admin.sock")} {
		if out, err := agentShell(t, dir, probe); err == nil || !strings.Contains(strings.ToLower(out), "permission denied") {
			t.Errorf("agent: %s = %v %q, want Permission denied", probe, err, out)
		}
	}
}

func modeOrErr(fi fs.FileInfo, err error) any {
	if err != nil {
		return err
	}
	return fi.Mode()
}
