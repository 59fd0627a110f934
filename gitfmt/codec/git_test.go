package codec_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/internal/testgit"
)

// gitIn runs git in dir with stdin and returns its output untrimmed.
func gitIn(t *testing.T, dir string, stdin []byte, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testgit.Env(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v %s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// Blobs, trees and commits encoded here are byte for byte what git writes
// for the same content, and Hash is the id git gives them: a tree whose
// names sort differently as files and as folders ("a.md" < "a/" < "a0"),
// an executable, a symlink and a sub-tree; a commit with two parents, a
// zone west of UTC and names git would strip.
func TestEncode_SameBytesAsGit(t *testing.T) {
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q", "--bare")
	hashObject := func(typ string, data []byte) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(string(gitIn(t, dir, data, nil, "hash-object", "-w", "-t", typ, "--stdin"))))
	}
	blob := []byte("a memory\n")
	if got, want := codec.Hash(plumbing.BlobObject, blob), hashObject("blob", blob); got != want {
		t.Fatalf("blob id %s, git says %s", got, want)
	}
	bh := codec.Hash(plumbing.BlobObject, blob)
	sub, _ := codec.EncodeTree(map[string]object.TreeEntry{"x.md": {Name: "x.md", Mode: filemode.Regular, Hash: bh}})
	subID := hashObject("tree", sub)
	entries := map[string]object.TreeEntry{
		"a.md":  {Name: "a.md", Mode: filemode.Regular, Hash: bh},
		"a":     {Name: "a", Mode: filemode.Dir, Hash: subID},
		"a0":    {Name: "a0", Mode: filemode.Executable, Hash: bh},
		"link":  {Name: "link", Mode: filemode.Symlink, Hash: bh},
		"Z.txt": {Name: "Z.txt", Mode: filemode.Regular, Hash: bh},
	}
	tree, list := codec.EncodeTree(entries)
	var mktree bytes.Buffer
	for _, e := range list {
		typ := "blob"
		if e.Mode == filemode.Dir {
			typ = "tree"
		}
		fmt.Fprintf(&mktree, "%06o %s %s\t%s\n", uint32(e.Mode), typ, e.Hash, e.Name)
	}
	treeID := plumbing.NewHash(strings.TrimSpace(string(gitIn(t, dir, mktree.Bytes(), nil, "mktree"))))
	if got := codec.Hash(plumbing.TreeObject, tree); got != treeID {
		t.Fatalf("tree id %s, git mktree says %s", got, treeID)
	}
	if gitTree := gitIn(t, dir, nil, nil, "cat-file", "tree", treeID.String()); !bytes.Equal(tree, gitTree) {
		t.Fatalf("tree bytes differ from git's:\n%q\n%q", tree, gitTree)
	}

	p1 := hashObject("commit", []byte("tree "+treeID.String()+"\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000\n\none\n"))
	p2 := hashObject("commit", []byte("tree "+subID.String()+"\nauthor a <a@x> 2 +0000\ncommitter a <a@x> 2 +0000\n\ntwo\n"))
	when := time.Unix(1767225600, 0).In(time.FixedZone("", -(3*3600 + 30*60)))
	author := object.Signature{Name: " A <Person> ", Email: "a@example.com\n", When: when}
	committer := object.Signature{Name: "memfsd", Email: "memfsd@memfsd.local", When: when.Add(time.Minute)}
	commit := codec.EncodeCommit(treeID, []plumbing.Hash{p1, p2}, author, committer, "memory: two lines\n\nbody\n\n\n")
	env := []string{
		"GIT_AUTHOR_NAME= A <Person> ", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_AUTHOR_DATE=1767225600 -0330",
		"GIT_COMMITTER_NAME=memfsd", "GIT_COMMITTER_EMAIL=memfsd@memfsd.local", "GIT_COMMITTER_DATE=1767225660 -0330",
	}
	// git commit (not commit-tree) strips the trailing blank lines as EncodeCommit does.
	commitID := plumbing.NewHash(strings.TrimSpace(string(gitIn(t, dir, []byte("memory: two lines\n\nbody\n"), env,
		"commit-tree", treeID.String(), "-p", p1.String(), "-p", p2.String()))))
	if gitCommit := gitIn(t, dir, nil, nil, "cat-file", "commit", commitID.String()); !bytes.Equal(commit, gitCommit) {
		t.Fatalf("commit bytes differ from git's:\n%s\n---\n%s", commit, gitCommit)
	}
	if got := codec.Hash(plumbing.CommitObject, commit); got != commitID {
		t.Fatalf("commit id %s, git says %s", got, commitID)
	}
	testgit.Run(t, dir, "fsck", "--strict", "--no-dangling")
}
