package deploytest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/fsperm"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// unitKeys reads a systemd unit's Key=Value lines (a key given twice
// keeps both values, in order).
func unitKeys(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q: not Key=Value", line)
		}
		keys[k] = append(keys[k], v)
	}
	return keys
}

var exposureRE = regexp.MustCompile(`Overall exposure level for memfsd\.service: ([0-9.]+)`)

// The systemd unit (issue 40): its state folder is StateDirectory= with
// the mode --share-group gives <home>, MEMFSD_HOME names it, ExecStart
// runs memfsd run with flags it has, the token from a file, the sandboxing
// leaves what --share-group needs (set-group-ID folders: no
// RestrictSUIDSGID=); systemd-analyze verify passes and security's
// exposure is at most 2.0 (where systemd-analyze is installed).
func TestSystemdUnit(t *testing.T) {
	root := repoRoot(t)
	unit := filepath.Join(root, "examples", "systemd", "memfsd.service")
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	keys := unitKeys(t, data)
	one := func(k string) string {
		if v := keys[k]; len(v) == 1 {
			return v[0]
		}
		t.Errorf("%s: %q, want one value", k, keys[k])
		return ""
	}
	if one("StateDirectory") != "memfsd" || one("User") != "memfsd" || one("Group") != "memfsd" {
		t.Errorf("StateDirectory %q User %q Group %q, want memfsd", keys["StateDirectory"], keys["User"], keys["Group"])
	}
	fsperm.ShareGroup(true)
	want := strconv.FormatUint(uint64(fsperm.Path().Perm()), 8)
	fsperm.ShareGroup(false)
	if one("StateDirectoryMode") != "0"+want {
		t.Errorf("StateDirectoryMode %q, want 0%s (--share-group's <home>)", keys["StateDirectoryMode"], want)
	}
	env := strings.Join(keys["Environment"], "\n")
	if !strings.Contains(env, "MEMFSD_HOME=%S/memfsd") {
		t.Errorf("Environment %q: want MEMFSD_HOME=%%S/memfsd (the StateDirectory)", keys["Environment"])
	}
	exec0 := strings.Fields(one("ExecStart"))
	if len(exec0) < 2 || exec0[0] != "/usr/local/bin/memfsd" || exec0[1] != "run" {
		t.Fatalf("ExecStart %q: want /usr/local/bin/memfsd run ...", exec0)
	}
	checkArgs(t, "ExecStart", exec0[2:], helpFlags(t, "run"))
	if !strings.Contains(one("ExecStart"), "--token-file ") || !strings.Contains(one("ExecStart"), "--share-group") {
		t.Errorf("ExecStart %q: want --token-file and --share-group", one("ExecStart"))
	}
	if v := keys["RestrictSUIDSGID"]; len(v) > 0 && v[len(v)-1] == "yes" {
		t.Errorf("RestrictSUIDSGID=yes: --share-group's memory folder is set-group-ID (chmod g+s is refused under it)")
	}

	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("SKIP the systemd-analyze checks: systemd-analyze is not installed (apt-get install systemd)")
	}
	// verify wants ExecStart's binary to exist: the unit as written, with
	// the binary built here at its place.
	dir := t.TempDir()
	local := filepath.Join(dir, "memfsd.service")
	if err := os.WriteFile(local, bytes.ReplaceAll(data, []byte("/usr/local/bin/memfsd"), []byte(memfsdBin(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("systemd-analyze", "verify", local)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	cmd = exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", local)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	m := exposureRE.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	level, _ := strconv.ParseFloat(string(m[1]), 64)
	var misses []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "✗") {
			misses = append(misses, strings.Fields(l)[1])
		}
	}
	t.Logf("systemd-analyze security: exposure %.1f; not set: %s", level, strings.Join(misses, ", "))
	if level > 2.0 {
		t.Errorf("systemd-analyze security: exposure %.1f, want at most 2.0\n%s", level, out)
	}
}

// The operator's commands beside the unit find the home through
// MEMFSD_HOME alone and the agent's remote in its origin-url record: no
// --base-url repeated, and no embedded remote made under the home.
func TestSystemdUnit_OperatorCommandsNeedOnlyTheHome(t *testing.T) {
	srv := gitserver.New(t, token)
	home := t.TempDir()
	bin := memfsdBin(t)
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("memfsd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run([]string{"MEMFSD_HOME=" + home, "MEMFSD_BASE_URL=" + srv.URL, "MEMFSD_TOKEN=" + token}, "sync", "--agent", "agent-1")
	out := run([]string{"MEMFSD_HOME=" + home, "MEMFSD_BASE_URL=", "LETTA_MEMFS_BASE_URL="}, "status", "--agent", "agent-1")
	if !strings.Contains(out, "agent-1") {
		t.Errorf("status with MEMFSD_HOME alone:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "remote")); err == nil {
		t.Errorf("status with MEMFSD_HOME alone made an embedded remote under %s/remote", home)
	}
}
