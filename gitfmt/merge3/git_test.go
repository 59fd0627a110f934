package merge3_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitfmt/merge3"
)

// gitMergeFile is `git merge-file -p ours base theirs`: the merged text and
// whether git merged it without a conflict.
func gitMergeFile(t *testing.T, base, ours, theirs []byte) ([]byte, bool) {
	t.Helper()
	dir := t.TempDir()
	paths := []string{}
	for i, b := range [][]byte{ours, base, theirs} {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command("git", append([]string{"merge-file", "-p"}, paths...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() > 0 && errb.Len() == 0) {
		t.Fatalf("git merge-file: %v %s", err, errb.String())
	}
	return out.Bytes(), err == nil
}

// Whatever Merge merges, git merge-file merges too, to the same bytes; and
// where git sees a conflict, Merge never claims a clean merge. (Merge may
// be stricter than git, never looser: a doubt keeps both versions whole.)
func TestMerge_AgreesWithGit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	edit := func(base []string) []byte {
		out := []string{}
		for _, l := range base {
			switch rng.IntN(8) {
			case 0: // delete
			case 1:
				out = append(out, l, fmt.Sprintf("new %d\n", rng.IntN(1000)))
			case 2:
				out = append(out, strings.ToUpper(l))
			default:
				out = append(out, l)
			}
		}
		return []byte(strings.Join(out, ""))
	}
	merged := 0
	for n := 0; n < 150; n++ {
		base := []string{}
		for i := 0; i < 4+rng.IntN(16); i++ {
			base = append(base, fmt.Sprintf("line %d\n", i))
		}
		b := []byte(strings.Join(base, ""))
		ours, theirs := edit(base), edit(base)
		got, ok := merge3.Merge(b, ours, theirs)
		want, gitOK := gitMergeFile(t, b, ours, theirs)
		if ok && (!gitOK || !bytes.Equal(got, want)) {
			t.Fatalf("base %q ours %q theirs %q:\nMerge: %q\ngit (clean %v): %q", b, ours, theirs, got, gitOK, want)
		}
		if ok {
			merged++
		}
	}
	if merged < 30 {
		t.Fatalf("only %d of 150 edits merged cleanly: the comparison says little", merged)
	}
}
