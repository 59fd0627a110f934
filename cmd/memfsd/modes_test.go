package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Read-only compares mode as well as bytes (SPEC §8): a read-only block
// turned into a symbolic link whose target text is its content, or made
// executable, has the same bytes but is a change all the same.

// remoteEntry is `git ls-tree main <path>` of the bare repository: "<mode>
// <type> <id>\t<path>".
func remoteEntry(t *testing.T, bare, path string) string {
	t.Helper()
	return git(t, bare, "ls-tree", "main", path)
}

// checkRemotePersona fails unless the remote's persona is a regular file
// (100644) holding want and the restore commit is in its log.
func checkRemotePersona(t *testing.T, p *proc, bare, id, want string) {
	t.Helper()
	if e := remoteEntry(t, bare, "system/persona.md"); !strings.HasPrefix(e, "100644 blob ") {
		t.Fatalf("remote persona entry = %q, want mode 100644", e)
	}
	if got := git(t, bare, "show", "main:system/persona.md"); got != want {
		t.Fatalf("remote persona = %q, want %q", got, want)
	}
	if log := git(t, bare, "log", "--format=%s", "main"); !strings.Contains(log, "memfsd: restore read-only system/persona.md") {
		t.Fatalf("no restore commit on the remote:\n%s", log)
	}
	if r := p.reminders(id); !r.has("read_only_rejected") {
		t.Fatalf("reminders = %+v", r)
	}
}

// A shell's `git commit` of persona.md as a link whose target text equals
// the content: the bytes match, the mode does not; the remote keeps its
// regular file.
func TestTrust_ShellCommitOfReadOnlyBlockAsLink(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "ln", "--debounce", "10s")
	dir := memDir(home, "ln")
	bare := srv.RepoDir("ln")
	persona := filepath.Join(dir, "system", "persona.md")
	content, err := os.ReadFile(persona)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(persona)
	if err := os.Symlink(string(content), persona); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "persona, same text, as a link")
	if e := git(t, dir, "ls-tree", "HEAD", "system/persona.md"); !strings.HasPrefix(e, "120000 ") {
		t.Fatalf("the shell commit did not record a link: %q", e)
	}
	tr := p.turn("ln")
	if tr.Outcome != "pushed" || tr.Status.Ahead != 0 {
		t.Fatalf("turn = %+v", tr)
	}
	checkRemotePersona(t, p, bare, "ln", strings.TrimSpace(string(content)))
	if fi, err := os.Lstat(persona); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("local persona is not a regular file again: %v %v", fi, err)
	}
}

// The same with `chmod +x`: mode 100755, same bytes.
func TestTrust_ShellCommitOfExecutableReadOnlyBlock(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "x", "--debounce", "10s")
	dir := memDir(home, "x")
	bare := srv.RepoDir("x")
	orig := git(t, bare, "show", "main:system/persona.md")
	persona := filepath.Join(dir, "system", "persona.md")
	if err := os.Chmod(persona, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "update-index", "--chmod=+x", "system/persona.md")
	git(t, dir, "commit", "-q", "-m", "persona, executable")
	if e := git(t, dir, "ls-tree", "HEAD", "system/persona.md"); !strings.HasPrefix(e, "100755 ") {
		t.Fatalf("the shell commit did not record mode 100755: %q", e)
	}
	tr := p.turn("x")
	if tr.Outcome != "pushed" || tr.Status.Ahead != 0 {
		t.Fatalf("turn = %+v", tr)
	}
	checkRemotePersona(t, p, bare, "x", orig)
}

// A direct write (no commit of the agent's own) that replaces persona.md by
// a link with the same text, or makes it executable, is undone by the
// commit pipeline: the regular file comes back and HEAD never records the
// new mode.
func TestTrust_DirectWriteOfReadOnlyBlockMode(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "dw")
	dir := memDir(home, "dw")
	bare := srv.RepoDir("dw")
	persona := filepath.Join(dir, "system", "persona.md")
	content, err := os.ReadFile(persona)
	if err != nil {
		t.Fatal(err)
	}
	headBefore := git(t, dir, "rev-parse", "HEAD")
	undone := func(what string) {
		t.Helper()
		waitFor(t, 10*time.Second, what+" undone", func() bool {
			fi, err := os.Lstat(persona)
			return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0
		})
		if got, _ := os.ReadFile(persona); string(got) != string(content) {
			t.Fatalf("after %s persona = %q", what, got)
		}
		if e := git(t, dir, "ls-tree", "HEAD", "system/persona.md"); !strings.HasPrefix(e, "100644 ") {
			t.Fatalf("after %s HEAD's persona = %q", what, e)
		}
	}

	tmp := persona + ".tmp-link"
	if err := os.Symlink(string(content), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, persona); err != nil {
		t.Fatal(err)
	}
	undone("a link")
	if err := os.Chmod(persona, 0o755); err != nil {
		t.Fatal(err)
	}
	undone("chmod +x")

	if head := git(t, dir, "rev-parse", "HEAD"); head != headBefore {
		t.Fatalf("a commit was made: %s", git(t, dir, "log", "--format=%s %H", headBefore+"..HEAD"))
	}
	p.turn("dw")
	if e := remoteEntry(t, bare, "system/persona.md"); !strings.HasPrefix(e, "100644 blob ") {
		t.Fatalf("remote persona entry = %q", e)
	}
	if r := p.reminders("dw"); !r.has("read_only_rejected") {
		t.Fatalf("reminders = %+v", r)
	}
}
