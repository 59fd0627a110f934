package blocks_test

import (
	"errors"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

func TestIsReadOnly(t *testing.T) {
	const ro = "---\nread_only: true\n---\nbody\n"
	const plain = "---\ndescription: d\n---\nbody\n"
	for _, tc := range []struct {
		name     string
		rel      string
		content  string
		path     bool // IsReadOnlyPath
		readOnly bool // IsReadOnly
		maybe    bool // MayBeReadOnly
	}{
		{"Persona", "system/persona.md", plain, true, true, true},
		{"Human", "system/human.md", "", true, true, true},
		{"LeadingSlash", "/system/persona.md", plain, true, true, true},
		{"Unclean", "system/./notes/../human.md", plain, true, true, true},
		{"OtherSystemBlock", "system/style.md", plain, false, false, true},
		{"FlaggedNote", "notes/policy.md", ro, false, true, true},
		{"PlainNote", "notes/today.md", plain, false, false, true},
		{"FlagOnlyCountsInMarkdown", "notes/policy.txt", ro, false, false, false},
		{"FlagInJSON", "data.json", ro, false, false, false},
		{"SimilarName", "system/persona.md.bak", plain, false, false, false},
		{"OtherFolder", "notes/system/persona.md", plain, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blocks.IsReadOnlyPath(tc.rel); got != tc.path {
				t.Errorf("IsReadOnlyPath(%q) = %v", tc.rel, got)
			}
			if got := blocks.IsReadOnly(tc.rel, []byte(tc.content)); got != tc.readOnly {
				t.Errorf("IsReadOnly(%q) = %v", tc.rel, got)
			}
			if got := blocks.MayBeReadOnly(tc.rel); got != tc.maybe {
				t.Errorf("MayBeReadOnly(%q) = %v", tc.rel, got)
			}
			// MayBeReadOnly may say yes too often, never too rarely.
			if tc.readOnly && !blocks.MayBeReadOnly(tc.rel) {
				t.Errorf("read-only %q but MayBeReadOnly says no", tc.rel)
			}
		})
	}
}

func TestCheckAgentWrite(t *testing.T) {
	const (
		plain   = "---\ndescription: d\n---\nbody\n"
		plain2  = "---\ndescription: d\n---\nnew body\n"
		roTrue  = "---\ndescription: d\nread_only: true\n---\nbody\n"
		roTrue2 = "---\ndescription: d\nread_only: true\n---\nnew body\n"
		roFalse = "---\ndescription: d\nread_only: false\n---\nbody\n"
	)
	var none *string // nil: the file does not exist / is deleted
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name     string
		rel      string
		old, new *string
		want     error
	}{
		// Ordinary notes.
		{"CreatesNote", "notes/a.md", none, s(plain), nil},
		{"EditsNote", "notes/a.md", s(plain), s(plain2), nil},
		{"DeletesNote", "notes/a.md", s(plain), none, nil},
		{"NoFrontMatterNote", "notes/a.md", s("x\n"), s("y\n"), nil},
		// The fixed read-only blocks.
		{"EditsPersona", blocks.PersonaPath, s(blocks.DefaultPersona), s(blocks.DefaultPersona + "more\n"), blocks.ErrReadOnly},
		{"DeletesHuman", blocks.HumanPath, s(blocks.DefaultHuman), none, blocks.ErrReadOnly},
		{"CreatesMissingPersona", blocks.PersonaPath, none, s(plain), blocks.ErrReadOnly},
		{"PersonaWithoutFlag", blocks.PersonaPath, s(plain), s(plain2), blocks.ErrReadOnly},
		{"PersonaUnclean", "./system//persona.md", s(plain), s(plain2), blocks.ErrReadOnly},
		{"RewritesPersonaUnchanged", blocks.PersonaPath, s(blocks.DefaultPersona), s(blocks.DefaultPersona), nil},
		// read_only: true in front matter.
		{"EditsFlagged", "notes/p.md", s(roTrue), s(roTrue2), blocks.ErrReadOnly},
		{"DeletesFlagged", "notes/p.md", s(roTrue), none, blocks.ErrReadOnly},
		{"RemovesReadOnly", "notes/p.md", s(roTrue), s(plain), blocks.ErrReadOnly},
		{"RewritesFlaggedUnchanged", "notes/p.md", s(roTrue), s(roTrue), nil},
		{"FlagCaseInsensitive", "notes/p.md", s("---\nread_only: TRUE\n---\n"), s("---\nread_only: TRUE\n---\nx\n"), blocks.ErrReadOnly},
		// The read_only key is the operator's.
		{"AddsReadOnly", "notes/a.md", s(plain), s(roTrue), blocks.ErrReadOnlyKey},
		{"CreatesReadOnly", "notes/a.md", none, s(roTrue), blocks.ErrReadOnlyKey},
		{"CreatesReadOnlyFalse", "notes/a.md", none, s(roFalse), blocks.ErrReadOnlyKey},
		{"ChangesFalseToTrue", "notes/a.md", s(roFalse), s(roTrue), blocks.ErrReadOnlyKey},
		{"RemovesReadOnlyFalse", "notes/a.md", s(roFalse), s(plain), blocks.ErrReadOnlyKey},
		{"KeepsReadOnlyFalse", "notes/a.md", s(roFalse), s(roFalse + "more\n"), nil},
		{"DeletesReadOnlyFalse", "notes/a.md", s(roFalse), none, nil},
		{"AddsDuplicateTrue", "notes/a.md", s(roFalse), s("---\nread_only: false\nread_only: true\n---\nbody\n"), blocks.ErrReadOnlyKey},
		{"AddsCommentedTrue", "notes/a.md", s(plain), s("---\nread_only: true # mine now\n---\nbody\n"), blocks.ErrReadOnlyKey},
		{"ReadOnlyInBodyIsText", "notes/a.md", s(plain), s(plain + "read_only: true\n"), nil},
		// Only .md files have front matter that counts.
		{"FlaggedTextFile", "notes/a.txt", s(roTrue), s(plain), nil},
		{"AddsFlagToJSON", "data.json", s("{}"), s(roTrue), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old, new []byte
			if tc.old != nil {
				old = []byte(*tc.old)
			}
			if tc.new != nil {
				new = []byte(*tc.new)
			}
			if err := blocks.CheckAgentWrite(tc.rel, old, new); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("CheckAgentWrite(%q) = %v, want %v", tc.rel, err, tc.want)
			}
		})
	}
}

func TestCheckAgentChange_Modes(t *testing.T) {
	const (
		regular = 0o100644
		exec    = 0o100755
		link    = 0o120000
		roTrue  = "---\nread_only: true\n---\nbody\n"
		plain   = "---\ndescription: d\n---\nbody\n"
	)
	for _, tc := range []struct {
		name             string
		rel, content     string
		oldMode, newMode uint32
		want             error
	}{
		{"PersonaBecomesLink", blocks.PersonaPath, blocks.DefaultPersona, regular, link, blocks.ErrReadOnly},
		{"PersonaBecomesExecutable", blocks.PersonaPath, blocks.DefaultPersona, regular, exec, blocks.ErrReadOnly},
		{"FlaggedBecomesLink", "notes/p.md", roTrue, regular, link, blocks.ErrReadOnly},
		{"PersonaSameMode", blocks.PersonaPath, blocks.DefaultPersona, regular, regular, nil},
		{"NoteBecomesLink", "notes/a.md", plain, regular, link, nil},
		{"TextBecomesExecutable", "run.sh", "echo\n", regular, exec, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := []byte(tc.content)
			if err := blocks.CheckAgentChange(tc.rel, c, tc.oldMode, c, tc.newMode); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("CheckAgentChange(%q, %o → %o) = %v, want %v", tc.rel, tc.oldMode, tc.newMode, err, tc.want)
			}
		})
	}
}
