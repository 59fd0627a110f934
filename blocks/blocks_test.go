package blocks_test

import (
	"errors"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

func TestParse_RoundTripKeepsEverything(t *testing.T) {
	for name, in := range map[string]string{
		"letta block":  "---\ndescription: who I am\nread_only: true\nlimit: 5000\n---\nbody\n",
		"unknown keys": "---\nfoo: bar\nlabel: x\n  indented: kept\n---\nbody\nmore\n",
		"crlf fences":  "---\r\ndescription: d\r\n---\r\nbody\r\n",
		"empty body":   "---\ndescription: d\n---\n",
		"no front":     "just text\n",
		"no closing":   "---\ndescription: d\nbody without a fence\n",
		"empty":        "",
	} {
		t.Run(name, func(t *testing.T) {
			if got := string(blocks.Parse([]byte(in)).Format()); got != in {
				t.Fatalf("Format(Parse(x)) = %q, want %q", got, in)
			}
		})
	}
}

func TestParse_Fields(t *testing.T) {
	fm := blocks.Parse([]byte("---\ndescription: \"quoted\"\nread_only: TRUE\n  read_only: false\n---\nthe body\n"))
	if !fm.Present || string(fm.Body) != "the body\n" {
		t.Fatalf("parse = %+v", fm)
	}
	if v, ok := fm.Get("description"); !ok || v != "quoted" {
		t.Fatalf("description = %q %v", v, ok)
	}
	if v, _ := fm.Get("read_only"); v != "TRUE" {
		t.Fatalf("an indented line must not count as a key: read_only = %q", v)
	}
	if _, ok := fm.Get("limit"); ok {
		t.Fatal("absent key found")
	}
	if fm := blocks.Parse([]byte("---\nno closing fence\n")); fm.Present {
		t.Fatal("unclosed front matter taken as front matter")
	}
}

func TestFrontMatter_Set(t *testing.T) {
	fm := blocks.Parse([]byte("---\ndescription: old\nx: y\n---\nbody\n"))
	fm.Set("description", "new")
	fm.Set("limit", "10")
	if got := string(fm.Format()); got != "---\ndescription: new\nx: y\nlimit: 10\n---\nbody\n" {
		t.Fatalf("after Set = %q", got)
	}
	plain := blocks.Parse([]byte("body\n"))
	plain.Set("read_only", "true")
	if got := string(plain.Format()); got != "---\nread_only: true\n---\nbody\n" {
		t.Fatalf("Set on a plain file = %q", got)
	}
}

func TestReadOnly(t *testing.T) {
	ro := []byte("---\nread_only: true\n---\nx\n")
	cases := []struct {
		rel     string
		content []byte
		want    bool
	}{
		{blocks.PersonaPath, []byte("anything"), true},
		{"/" + blocks.HumanPath, nil, true},
		{"system/../system/persona.md", nil, true},
		{"notes/locked.md", ro, true},
		{"notes/locked.txt", ro, false}, // front matter counts only in .md
		{"notes/open.md", []byte("---\nread_only: false\n---\nx\n"), false},
		{"notes/plain.md", []byte("read_only: true\n"), false}, // not front matter
	}
	for _, c := range cases {
		if got := blocks.IsReadOnly(c.rel, c.content); got != c.want {
			t.Errorf("IsReadOnly(%q) = %v, want %v", c.rel, got, c.want)
		}
	}
	if !blocks.MayBeReadOnly("a/b.md") || !blocks.MayBeReadOnly(blocks.PersonaPath) || blocks.MayBeReadOnly("a/b.txt") {
		t.Error("MayBeReadOnly")
	}
}

func TestCheckAgentWrite(t *testing.T) {
	ro := []byte("---\nread_only: true\n---\nlocked\n")
	open := []byte("---\ndescription: d\n---\nopen\n")
	cases := []struct {
		name     string
		rel      string
		old, new []byte
		want     error
	}{
		{"ChangesPersona", blocks.PersonaPath, []byte(blocks.DefaultPersona), []byte("evil"), blocks.ErrReadOnly},
		{"DeletesPersona", blocks.PersonaPath, []byte(blocks.DefaultPersona), nil, blocks.ErrReadOnly},
		{"CreatesPersona", blocks.PersonaPath, nil, []byte("new"), blocks.ErrReadOnly},
		{"PersonaUnchanged", blocks.PersonaPath, []byte(blocks.DefaultPersona), []byte(blocks.DefaultPersona), nil},
		{"ChangesReadOnlyFile", "n/x.md", ro, []byte("---\nread_only: true\n---\nchanged\n"), blocks.ErrReadOnly},
		{"DeletesReadOnlyFile", "n/x.md", ro, nil, blocks.ErrReadOnly},
		{"AddsReadOnly", "n/x.md", open, []byte("---\ndescription: d\nread_only: true\n---\nopen\n"), blocks.ErrReadOnlyKey},
		{"CreatesReadOnly", "n/new.md", nil, ro, blocks.ErrReadOnlyKey},
		{"RemovesReadOnlyFalse", "n/x.md", []byte("---\nread_only: false\n---\nx\n"), []byte("x\n"), blocks.ErrReadOnlyKey},
		{"EditsOpenFile", "n/x.md", open, []byte("---\ndescription: d\n---\nedited\n"), nil},
		{"DeletesOpenFile", "n/x.md", open, nil, nil},
		{"CreatesPlainFile", "n/new.md", nil, []byte("hello\n"), nil},
		{"NotMarkdown", "n/x.txt", ro, []byte("anything"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := blocks.CheckAgentWrite(c.rel, c.old, c.new)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("CheckAgentWrite = %v, want %v", err, c.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	d := blocks.Defaults()
	if len(d) != 2 {
		t.Fatalf("defaults = %v", d)
	}
	for p, content := range d {
		if !blocks.IsReadOnly(p, []byte(content)) || !blocks.ReadOnlyFlag([]byte(content)) {
			t.Errorf("%s is not read-only by path and by front matter", p)
		}
		if v, ok := blocks.Parse([]byte(content)).Get("description"); !ok || v == "" {
			t.Errorf("%s has no description", p)
		}
	}
}
