package gitmem_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fixture"
)

// pruneNow is the clock of the prune tests; backup names are seconds before it.
var pruneNow = time.Unix(1_750_000_000, 0)

const day = 24 * time.Hour

// openForPrune opens a clone of the small fixture with a backup ref for
// each age (relative to pruneNow), made by the git CLI.
func openForPrune(tb testing.TB, ages ...time.Duration) (*gitmem.Repo, []string) {
	tb.Helper()
	dir := fixture.LoadWorkTree(tb, "small")
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, LockWait: 50 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	var names []string
	for _, age := range ages {
		names = append(names, backupName(age))
		git(tb, dir, "update-ref", backupName(age), "HEAD")
	}
	return r, names
}

func backupName(age time.Duration) string {
	return gitmem.BackupRefPrefix + strconv.FormatInt(pruneNow.Add(-age).Unix(), 10)
}

// cliBackups lists the backup refs as the git CLI sees them, sorted.
func cliBackups(tb testing.TB, dir string) []string {
	tb.Helper()
	out := git(tb, dir, "for-each-ref", "--format=%(refname)", gitmem.BackupRefPrefix)
	if out == "" {
		return nil
	}
	refs := strings.Split(out, "\n")
	slices.Sort(refs)
	return refs
}

// without returns all minus drop, sorted.
func without(all []string, drop ...string) []string {
	var out []string
	for _, n := range all {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func TestRepo_PruneBackups(t *testing.T) {
	t.Parallel()
	// 15 refs: 3 recent, 12 older than 30 days. Oldest first.
	var ages []time.Duration
	for i := 14; i >= 0; i-- {
		if i < 3 {
			ages = append(ages, time.Duration(i+1)*day)
		} else {
			ages = append(ages, time.Duration(28+i)*day)
		}
	}
	for _, tc := range []struct {
		name    string
		ages    []time.Duration
		maxAge  time.Duration
		keep    int
		removed []int // indexes into ages
	}{
		// The newest 10 stay (3 recent + 7 old); the 5 oldest go.
		{"KeepsNewestTen", ages, gitmem.DefaultBackupMaxAge, gitmem.DefaultBackupKeep, []int{0, 1, 2, 3, 4}},
		{"KeepZeroRemovesAllOld", ages, 30 * day, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{"KeepAllRemovesNothing", ages, 30 * day, 15, nil},
		{"KeepMoreThanThereAre", ages, 30 * day, 100, nil},
		// Only age decides past the newest keep: young ones stay whatever keep says.
		{"YoungOnesStayPastKeep", ages, 365 * day, 1, nil},
		{"MaxAgeZeroKeepOne", ages, 0, 1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		// Exactly maxAge old is not older than maxAge.
		{"ExactlyMaxAgeStays", []time.Duration{30 * day, 30*day + time.Second, day}, 30 * day, 0, []int{1}},
		// A name in the future (a clock that ran ahead) is young.
		{"FutureIsYoung", []time.Duration{-day, 40 * day}, 30 * day, 0, []int{1}},
		{"NoBackups", nil, 30 * day, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, names := openForPrune(t, tc.ages...)
			var want []string
			for _, i := range tc.removed {
				want = append(want, names[i])
			}
			got, err := r.PruneBackups(pruneNow, tc.maxAge, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("removed %v\nwant    %v", got, want)
			}
			if cli := cliBackups(t, r.Dir); !slices.Equal(cli, without(names, want...)) {
				t.Fatalf("git for-each-ref: %v\nwant %v", cli, without(names, want...))
			}
			listed, err := r.Backups()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(listed)
			if !slices.Equal(listed, without(names, want...)) {
				t.Fatalf("Backups() = %v", listed)
			}
			for _, n := range want {
				if _, err := os.Stat(filepath.Join(r.GitDir, filepath.FromSlash(n)+".lock")); err == nil {
					t.Fatalf("%s.lock left behind", n)
				}
			}
			git(t, r.Dir, "fsck", "--strict")
			// A second run finds nothing more to do.
			if again, err := r.PruneBackups(pruneNow, tc.maxAge, tc.keep); err != nil || len(again) != 0 {
				t.Fatalf("second run removed %v, %v", again, err)
			}
		})
	}
}

func TestRepo_PruneBackups_Edges(t *testing.T) {
	t.Parallel()
	t.Run("PackedLeftAloneButCounted", func(t *testing.T) {
		r, names := openForPrune(t, 50*day, 40*day)
		git(t, r.Dir, "pack-refs", "--all")
		// A loose one, newer than the packed ones, made after packing.
		young := backupName(35 * day)
		git(t, r.Dir, "update-ref", young, "HEAD")
		got, err := r.PruneBackups(pruneNow, 30*day, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The newest (young, loose) is kept; both packed are old and left.
		if len(got) != 0 {
			t.Fatalf("removed %v", got)
		}
		want := append(slices.Clone(names), young)
		slices.Sort(want)
		if cli := cliBackups(t, r.Dir); !slices.Equal(cli, want) {
			t.Fatalf("git for-each-ref: %v", cli)
		}
		// With keep 0 the loose one goes and the packed ones still stay.
		got, err = r.PruneBackups(pruneNow, 30*day, 0)
		if err != nil || !slices.Equal(got, []string{young}) {
			t.Fatalf("removed %v, %v", got, err)
		}
		git(t, r.Dir, "fsck", "--strict")
	})
	t.Run("LooseShadowingPackedLeftAlone", func(t *testing.T) {
		r, names := openForPrune(t, 50*day)
		git(t, r.Dir, "pack-refs", "--all")
		// Rewrite it loose, to an older commit: the loose file shadows the
		// packed line. Removing the file would bring the packed value back.
		git(t, r.Dir, "update-ref", "--no-deref", names[0], "HEAD~1")
		if _, err := os.Stat(filepath.Join(r.GitDir, filepath.FromSlash(names[0]))); err != nil {
			t.Skip("git rewrote the packed ref in place")
		}
		before := git(t, r.Dir, "rev-parse", names[0])
		got, err := r.PruneBackups(pruneNow, 30*day, 0)
		if err != nil || len(got) != 0 {
			t.Fatalf("removed %v, %v", got, err)
		}
		if after := git(t, r.Dir, "rev-parse", names[0]); after != before {
			t.Fatalf("ref moved from %s to %s", before, after)
		}
	})
	t.Run("OtherNamesUntouched", func(t *testing.T) {
		r, names := openForPrune(t, 50*day)
		other := gitmem.BackupRefPrefix + "by-hand"
		git(t, r.Dir, "update-ref", other, "HEAD")
		got, err := r.PruneBackups(pruneNow, 30*day, 0)
		if err != nil || !slices.Equal(got, names) {
			t.Fatalf("removed %v, %v", got, err)
		}
		if cli := cliBackups(t, r.Dir); !slices.Equal(cli, []string{other}) {
			t.Fatalf("git for-each-ref: %v", cli)
		}
	})
	t.Run("RemovesReflog", func(t *testing.T) {
		r, _ := openForPrune(t)
		name := backupName(50 * day)
		git(t, r.Dir, "update-ref", "--create-reflog", name, "HEAD")
		logPath := filepath.Join(r.GitDir, "logs", filepath.FromSlash(name))
		if _, err := os.Stat(logPath); err != nil {
			t.Fatalf("no reflog to start with: %v", err)
		}
		if got, err := r.PruneBackups(pruneNow, 30*day, 0); err != nil || len(got) != 1 {
			t.Fatalf("removed %v, %v", got, err)
		}
		if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("reflog left: %v", err)
		}
		git(t, r.Dir, "fsck", "--strict")
	})
	t.Run("HeldLockSkipsThatRef", func(t *testing.T) {
		r, names := openForPrune(t, 60*day, 50*day)
		lock := filepath.Join(r.GitDir, filepath.FromSlash(names[0])+".lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := r.PruneBackups(pruneNow, 30*day, 0)
		if !errors.Is(err, gitmem.ErrLocked) {
			t.Fatalf("err = %v, want ErrLocked", err)
		}
		if !slices.Equal(got, names[1:]) {
			t.Fatalf("removed %v, want the unlocked one", got)
		}
		if _, err := os.Stat(lock); err != nil {
			t.Fatalf("someone else's lock was removed: %v", err)
		}
		if cli := cliBackups(t, r.Dir); !slices.Equal(cli, names[:1]) {
			t.Fatalf("git for-each-ref: %v", cli)
		}
	})
	t.Run("RefusesNegative", func(t *testing.T) {
		r, names := openForPrune(t, 50*day)
		if _, err := r.PruneBackups(pruneNow, 30*day, -1); err == nil {
			t.Fatal("keep -1 accepted")
		}
		if _, err := r.PruneBackups(pruneNow, -time.Hour, 0); err == nil {
			t.Fatal("max age -1h accepted")
		}
		if cli := cliBackups(t, r.Dir); !slices.Equal(cli, names) {
			t.Fatalf("git for-each-ref: %v", cli)
		}
	})
}
