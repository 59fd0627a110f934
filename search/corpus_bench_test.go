package search_test

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// goDoc is one document of the benchmark corpus: a memory file built
// from a Go doc comment that ships with the toolchain.
type goDoc struct {
	path string // memory path: the package path as folders, .md
	desc string // the comment's first sentence
	body string // the comment's text after it
}

var (
	corpusOnce sync.Once
	corpusDocs []goDoc
)

// goCorpus reads $GOROOT/src: each package's doc comment is a file
// (net/http → net/http.md, first sentence as description); then each
// exported declaration's doc comment (net/http/Client.md), which gives
// about 9,400 files of real, distinct text, topped up to 10,000 with
// varied copies.
func goCorpus(tb testing.TB) []goDoc {
	corpusOnce.Do(func() {
		src := filepath.Join(runtime.GOROOT(), "src")
		var pkgs, decls []goDoc
		filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if n := d.Name(); n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(src, p)
			if rel == "." {
				return nil
			}
			fset := token.NewFileSet()
			entries, _ := os.ReadDir(p)
			pkgDoc := ""
			for _, e := range entries {
				n := e.Name()
				if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(fset, filepath.Join(p, n), nil, parser.ParseComments|parser.SkipObjectResolution)
				if err != nil {
					continue
				}
				if f.Doc != nil && len(f.Doc.Text()) > len(pkgDoc) {
					pkgDoc = f.Doc.Text()
				}
				for _, decl := range f.Decls {
					name, text := declDoc(decl)
					if name != "" && ast.IsExported(name[strings.IndexByte(name, '.')+1:]) && len(text) > 60 {
						decls = append(decls, makeDoc(filepath.ToSlash(rel)+"/"+name+".md", text))
					}
				}
			}
			if pkgDoc != "" {
				pkgs = append(pkgs, makeDoc(filepath.ToSlash(rel)+".md", pkgDoc))
			}
			return nil
		})
		// Packages first (every one in both sizes), then declarations in a
		// fixed shuffled order; first path wins.
		rand.New(rand.NewSource(1)).Shuffle(len(decls), func(i, j int) { decls[i], decls[j] = decls[j], decls[i] })
		seen := map[string]bool{}
		for _, d := range append(pkgs, decls...) {
			if !seen[d.path] {
				seen[d.path] = true
				corpusDocs = append(corpusDocs, d)
			}
		}
		// Top up to 10,000 with variations: a declaration's note kept again
		// under archive/ with its sentences in reverse order (a near
		// duplicate that competes with the original, as old notes do).
		for i := 0; len(corpusDocs) < 10000 && i < len(decls); i++ {
			d := decls[i]
			sentences := strings.SplitAfter(d.body, ". ")
			slices.Reverse(sentences)
			corpusDocs = append(corpusDocs, goDoc{path: "archive/" + d.path, desc: "Old note: " + d.desc, body: strings.Join(sentences, " ")})
		}
	})
	if len(corpusDocs) < 1000 {
		tb.Skipf("GOROOT/src gave %d documents; need 1,000", len(corpusDocs))
	}
	return corpusDocs
}

func declDoc(decl ast.Decl) (string, string) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Doc == nil {
			return "", ""
		}
		if d.Recv == nil || len(d.Recv.List) == 0 {
			return d.Name.Name, d.Doc.Text()
		}
		// A method: Type.Method, for an exported type.
		t := d.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if id, ok := t.(*ast.Ident); ok && ast.IsExported(id.Name) {
			return id.Name + "." + d.Name.Name, d.Doc.Text()
		}
	case *ast.GenDecl:
		if d.Doc != nil && len(d.Specs) == 1 {
			if ts, ok := d.Specs[0].(*ast.TypeSpec); ok {
				return ts.Name.Name, d.Doc.Text()
			}
		}
	}
	return "", ""
}

func makeDoc(p, text string) goDoc {
	desc := doc.Synopsis(text)
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), strings.TrimSpace(strings.SplitN(text, ".", 2)[0])+"."))
	return goDoc{path: p, desc: desc, body: body}
}

// content is the memory file: front matter with the description, body.
func (d goDoc) content() []byte {
	return []byte("---\ndescription: " + strings.ReplaceAll(d.desc, "\n", " ") + "\n---\n" + d.body + "\n")
}

// queryFor writes a query from a document's body (never its description
// or name): six consecutive words that are not stop words, from a place
// chosen by rng; false when the body is too short.
func queryFor(d goDoc, rng *rand.Rand) (string, bool) {
	var words []string
	for _, w := range strings.Fields(d.body) {
		w = strings.Trim(w, ".,;:()[]\"'`")
		if len(w) > 2 {
			words = append(words, w)
		}
	}
	const n = 6
	if len(words) < n+2 {
		return "", false
	}
	i := rng.Intn(len(words) - n)
	return strings.Join(words[i:i+n], " "), true
}

// nameBaseline ranks files as an agent choosing by names does: by how
// many of the query's words appear in the file's path, ties in path order.
func nameBaseline(paths []string, query string) []string {
	q := map[string]bool{}
	for _, t := range tokensOf(query) {
		q[t] = true
	}
	type scored struct {
		p string
		n int
	}
	var out []scored
	for _, p := range paths {
		n := 0
		for _, t := range tokensOf(p) {
			if q[t] {
				n++
			}
		}
		if n > 0 {
			out = append(out, scored{p, n})
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int { return b.n - a.n })
	res := make([]string, 0, 5)
	for i := 0; i < len(out) && i < 5; i++ {
		res = append(res, out[i].p)
	}
	return res
}

func tokensOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func describeCorpus(docs []goDoc) string {
	dirs := map[string]bool{}
	for _, d := range docs {
		dirs[filepath.Dir(d.path)] = true
	}
	return fmt.Sprintf("%d files in %d folders", len(docs), len(dirs))
}
