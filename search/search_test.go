package search_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/search"
)

func tree() map[string][]byte {
	return map[string][]byte{
		"system/persona.md":       []byte("---\ndescription: Who I am\n---\nI am a helpful assistant.\n"),
		"projects/alpha/notes.md": []byte("---\ndescription: Alpha launch notes\n---\nThe launch of alpha uses kubernetes v1.29.3.\nDeploy on Friday.\n"),
		"projects/alpha/todo.md":  []byte("# Todo\n\nBuy milk.\n"),
		"projects/beta/plan.md":   []byte("Beta plan: migrate the PostgreSQL database\nto version 16.\n\nSecond paragraph about kubernetes.\n"),
		"people/alice.md":         []byte("---\ndescription: Alice, the release manager\n---\nAlice prefers short emails.\n"),
		"img/logo.png":            append([]byte{0x89, 'P', 'N', 'G', 0}, make([]byte, 100)...),
	}
}

func reader(t map[string][]byte) func(string) ([]byte, bool) {
	return func(p string) ([]byte, bool) { d, ok := t[p]; return d, ok }
}

func paths(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Path)
	}
	return out
}

func TestIndex_L0(t *testing.T) {
	t.Parallel()
	ix := search.Build(tree())
	for p, want := range map[string]string{
		"projects/alpha/notes.md": "Alpha launch notes",
		"projects/alpha/todo.md":  "Todo",
		"projects/beta/plan.md":   "Beta plan: migrate the PostgreSQL database to version 16.",
		"img/logo.png":            "binary file, 105B",
	} {
		if got, ok := ix.L0(p); !ok || got != want {
			t.Errorf("L0(%s) = %q, %v; want %q", p, got, ok, want)
		}
	}
	if _, ok := ix.L0("nope.md"); ok {
		t.Error("L0 of a missing path answered")
	}
	long := search.Build(map[string][]byte{"a.md": []byte(strings.Repeat("word ", 500))})
	if l0, _ := long.L0("a.md"); len([]rune(l0)) > search.MaxL0Runes+1 || !strings.HasSuffix(l0, "…") {
		t.Errorf("long L0 not cut: %d runes", len([]rune(l0)))
	}
}

func TestIndex_L1(t *testing.T) {
	t.Parallel()
	ix := search.Build(tree())
	o, ok := ix.L1("projects")
	if !ok || o.Folders != 2 || o.Files != 0 {
		t.Fatalf("L1(projects) = %+v, %v", o, ok)
	}
	root, _ := ix.L1("")
	var names []string
	for _, e := range root.Entries {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "img/ people/ projects/ system/" {
		t.Errorf("root entries %q", got)
	}
	a, _ := ix.L1("/projects/alpha/")
	want := "/projects/alpha: 2 files, 0 folders\n- notes.md — Alpha launch notes\n- todo.md — Todo\n"
	if a.Text() != want {
		t.Errorf("L1 text\n%s\nwant\n%s", a.Text(), want)
	}
	if l0, _ := ix.L0("projects"); l0 != "0 files, 2 folders: alpha/, beta/" {
		t.Errorf("folder L0 %q", l0)
	}
}

func TestIndex_Search(t *testing.T) {
	t.Parallel()
	tr := tree()
	ix := search.Build(tr)
	hits, err := ix.Search("kubernetes", 10, reader(tr))
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(hits); len(got) != 2 || got[0] != "projects/alpha/notes.md" {
		t.Fatalf("kubernetes: %v", got)
	}
	h := hits[0]
	if len(h.Trail) != 2 || h.Trail[0].Folder != "projects" || h.Trail[1].Folder != "projects/alpha" {
		t.Errorf("trail %+v", h.Trail)
	}
	// A folder whose overview (children's names and L0s) matches scores.
	if hits, _ := ix.Search("launch", 5, nil); len(hits) == 0 || hits[0].Trail[1].Score <= 0 || hits[0].Trail[0].Score != 0 {
		t.Errorf("launch trail %+v", hits)
	}
	if len(h.Lines) != 1 || h.Lines[0].Line != 4 || !strings.Contains(h.Lines[0].Text, "kubernetes") {
		t.Errorf("lines %+v", h.Lines)
	}
	// Identifiers and version strings are words of their own.
	if hits, _ := ix.Search("v1.29.3", 5, nil); len(hits) != 1 || hits[0].Path != "projects/alpha/notes.md" {
		t.Errorf("version: %v", paths(hits))
	}
	if hits, _ := ix.Search("postgresql", 5, nil); len(hits) != 1 || hits[0].Path != "projects/beta/plan.md" {
		t.Errorf("case: %v", paths(hits))
	}
	// A word only in a description finds the file; names count too.
	if hits, _ := ix.Search("release manager", 5, nil); len(hits) == 0 || hits[0].Path != "people/alice.md" {
		t.Errorf("description: %v", paths(hits))
	}
	if hits, _ := ix.Search("alice", 5, nil); len(hits) == 0 || hits[0].Path != "people/alice.md" {
		t.Errorf("name: %v", paths(hits))
	}
	if hits, _ := ix.Search("zebra", 5, nil); len(hits) != 0 {
		t.Errorf("no match: %v", paths(hits))
	}
	if hits, _ := ix.Search("kubernetes", 1, nil); len(hits) != 1 {
		t.Errorf("limit: %v", paths(hits))
	}
}

func TestIndex_Update(t *testing.T) {
	t.Parallel()
	tr := tree()
	ix := search.Build(tr)
	check := func(q string, want ...string) {
		t.Helper()
		hits, err := ix.Search(q, 10, reader(tr))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(paths(hits), " "); got != strings.Join(want, " ") {
			t.Errorf("%s: %q, want %q", q, got, strings.Join(want, " "))
		}
	}
	// Write.
	tr["projects/alpha/todo.md"] = []byte("Buy zebra food.\n")
	ix.Update([]string{"projects/alpha/todo.md"}, reader(tr))
	check("zebra", "projects/alpha/todo.md")
	check("milk")
	// Rename into a new folder: the old folder and path are gone.
	tr["archive/2024/todo.md"] = tr["projects/alpha/todo.md"]
	delete(tr, "projects/alpha/todo.md")
	ix.Update([]string{"projects/alpha/todo.md", "archive/2024/todo.md"}, reader(tr))
	check("zebra", "archive/2024/todo.md")
	if o, _ := ix.L1("projects/alpha"); o.Files != 1 {
		t.Errorf("alpha after rename: %+v", o)
	}
	// Delete the last file of a folder: the folder goes too.
	delete(tr, "archive/2024/todo.md")
	ix.Update([]string{"archive/2024/todo.md"}, reader(tr))
	check("zebra")
	if _, ok := ix.L1("archive"); ok {
		t.Error("empty folder kept")
	}
	if ix.Len() != len(tr) {
		t.Errorf("Len %d, want %d", ix.Len(), len(tr))
	}
	// The incremental index answers as a fresh build does.
	fresh := search.Build(tr)
	for _, q := range []string{"kubernetes", "alpha launch", "plan", "alice email"} {
		a, _ := ix.Search(q, 10, nil)
		b, _ := fresh.Search(q, 10, nil)
		if strings.Join(paths(a), " ") != strings.Join(paths(b), " ") {
			t.Errorf("%s: incremental %v, fresh %v", q, paths(a), paths(b))
		}
		for i := range a {
			if a[i].Score != b[i].Score {
				t.Errorf("%s: %s scored %v, fresh %v", q, a[i].Path, a[i].Score, b[i].Score)
			}
		}
	}
}

func TestIndex_BadQueries(t *testing.T) {
	t.Parallel()
	ix := search.Build(tree())
	for q, want := range map[string]error{
		"":                         search.ErrEmptyQuery,
		"   \t":                    search.ErrEmptyQuery,
		strings.Repeat("a ", 1000): search.ErrQueryTooLong,
		"caf\xe9":                  search.ErrQueryUTF8,
		"*** ??? (((":              search.ErrNoWords,
		"the of and":               search.ErrNoWords,
	} {
		if _, err := ix.Search(q, 10, nil); !errors.Is(err, want) {
			t.Errorf("%.20q: %v, want %v", q, err, want)
		}
	}
	// Regex characters are plain text.
	if hits, err := ix.Search(`kube.*(rnetes|[a-z]+)\`, 10, nil); err != nil || len(hits) != 0 {
		t.Errorf("regex chars: %v %v", paths(hits), err)
	}
	if hits, err := ix.Search(`^kubernetes$`, 10, nil); err != nil || len(hits) != 2 {
		t.Errorf("anchors: %v %v", paths(hits), err)
	}
}

func TestIndex_NonUTF8Content(t *testing.T) {
	t.Parallel()
	tr := map[string][]byte{"latin1.txt": []byte("caf\xe9 cr\xe8me br\xfbl\xe9e\n"), "ok.md": []byte("café\n")}
	ix := search.Build(tr)
	if l0, _ := ix.L0("latin1.txt"); !strings.HasPrefix(l0, "binary file") {
		t.Errorf("latin1 L0 %q", l0)
	}
	hits, err := ix.Search("café", 10, reader(tr))
	if err != nil || len(hits) != 1 || hits[0].Path != "ok.md" {
		t.Errorf("café: %v %v", paths(hits), err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	got := strings.Join(search.Tokens("ReadFile of net/http v1.2.3 HTTPServer snake_case files"), " ")
	want := "readfile read file net http v1.2.3 v1 2 3 httpserver http server snake_case snake case file"
	if got != want {
		t.Errorf("Tokens:\n got %s\nwant %s", got, want)
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	p := search.NewPool(100)
	if ev := p.Use("a", 60); ev != nil {
		t.Fatal(ev)
	}
	p.Use("b", 30)
	p.Use("a", 60) // a is the most recent
	if ev := p.Use("c", 30); len(ev) != 1 || ev[0] != "b" {
		t.Fatalf("evicted %v, want b", ev)
	}
	if ev := p.Use("d", 500); len(ev) != 2 {
		t.Fatalf("evicted %v, want a and c", ev)
	}
	p.Forget("d")
	if p.Bytes() != 0 {
		t.Errorf("bytes %d", p.Bytes())
	}
}

// TestIndex_DictionaryStaysBounded: rewriting a file with new words again
// and again does not grow the index.
func TestIndex_DictionaryStaysBounded(t *testing.T) {
	t.Parallel()
	tr := map[string][]byte{"a.md": []byte("start\n")}
	ix := search.Build(tr)
	var first int
	for i := 0; i < 200; i++ {
		tr["a.md"] = []byte(fmt.Sprintf("word%d other%d thing%d\n", i, i, i))
		ix.Update([]string{"a.md"}, reader(tr))
		if i == 10 {
			first = ix.Bytes()
		}
	}
	if got := ix.Bytes(); got > first+64 {
		t.Errorf("index grew from %d to %d bytes over 190 rewrites", first, got)
	}
	if hits, _ := ix.Search("word199", 5, nil); len(hits) != 1 {
		t.Errorf("last words not found: %v", paths(hits))
	}
	if hits, _ := ix.Search("word5", 5, nil); len(hits) != 0 {
		t.Errorf("old words found: %v", paths(hits))
	}
}
