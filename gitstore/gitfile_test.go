package gitstore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitstore"
)

const someID = "0123456789abcdef0123456789abcdef01234567"

// within runs f and fails the test if it does not return in 2 s: the
// reader's promise is that no file in .git makes it wait (a FIFO opened
// for reading without O_NONBLOCK blocks until a writer comes).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		t.Fatalf("%s: still waiting after 2 s", what)
		return nil
	}
}

func writeGit(t *testing.T, gitDir, rel, content string) {
	t.Helper()
	p := filepath.Join(gitDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, gitDir, rel string) {
	t.Helper()
	p := filepath.Join(gitDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A ref that points at itself, or two that point at each other, is an
// error naming the ref (before: ReadRef recursed until the stack overflow
// killed the process); a chain up to git's depth still resolves.
func TestReadRef_SymbolicLoops(t *testing.T) {
	t.Parallel()
	t.Run("SelfLoop", func(t *testing.T) {
		g := t.TempDir()
		writeGit(t, g, "refs/heads/main", "ref: refs/heads/main\n")
		err := within(t, "ReadRef", func() error { _, err := gitstore.ReadRef(g, "refs/heads/main"); return err })
		if !errors.Is(err, gitstore.ErrSymrefLoop) || !strings.Contains(err.Error(), "refs/heads/main") {
			t.Fatalf("err = %v, want a symbolic ref loop naming refs/heads/main", err)
		}
	})
	t.Run("LoopOfTwo", func(t *testing.T) {
		g := t.TempDir()
		writeGit(t, g, "HEAD", "ref: refs/heads/a\n")
		writeGit(t, g, "refs/heads/a", "ref: refs/heads/b\n")
		writeGit(t, g, "refs/heads/b", "ref: refs/heads/a\n")
		err := within(t, "ReadRef", func() error { _, err := gitstore.ReadRef(g, "HEAD"); return err })
		if !errors.Is(err, gitstore.ErrSymrefLoop) {
			t.Fatalf("err = %v, want a symbolic ref loop", err)
		}
	})
	t.Run("ChainWithinDepth", func(t *testing.T) {
		g := t.TempDir()
		writeGit(t, g, "HEAD", "ref: refs/heads/a\n")
		writeGit(t, g, "refs/heads/a", "ref: refs/heads/b\n")
		writeGit(t, g, "refs/heads/b", someID+"\n")
		h, err := gitstore.ReadRef(g, "HEAD")
		if err != nil || h != plumbing.NewHash(someID) {
			t.Fatalf("ReadRef = %v, %v", h, err)
		}
	})
	t.Run("OutOfRefs", func(t *testing.T) {
		g := t.TempDir()
		writeGit(t, g, "refs/heads/main", "ref: ../../../etc/passwd\n")
		if _, err := gitstore.ReadRef(g, "refs/heads/main"); err == nil || !strings.Contains(err.Error(), "bad symbolic ref") {
			t.Fatalf("err = %v, want a bad symbolic ref", err)
		}
	})
}

// A FIFO at every file memfsd reads in .git is an error naming the file,
// at once (before: every read blocked until a writer opened the FIFO,
// which hung status and shutdown).
func TestReadGitFile_FIFOs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rel  string
		read func(g string) error
	}{
		{"HEAD", func(g string) error { _, err := gitstore.HeadBranch(g); return err }},
		{"refs/heads/main", func(g string) error { _, err := gitstore.ReadRef(g, "refs/heads/main"); return err }},
		{"refs/remotes/origin/main", func(g string) error { _, err := gitstore.ReadRef(g, "refs/remotes/origin/main"); return err }},
		{"packed-refs", func(g string) error { _, err := gitstore.ReadPackedRef(g, "refs/heads/main"); return err }},
		{"packed-refs", func(g string) error { _, err := gitstore.PackedRefNames(g, "refs/"); return err }},
		{"index", func(g string) error {
			f, _, err := gitstore.OpenGitFile(g, "index", gitstore.MaxIndexSize)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"config", func(g string) error { _, err := gitstore.ReadGitFile(g, "config", gitstore.MaxConfigSize); return err }},
		{"memfsd/replacing", func(g string) error {
			_, err := gitstore.ReadGitFile(g, "memfsd/replacing", gitstore.MaxRefSize)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.rel, "/", "_"), func(t *testing.T) {
			g := t.TempDir()
			mkfifo(t, g, c.rel)
			err := within(t, "read "+c.rel, func() error { return c.read(g) })
			if !errors.Is(err, gitstore.ErrNotRegular) || !strings.Contains(err.Error(), ".git/"+c.rel) || !strings.Contains(err.Error(), "FIFO") {
				t.Fatalf("err = %v, want not a regular file (a FIFO) naming .git/%s", err, c.rel)
			}
		})
	}
}

// A link is never followed (not even to a good file), a huge file is
// refused by its cap, a folder is not a file, and a missing file is
// fs.ErrNotExist (a missing loose ref falls through to packed-refs).
func TestReadGitFile_LinksSizesAndMissing(t *testing.T) {
	t.Parallel()
	g := t.TempDir()
	writeGit(t, g, "real", someID+"\n")
	if err := os.MkdirAll(filepath.Join(g, "refs", "heads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(g, "real"), filepath.Join(g, "refs", "heads", "main")); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ReadRef(g, "refs/heads/main"); !errors.Is(err, gitstore.ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("link: err = %v, want not a regular file (a link)", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(g, "HEAD")); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.HeadBranch(g); !errors.Is(err, gitstore.ErrNotRegular) {
		t.Fatalf("HEAD -> /dev/zero: err = %v, want not a regular file", err)
	}

	// A sparse 1 GiB file costs nothing to make and would cost 1 GiB to read.
	huge := filepath.Join(g, "packed-refs")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ReadPackedRef(g, "refs/heads/x"); !errors.Is(err, gitstore.ErrTooLarge) || !strings.Contains(err.Error(), ".git/packed-refs") {
		t.Fatalf("huge packed-refs: err = %v, want too large naming it", err)
	}
	writeGit(t, g, "refs/heads/big", strings.Repeat("x", gitstore.MaxRefSize+1))
	if _, err := gitstore.ReadRef(g, "refs/heads/big"); !errors.Is(err, gitstore.ErrTooLarge) {
		t.Fatalf("huge ref: err = %v, want too large", err)
	}

	if err := os.MkdirAll(filepath.Join(g, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ReadGitFile(g, "config", gitstore.MaxConfigSize); !errors.Is(err, gitstore.ErrNotRegular) {
		t.Fatalf("folder: err = %v, want not a regular file", err)
	}

	if _, err := gitstore.ReadGitFile(g, "nothing/here", gitstore.MaxRefSize); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := gitstore.ReadGitFile(g, "real/below", gitstore.MaxRefSize); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("through a file: err = %v, want fs.ErrNotExist", err)
	}
	os.Remove(huge)
	writeGit(t, g, "packed-refs", "# pack-refs with: peeled fully-peeled sorted\n"+someID+" refs/heads/packed\n")
	if h, err := gitstore.ReadRef(g, "refs/heads/packed"); err != nil || h != plumbing.NewHash(someID) {
		t.Fatalf("packed ref: %v, %v", h, err)
	}
}

// A folder on the way to a file of git's that the agent replaced by a
// link (refs/heads -> a folder outside the repository, another agent's
// refs) is refused, not followed: O_NOFOLLOW alone guards only the last
// component, and memfsd, which sees every agent's folder, would read what
// the agent's own shell cannot (and echo it in "bad content" errors).
// So is a .git that is itself a link.
func TestReadGitFile_LinkOnTheWayRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	gitDir := filepath.Join(root, "a", ".git")
	outside := filepath.Join(root, "b", "refs", "heads")
	writeGit(t, gitDir, "HEAD", "ref: refs/heads/main\n")
	writeGit(t, filepath.Join(root, "b"), "refs/heads/main", someID+"\n")
	if err := os.MkdirAll(filepath.Join(gitDir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(gitDir, "refs", "heads")); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ReadGitFile(gitDir, "refs/heads/main", gitstore.MaxRefSize); !errors.Is(err, gitstore.ErrNotRegular) {
		t.Fatalf("ReadGitFile through a linked folder: err %v, want ErrNotRegular", err)
	}
	if h, err := gitstore.ReadRef(gitDir, "HEAD"); err == nil {
		t.Fatalf("ReadRef through a linked folder: read %s from outside the repository", h)
	}

	linked := filepath.Join(root, "c", ".git")
	if err := os.MkdirAll(filepath.Dir(linked), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "b"), linked); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ReadGitFile(linked, "refs/heads/main", gitstore.MaxRefSize); !errors.Is(err, gitstore.ErrNotRegular) {
		t.Fatalf("ReadGitFile in a .git that is a link: err %v, want ErrNotRegular", err)
	}
}

// go-git's storage opens objects, packs and pack indexes through NewGitFS:
// a FIFO at a pack's .idx hung the agent's sync for good (found by
// TestWalls_FuzzOneAgentsGitDir: objectPackOpen blocked in open(2), and
// removing the FIFO later did not wake it). Opens and folder listings
// there never block and refuse what is not a regular file or folder.
func TestGitFS_FIFOsAndLinksNeverBlock(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	pack := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(pack, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(pack, "pack-x.idx"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(pack, "pack-z.idx")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pack, "pack-r.idx"), []byte("regular"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(gitDir, "objects", "info"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := gitstore.NewGitFS(gitDir)
	// A link is never followed: it is missing (issue 38), and left out
	// of the listing.
	if _, err := fsys.Open("objects/pack/pack-z.idx"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open a link: %v, want ErrNotExist", err)
	}
	for _, name := range []string{"objects/pack/pack-x.idx"} {
		err := within(t, "open "+name, func() error {
			f, err := fsys.Open(name)
			if err == nil {
				f.Close()
			}
			return err
		})
		if !errors.Is(err, gitstore.ErrNotRegular) {
			t.Errorf("open %s: %v, want ErrNotRegular", name, err)
		}
	}
	if err := within(t, "open regular", func() error {
		f, err := fsys.Open("objects/pack/pack-r.idx")
		if err == nil {
			f.Close()
		}
		return err
	}); err != nil {
		t.Errorf("open a regular file: %v", err)
	}
	if err := within(t, "list a FIFO", func() error {
		_, err := fsys.ReadDir("objects/info")
		return err
	}); err == nil {
		t.Errorf("listing a FIFO as a folder: no error")
	}
	if err := within(t, "list missing", func() error {
		_, err := fsys.ReadDir("objects/nothing")
		return err
	}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("listing a missing folder: %v, want ErrNotExist", err)
	}
	infos, err := fsys.ReadDir("objects/pack")
	if err != nil || len(infos) != 0 {
		// .idx files only: the filter keeps them (no .pack to hide).
		names := []string{}
		for _, fi := range infos {
			names = append(names, fi.Name())
		}
		if err != nil || strings.Join(names, ",") != "pack-r.idx,pack-x.idx" {
			t.Errorf("list objects/pack: %v %v", names, err)
		}
	}
}

// The spare files memfsd takes locks with lie in the agent's .git
// (memfsd/spare). When that folder was removed and put back from a copy
// (found by TestWalls_FuzzOneAgentsGitDir), every later lock failed with
// "open spare file: no such file" until a restart: the pool named files
// that were gone. Now a lost pool is dropped and a spare made on the spot;
// a spare with another name (a hard link to some other file) is refused
// rather than emptied.
func TestSpares_PoolLostUnderIt(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	sp := gitstore.NewSpares(gitDir)
	sp.Start()
	defer sp.Stop()
	target := filepath.Join(gitDir, "refs", "heads", "main")
	take := func(what string) {
		t.Helper()
		l, err := gitstore.AcquireLock(target, time.Second, sp)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := l.Write([]byte(someID+"\n"), false); err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i++ { // past the warm-up: the pool fills
		take("warm-up")
	}
	spareDir := filepath.Join(gitDir, "memfsd", "spare")
	deadline := time.Now().Add(5 * time.Second)
	for {
		ents, _ := os.ReadDir(spareDir)
		if len(ents) >= 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not fill: %d spares", len(ents))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A hard link to a file outside: must not be emptied through a spare.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("not memfsd's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(spareDir)
	for _, e := range ents {
		p := filepath.Join(spareDir, e.Name())
		os.Remove(p)
		if err := os.Link(outside, p); err != nil {
			t.Skipf("hard link: %v", err)
		}
	}
	take("with every spare a hard link to another file")
	if data, _ := os.ReadFile(outside); string(data) != "not memfsd's\n" {
		t.Errorf("a file hard-linked as a spare was changed: %q", data)
	}
	// The pool's folder removed (the refill may race the removal) and put
	// back empty.
	for i := 0; os.RemoveAll(spareDir) != nil; i++ {
		if i == 100 {
			t.Fatal("could not remove the spare folder")
		}
	}
	if err := os.MkdirAll(spareDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		take("after the pool's folder was put back")
	}
}
