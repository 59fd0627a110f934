package gitmem_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

func TestRepo_PruneBackups(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "prune")
	writeFile(t, r.Dir, "a.md", "a\n")
	head, err := r.CommitWrite([]string{"a.md"}, "a")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	day := int64(24 * 3600)
	// 15 backups: 12 older than 30 days (40..51 days), 3 recent (1..3 days).
	var ages []int64
	for d := int64(40); d < 52; d++ {
		ages = append(ages, d)
	}
	ages = append(ages, 1, 2, 3)
	for _, d := range ages {
		name := fmt.Sprintf("refs/memfsd/backup/%d", now.Unix()-d*day)
		git(t, r.Dir, "update-ref", name, head.String())
	}
	git(t, r.Dir, "update-ref", "refs/memfsd/backup/not-a-time", head.String())
	removed, err := r.PruneBackups(now, gitmem.DefaultBackupMaxAge, gitmem.DefaultBackupKeep)
	if err != nil {
		t.Fatal(err)
	}
	// Newest 10: the 3 recent and the 7 youngest old ones (40..46 days).
	if len(removed) != 5 {
		t.Fatalf("removed %d refs, want 5: %v", len(removed), removed)
	}
	for _, d := range []int64{47, 48, 49, 50, 51} {
		if _, err := os.Stat(filepath.Join(r.GitDir, "refs", "memfsd", "backup", fmt.Sprint(now.Unix()-d*day))); !os.IsNotExist(err) {
			t.Errorf("backup %d days old kept", d)
		}
	}
	left := git(t, r.Dir, "for-each-ref", "--format=%(refname)", "refs/memfsd/backup/")
	if n := len(strings.Split(left, "\n")); n != 11 {
		t.Fatalf("git sees %d backup refs, want 10 + the foreign one:\n%s", n, left)
	}
	// Nothing old beyond the newest 10: nothing to do.
	if removed, err := r.PruneBackups(now, gitmem.DefaultBackupMaxAge, gitmem.DefaultBackupKeep); err != nil || len(removed) != 0 {
		t.Fatalf("second prune: %v %v", removed, err)
	}
	// Everything old goes when keep allows it; recent ones stay regardless.
	if removed, _ := r.PruneBackups(now, gitmem.DefaultBackupMaxAge, 0); len(removed) != 7 {
		t.Fatalf("keep 0 removed %d, want the 7 old ones", len(removed))
	}
	git(t, r.Dir, "fsck", "--strict")
}
