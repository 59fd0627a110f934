package blocks_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		present bool
		lines   []string
		body    string
	}{
		{"NoFrontMatter", "just text\n", false, nil, "just text\n"},
		{"Empty", "", false, nil, ""},
		{"Typical", "---\ndescription: d\nlimit: 10\n---\nbody\n", true, []string{"description: d", "limit: 10"}, "body\n"},
		{"EmptyFrontMatter", "---\n---\nbody", true, nil, "body"},
		{"NoBody", "---\nread_only: true\n---\n", true, []string{"read_only: true"}, ""},
		{"ClosingFenceAtEOF", "---\nread_only: true\n---", true, []string{"read_only: true"}, ""},
		{"CRLF", "---\r\nread_only: true\r\n---\r\nbody\r\n", true, []string{"read_only: true\r"}, "body\r\n"},
		// Malformed: not front matter at all, the whole content is body.
		{"Unclosed", "---\nread_only: true\nbody\n", false, nil, "---\nread_only: true\nbody\n"},
		{"FenceOnlyNoNewline", "---", false, nil, "---"},
		{"NotFirstLine", "\n---\nread_only: true\n---\n", false, nil, "\n---\nread_only: true\n---\n"},
		{"FenceWithText", "--- x\nread_only: true\n---\n", false, nil, "--- x\nread_only: true\n---\n"},
		{"FourDashes", "----\nread_only: true\n---\n", false, nil, "----\nread_only: true\n---\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fm := blocks.Parse([]byte(tc.in))
			if fm.Present != tc.present || string(fm.Body) != tc.body || strings.Join(fm.Lines, "|") != strings.Join(tc.lines, "|") {
				t.Fatalf("Parse(%q) = present %v lines %q body %q\nwant present %v lines %q body %q",
					tc.in, fm.Present, fm.Lines, fm.Body, tc.present, tc.lines, tc.body)
			}
			if got := string(fm.Format()); got != tc.in {
				t.Fatalf("Format(Parse(%q)) = %q", tc.in, got)
			}
		})
	}
}

func TestFrontMatter_Get(t *testing.T) {
	const doc = "---\n" +
		"description: \"A quoted: value\"\n" +
		"limit: 5000\n" +
		"owner: 'ops'\n" +
		"nested:\n" +
		"  read_only: true\n" +
		"spaced  :  x  \n" +
		"commented: yes # a comment\n" +
		"hash: a#b\n" +
		"hash2: a#b # c\n" +
		"onlycomment: # nothing\n" +
		"quotedhash: \"a # b\"\n" +
		"---\nbody\n"
	fm := blocks.Parse([]byte(doc))
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"description", "A quoted: value", true},
		{"limit", "5000", true},
		{"owner", "ops", true},
		{"nested", "", true},
		{"spaced", "x", true},
		{"commented", "yes", true},
		{"hash", "a#b", true},
		{"hash2", "a#b", true},
		{"onlycomment", "", true},
		{"quotedhash", "a # b", true},
		{"read_only", "", false}, // only nested, which is not the top-level key
		{"missing", "", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			got, ok := fm.Get(tc.key)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Get(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFrontMatter_Set(t *testing.T) {
	for _, tc := range []struct {
		name, in, key, value, want string
	}{
		{"Replaces", "---\ndescription: a\nlimit: 1\n---\nbody\n", "limit", "2", "---\ndescription: a\nlimit: 2\n---\nbody\n"},
		{"AppendsKeepingOrder", "---\nz: 1\na: 2\n---\nbody\n", "m", "3", "---\nz: 1\na: 2\nm: 3\n---\nbody\n"},
		{"AddsFrontMatter", "body\n", "description", "d", "---\ndescription: d\n---\nbody\n"},
		{"KeepsUnknownKeys", "---\nowner: ops\ncolour: blue\n---\nb", "description", "d", "---\nowner: ops\ncolour: blue\ndescription: d\n---\nb"},
		{"LeavesNestedKey", "---\nnested:\n  limit: 1\n---\n", "limit", "2", "---\nnested:\n  limit: 1\nlimit: 2\n---\n"},
		{"DropsDuplicates", "---\nlimit: 1\nx: y\nlimit: 2\n---\n", "limit", "3", "---\nlimit: 3\nx: y\n---\n"},
		{"CRLFStaysCRLF", "---\r\nlimit: 1\r\n---\r\nbody\r\n", "description", "d", "---\r\nlimit: 1\r\ndescription: d\r\n---\r\nbody\r\n"},
		{"CRLFReplace", "---\r\nlimit: 1\r\n---\r\n", "limit", "2", "---\r\nlimit: 2\r\n---\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fm := blocks.Parse([]byte(tc.in))
			fm.Set(tc.key, tc.value)
			if got := string(fm.Format()); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			if v, ok := blocks.Parse(fm.Format()).Get(tc.key); !ok || v != tc.value {
				t.Fatalf("Get after Set = %q, %v", v, ok)
			}
		})
	}
}

func TestReadOnlyFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"True", "---\nread_only: true\n---\n", true},
		{"TrueCaseInsensitive", "---\nread_only: True\n---\n", true},
		{"Quoted", "---\nread_only: \"true\"\n---\n", true},
		{"CRLF", "---\r\nread_only: true\r\n---\r\n", true},
		{"Commented", "---\nread_only: true # set by ops\n---\n", true},
		{"False", "---\nread_only: false\n---\n", false},
		{"Absent", "---\ndescription: d\n---\n", false},
		{"NoFrontMatter", "read_only: true\n", false},
		{"InBody", "---\ndescription: d\n---\nread_only: true\n", false},
		{"Unclosed", "---\nread_only: true\n", false},
		{"Nested", "---\nmeta:\n  read_only: true\n---\n", false},
		{"OtherValue", "---\nread_only: maybe\n---\n", false},
		// A duplicate key: YAML readers disagree (last wins, or an error);
		// any true line makes the block read-only.
		{"DuplicateLastTrue", "---\nread_only: false\nread_only: true\n---\n", true},
		{"DuplicateFirstTrue", "---\nread_only: true\nread_only: false\n---\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blocks.ReadOnlyFlag([]byte(tc.in)); got != tc.want {
				t.Fatalf("ReadOnlyFlag(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	d := blocks.Defaults()
	if len(d) != 2 || d[blocks.PersonaPath] != blocks.DefaultPersona || d[blocks.HumanPath] != blocks.DefaultHuman {
		t.Fatalf("Defaults() = %v", d)
	}
	for p, c := range d {
		t.Run(p, func(t *testing.T) {
			fm := blocks.Parse([]byte(c))
			if !fm.Present {
				t.Fatal("no front matter")
			}
			if v, ok := fm.Get("description"); !ok || v == "" {
				t.Fatal("no description")
			}
			if v, ok := fm.Get("limit"); !ok || v != "5000" {
				t.Fatalf("limit = %q", v)
			}
			if !blocks.ReadOnlyFlag([]byte(c)) || !blocks.IsReadOnly(p, []byte(c)) {
				t.Fatal("not read-only")
			}
			if len(c) > 5000 || !strings.HasSuffix(c, "\n") {
				t.Fatalf("%d bytes, ends %q", len(c), c[len(c)-1:])
			}
			if string(fm.Format()) != c {
				t.Fatal("does not round-trip")
			}
		})
	}
	// A fresh map each call: a caller's change does not leak.
	d[blocks.PersonaPath] = "changed"
	if blocks.Defaults()[blocks.PersonaPath] != blocks.DefaultPersona {
		t.Fatal("Defaults shares its map")
	}
}

func TestCheckFrontMatter(t *testing.T) {
	good := []byte("---\ndescription: notes\nlimit: 100\n---\nbody\n")
	for _, c := range []struct {
		name     string
		old, new string
		refused  bool
	}{
		{"body edit", string(good), "---\ndescription: notes\nlimit: 100\n---\nbody and more\n", false},
		{"insert at line 1 (inside the front matter)", string(good), "---\n" + strings.Repeat("x", 150) + "\ndescription: notes\nlimit: 100\n---\nbody\n", true},
		{"closing fence removed", string(good), "---\ndescription: notes\nlimit: 100\nbody\n", true},
		{"front matter removed", string(good), "body\n", true},
		{"key changed", string(good), "---\ndescription: other\nlimit: 100\n---\nbody\n", false},
		{"list and comment", string(good), "---\ndescription: notes\n# a comment\ntags:\n  - a\n- b\n---\nbody\n", false},
		{"none before", "body\n", "still none\n", false},
		{"broken before", "---\nnot a key\n---\nbody\n", "---\nstill not\n---\n", false},
	} {
		var old []byte
		if c.old != "" {
			old = []byte(c.old)
		}
		err := blocks.CheckFrontMatter(old, []byte(c.new))
		if (err != nil) != c.refused {
			t.Errorf("%s: err = %v, want refused %v", c.name, err, c.refused)
		}
	}
	if blocks.CheckFrontMatter(good, nil) != nil {
		t.Error("a deletion refused")
	}
}

func TestKeepFrontMatter(t *testing.T) {
	const head = "---\ndescription: who I am\nread_only: true\nlimit: 500\n---\nold body\n"
	for _, tc := range []struct {
		name, head, content, want string
		kept                      bool
	}{
		{"PlainTextGetsHeadsFrontMatter", head, "new body\n", "---\ndescription: who I am\nread_only: true\nlimit: 500\n---\nnew body\n", true},
		{"OwnFrontMatterWins", head, "---\ndescription: new\n---\nnew body\n", "---\ndescription: new\n---\nnew body\n", false},
		{"UnclosedFenceIsBody", head, "---\nnot front matter\n", "---\ndescription: who I am\nread_only: true\nlimit: 500\n---\n---\nnot front matter\n", true},
		{"HeadWithoutFrontMatter", "old body\n", "new body\n", "new body\n", false},
		{"NoHead", "", "new body\n", "new body\n", false},
		{"CRLFHead", "---\r\ndescription: d\r\n---\r\nold\r\n", "new\r\n", "---\r\ndescription: d\r\n---\r\nnew\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, kept := blocks.KeepFrontMatter([]byte(tc.head), []byte(tc.content))
			if string(got) != tc.want || kept != tc.kept {
				t.Fatalf("KeepFrontMatter = %q, %v; want %q, %v", got, kept, tc.want, tc.kept)
			}
		})
	}
}
