package memtool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/memtool"
)

// TestSecretGuard_Corpus measures the guard on outside text: every file
// under MEMFSD_GUARD_CORPUS (rendered man pages, go doc -all output),
// printing the files held and by which rule. Skipped without it; see
// docs/agent.md for how the corpora are made and the figures.
func TestSecretGuard_Corpus(t *testing.T) {
	root := os.Getenv("MEMFSD_GUARD_CORPUS")
	if root == "" {
		t.Skip("MEMFSD_GUARD_CORPUS not set")
	}
	pats := memtool.DefaultSecretPatterns()
	for _, dir := range strings.Split(root, ",") {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		sort.Strings(files)
		held := 0
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if name, ok := memtool.SecretIn(pats, string(b)); ok {
				held++
				fmt.Printf("held %s: %s\n", filepath.Base(f), name)
			}
		}
		fmt.Printf("corpus %s: %d files, %d held\n", dir, len(files), held)
	}
}
