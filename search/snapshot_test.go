package search_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/memfsd/memfsd/search"
)

// A loaded snapshot answers as the index it was taken of, and goes on
// being updated as one: the same hits after the same changes.
func TestSnapshot_RoundTrip(t *testing.T) {
	t.Parallel()
	tr := tree()
	for i := range 200 {
		tr[fmt.Sprintf("notes/d%d/n%d.md", i%7, i)] = fmt.Appendf(nil, "---\ndescription: note %d about kubernetes\n---\nword%d alpha beta\n", i, i%13)
	}
	built := search.Build(tr)
	loaded, err := search.LoadSnapshot(built.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"kubernetes", "word3 alpha", "release manager", "note 17", "milk"}
	same := func(what string) {
		t.Helper()
		for _, q := range queries {
			a, _ := built.Search(q, 10, reader(tr))
			b, _ := loaded.Search(q, 10, reader(tr))
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: %q: built %v, loaded %v", what, q, paths(a), paths(b))
			}
		}
		for _, d := range []string{"", "notes", "notes/d3", "projects/alpha"} {
			a, _ := built.L1(d)
			b, _ := loaded.L1(d)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: L1(%q) differs", what, d)
			}
		}
	}
	same("loaded")
	// The same changes to both: a file gone (its folder with it), one new,
	// one changed.
	delete(tr, "people/alice.md")
	tr["zoo/zebra.md"] = []byte("The zebra sleeps standing, kubernetes.\n")
	tr["notes/d1/n8.md"] = []byte("rewritten: milk and honey\n")
	changed := []string{"people/alice.md", "zoo/zebra.md", "notes/d1/n8.md"}
	built.Update(changed, reader(tr))
	loaded.Update(changed, reader(tr))
	same("updated")
}

// A snapshot someone cut, flipped or wrote is refused (ErrBadSnapshot),
// never a panic and never an index that panics later.
func TestSnapshot_CorruptIsRefused(t *testing.T) {
	t.Parallel()
	tr := tree()
	good := search.Build(tr).Snapshot()
	if _, err := search.LoadSnapshot(nil); !errors.Is(err, search.ErrBadSnapshot) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := search.LoadSnapshot(good[:len(good)/2]); !errors.Is(err, search.ErrBadSnapshot) {
		t.Fatalf("cut short: %v", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	loadedBad := 0
	for i := range 3000 {
		b := append([]byte(nil), good...)
		for range 1 + i%4 {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		ix, err := search.LoadSnapshot(b)
		if err != nil {
			if !errors.Is(err, search.ErrBadSnapshot) {
				t.Fatalf("flip %d: %v", i, err)
			}
			continue
		}
		loadedBad++
		// Loaded (a flip in a word or a score): it must still work.
		for _, q := range []string{"kubernetes", "alice", "milk"} {
			ix.Search(q, 10, reader(tr))
		}
		ix.L1("")
		ix.Update([]string{"projects/alpha/notes.md", "new/file.md"}, reader(map[string][]byte{"new/file.md": []byte("x")}))
	}
	t.Logf("of 3000 corrupted snapshots, %d loaded (each then searched and updated without a panic)", loadedBad)
}
