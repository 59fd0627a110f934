package blocks

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// FileFacts is what letta-code's checks read of one .md file: its mode,
// its characters (CountCharacters) and the front-matter rules it breaks
// as a memfs v2 file (ValidateLettaFrontMatter, no previous version).
type FileFacts struct {
	Regular     bool
	Chars       int
	FrontMatter []string
}

// Problem is one thing letta-code's pre-commit hook reports for a tree.
// Key names it apart from its size: a file over its limit (or the core
// memory over its budget) is the same problem at another Amount.
type Problem struct {
	Text   string
	Key    string
	Amount int
}

// TreeReport is letta-code's pre-commit verdict on a whole tree.
type TreeReport struct {
	// FrontMatter is the hook's first stage (memfs v2: every projected
	// file): when it is not empty, letta-code stops there.
	FrontMatter []string
	// Constraints is letta-code's constraint validator's output, config
	// errors included (then nothing else).
	Constraints []string
	// Problems is every problem memfsd holds a write to: both stages,
	// and, where the configuration does not parse, the tree judged by
	// letta-code's defaults (the limits it will have once fixed).
	Problems []Problem
	// V2 says which closing advice letta-code prints (root-marker).
	V2 bool
}

// Empty reports whether letta-code accepts the tree.
func (r TreeReport) Empty() bool { return len(r.FrontMatter) == 0 && len(r.Constraints) == 0 }

// Worse lists the problems of r that before does not have, or has
// smaller: what a change adds to a tree that may already break a rule.
func (r TreeReport) Worse(before TreeReport) []Problem {
	had := make(map[string]int, len(before.Problems))
	for _, p := range before.Problems {
		had[p.Key] = max(had[p.Key], p.Amount)
	}
	var worse []Problem
	for _, p := range r.Problems {
		if a, ok := had[p.Key]; !ok || p.Amount > a {
			worse = append(worse, p)
		}
	}
	return worse
}

// Text is the hook's output for r, as letta-code prints it (empty when
// it accepts the tree). held replaces the line saying the staged changes
// are still present.
func (r TreeReport) Text(held string) string {
	if len(r.FrontMatter) > 0 {
		return "Memory validation failed:\n\n  " + strings.Join(r.FrontMatter, "\n  ") + "\n"
	}
	if len(r.Constraints) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Memory validation blocked this commit.\nNo files were committed. " + held + "\n")
	b.WriteString("Validation checks the complete repository, so these problems may predate your staged changes.\n\nFix these problems:\n")
	for _, e := range r.Constraints {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("\n")
	if r.V2 {
		b.WriteString("Move non-core detail out of root Markdown and behind MEMORY.md indexes.\n")
	}
	b.WriteString("Split files above their per-file limit, then retry the commit.\n")
	b.WriteString("Limits come from .memfs.config.json, or the Letta Code defaults when it is absent.\n")
	b.WriteString("Do not raise or disable these limits unless the user explicitly approves it.\n")
	return b.String()
}

// StagedKept is letta-code's own line: its staged changes stay staged.
const StagedKept = "Your staged changes are still present."

// ConfigProtected is letta-code's error for an agent's change of
// .memfs.config.json.
const ConfigProtected = ConstraintsConfigPath + " is protected and requires human approval to change"

// TreeConstraints is letta-code's whole-tree checks kept up to date one
// file at a time: Set and Remove cost O(the path's depth), Report
// O(the problems found), whatever the number of files. Only a change of
// the configuration or of the layout (v1/v2) goes over every file once.
// Not safe for concurrent use.
type TreeConstraints struct {
	files map[string]FileFacts // every .md file
	v2    bool
	// shared is letta-code's shared-memory policy (its shared memory
	// repositories): every .md file outside skills/ is judged, by the
	// limits of .memfs.config.json only (no defaults, no core memory, no
	// indexes). Its hook's front-matter stage (every file's as v2's) is
	// not kept here: memfsd's front-matter guard judges touched files.
	shared bool
	// Configuration.
	hasConfig     bool
	configRegular bool
	configErrs    []string
	config        ConstraintsConfig // in force for the checks (defaults merged in v2)
	judge         ConstraintsConfig // what memfsd judges by when the file does not parse
	// Running state under config.
	viol  map[string][]Problem       // per file: mode, depth, characters (under judge)
	fmBad map[string]bool            // files whose v2 front matter breaks the rules
	below map[string]map[string]bool // folder → memory files below it
	// noIndex are the folders with memory files below them and no
	// MEMORY.md (v2's index errors come from these alone).
	noIndex map[string]bool
	core    int // characters of the regular root memory files
}

// NewTreeConstraints is an empty tree in v1 without a configuration.
func NewTreeConstraints() *TreeConstraints {
	t := &TreeConstraints{files: map[string]FileFacts{}}
	t.Configure(false, nil, false, true)
	return t
}

// Configure sets the layout (v2: letta-code's root-marker policy with a
// MEMORY.md at the root, in HEAD or in the tree) and .memfs.config.json
// (hasConfig false: absent). It goes over every file once.
func (t *TreeConstraints) Configure(v2 bool, config []byte, hasConfig, regular bool) {
	t.configure(v2, false, config, hasConfig, regular)
}

// ConfigureShared is Configure for letta-code's shared-memory policy, as
// its installSharedMemoryPreCommitHook installs it in a shared memory
// repository's clone.
func (t *TreeConstraints) ConfigureShared(config []byte, hasConfig, regular bool) {
	t.configure(false, true, config, hasConfig, regular)
}

func (t *TreeConstraints) configure(v2, shared bool, config []byte, hasConfig, regular bool) {
	t.v2, t.shared, t.hasConfig, t.configRegular, t.configErrs = v2, shared, hasConfig, regular, nil
	t.config, t.judge = ConstraintsConfig{}, ConstraintsConfig{}
	if v2 {
		t.config = DefaultConstraintsConfig()
	}
	if hasConfig && regular {
		cfg, errs := ParseConstraintsConfig(config)
		t.configErrs = errs
		if errs == nil {
			if v2 {
				cfg = cfg.mergeDefaults()
			}
			t.config = cfg
		}
	}
	t.judge = t.config
	if hasConfig && (!regular || t.configErrs != nil) {
		t.judge = DefaultConstraintsConfig()
	}
	t.viol, t.fmBad, t.below, t.noIndex, t.core = map[string][]Problem{}, map[string]bool{}, map[string]map[string]bool{}, map[string]bool{}, 0
	for p, f := range t.files {
		t.add(p, f)
	}
}

// V2 reports the layout Configure set.
func (t *TreeConstraints) V2() bool { return t.v2 }

// Get is the facts of path (false: not an .md file of the tree).
func (t *TreeConstraints) Get(path string) (FileFacts, bool) {
	f, ok := t.files[path]
	return f, ok
}

// Len counts the .md files.
func (t *TreeConstraints) Len() int { return len(t.files) }

// Set puts path (an .md file) in the tree with facts f.
func (t *TreeConstraints) Set(path string, f FileFacts) {
	t.Remove(path)
	t.files[path] = f
	t.add(path, f)
	t.indexChanged(path)
}

// Remove takes path out of the tree.
func (t *TreeConstraints) Remove(path string) {
	f, ok := t.files[path]
	if !ok {
		return
	}
	delete(t.files, path)
	defer t.indexChanged(path)
	delete(t.viol, path)
	delete(t.fmBad, path)
	if t.inScope(path) {
		for _, d := range ancestors(path) {
			delete(t.below[d], path)
			if len(t.below[d]) == 0 {
				delete(t.below, d)
			}
			t.recheck(d)
		}
		if f.Regular && !strings.Contains(path, "/") {
			t.core -= f.Chars
		}
	}
}

// inScope is letta-code's memoryFiles filter.
func (t *TreeConstraints) inScope(path string) bool {
	if strings.HasPrefix(path, "skills/") {
		return false
	}
	return t.v2 || t.shared || v1Scope.MatchString(path)
}

// ancestors lists path's folders, outermost first ("a", "a/b").
func ancestors(path string) []string {
	var out []string
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			out = append(out, path[:i])
		}
	}
	return out
}

// recheck puts folder d in noIndex or takes it out.
func (t *TreeConstraints) recheck(d string) {
	_, indexed := t.files[d+"/MEMORY.md"]
	if len(t.below[d]) > 0 && !indexed {
		t.noIndex[d] = true
	} else {
		delete(t.noIndex, d)
	}
}

// indexChanged rechecks the folder whose MEMORY.md path is.
func (t *TreeConstraints) indexChanged(path string) {
	if i := strings.LastIndex(path, "/"); i >= 0 && path[i+1:] == "MEMORY.md" {
		t.recheck(path[:i])
	}
}

func (t *TreeConstraints) add(path string, f FileFacts) {
	if t.v2 && len(f.FrontMatter) > 0 && !strings.HasPrefix(path, "skills/") {
		t.fmBad[path] = true
	}
	if !t.inScope(path) {
		return
	}
	for _, d := range ancestors(path) {
		if t.below[d] == nil {
			t.below[d] = map[string]bool{}
		}
		t.below[d][path] = true
		t.recheck(d)
	}
	if f.Regular && !strings.Contains(path, "/") {
		t.core += f.Chars
	}
	if v := fileProblems(path, f, t.judge); len(v) > 0 {
		t.viol[path] = v
	}
}

// fileProblems is the validator's per-file checks.
func fileProblems(path string, f FileFacts, cfg ConstraintsConfig) []Problem {
	if !f.Regular {
		text := path + ": memory Markdown must be a regular file"
		return []Problem{{Text: text, Key: text}}
	}
	var out []Problem
	depth := strings.Count(path, "/")
	if cfg.MaxDepth != nil && depth > *cfg.MaxDepth {
		text := fmt.Sprintf("%s: depth %d exceeds maxDepth %d", path, depth, *cfg.MaxDepth)
		out = append(out, Problem{Text: text, Key: text})
	}
	limit, source := cfg.MaxFileCharacters, "maxFileCharacters"
	for _, o := range cfg.FileCharacterLimits {
		if o.re != nil && o.re.MatchString(path) {
			limit, source = o.MaxCharacters, "glob '"+o.Pattern+"'"
			break
		}
	}
	if limit != nil && f.Chars > *limit {
		out = append(out, Problem{
			Text:   fmt.Sprintf("%s: %d characters exceeds %d from %s", path, f.Chars, *limit, source),
			Key:    path + ": characters exceed " + strconv.Itoa(*limit) + " from " + source,
			Amount: f.Chars,
		})
	}
	return out
}

// projected is the hook's v2 front-matter scope: every folder of path
// has a MEMORY.md.
func (t *TreeConstraints) projected(path string) bool {
	for _, d := range ancestors(path) {
		if _, ok := t.files[d+"/MEMORY.md"]; !ok {
			return false
		}
	}
	return true
}

// Report is letta-code's verdict on the tree. requireRoot says HEAD has
// a root MEMORY.md (v2 then requires one); configChanged that the change
// judged touches .memfs.config.json (letta-code: only a person may).
func (t *TreeConstraints) Report(requireRoot, configChanged bool) TreeReport {
	r := TreeReport{V2: t.v2}
	add := func(p Problem) { r.Problems = append(r.Problems, p) }
	plain := func(text string) Problem { return Problem{Text: text, Key: text} }
	// 1. The hook's front matter, v2: every projected file.
	if t.v2 {
		for _, p := range sortedKeys(t.fmBad) {
			if t.projected(p) {
				for _, e := range t.files[p].FrontMatter {
					r.FrontMatter = append(r.FrontMatter, e)
					add(plain(e))
				}
			}
		}
	}
	// 2. The constraint validator.
	if configChanged {
		r.Constraints = append(r.Constraints, ConfigProtected)
		add(plain(ConfigProtected))
	}
	if !t.hasConfig && !t.v2 {
		return r
	}
	stop := false
	if t.hasConfig && !t.configRegular {
		e := ConstraintsConfigPath + ": constraint config must be a regular file"
		r.Constraints = append(r.Constraints, e)
		add(plain(e))
		stop = true
	} else if t.configErrs != nil {
		for _, e := range t.configErrs {
			r.Constraints = append(r.Constraints, e)
			add(plain(e))
		}
		stop = true
	}
	if configChanged && !stop {
		stop = true // the hook reports before it reads the tree
		// memfsd still judges the tree below, for Problems.
	}
	var lines []string
	if t.v2 {
		if _, ok := t.files["MEMORY.md"]; !ok && requireRoot {
			lines = append(lines, "MEMORY.md: root memory index is required for MemFS v2")
		}
		// Index errors: the files below a folder without MEMORY.md, each
		// once, at its outermost such folder.
		var missing []string
		for d := range t.noIndex {
			for p := range t.below[d] {
				if t.firstMissing(p) == d {
					missing = append(missing, p)
				}
			}
		}
		slices.Sort(missing)
		for _, p := range missing {
			lines = append(lines, p+": missing required index "+t.firstMissing(p)+"/MEMORY.md")
		}
	}
	for _, l := range lines {
		add(plain(l))
	}
	var perFile []string
	for _, p := range sortedKeys(t.viol) {
		for _, v := range t.viol[p] {
			perFile = append(perFile, v.Text)
			add(v)
		}
	}
	lines = append(lines, perFile...)
	if t.v2 && t.judge.MaxCoreMemoryCharacters != nil && t.core > *t.judge.MaxCoreMemoryCharacters {
		p := Problem{
			Text:   fmt.Sprintf("core memory: %d characters exceeds %d from maxCoreMemoryCharacters", t.core, *t.judge.MaxCoreMemoryCharacters),
			Key:    "core memory: characters exceed " + strconv.Itoa(*t.judge.MaxCoreMemoryCharacters),
			Amount: t.core,
		}
		lines = append(lines, p.Text)
		add(p)
	}
	if !stop {
		r.Constraints = append(r.Constraints, lines...)
	}
	return r
}

// firstMissing is path's outermost folder without a MEMORY.md ("" when
// every folder has one).
func (t *TreeConstraints) firstMissing(path string) string {
	for _, d := range ancestors(path) {
		if _, ok := t.files[d+"/MEMORY.md"]; !ok {
			return d
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FactsOf reads the facts of the .md file rel with content data.
func FactsOf(rel string, data []byte, regular bool) FileFacts {
	return FileFacts{
		Regular:     regular,
		Chars:       CountCharacters(data),
		FrontMatter: ValidateLettaFrontMatter(rel, string(data), nil, true),
	}
}

// TreeConstraintsError is a change refused because it makes the tree
// break letta-code's MemFS rules more than it did.
type TreeConstraintsError struct {
	Report TreeReport
	Worse  []Problem
}

// ErrTreeConstraints is what a *TreeConstraintsError is (errors.Is).
var ErrTreeConstraints = errors.New("the change makes the memory break letta-code's MemFS rules")

// Is makes errors.Is(err, ErrTreeConstraints) true.
func (e *TreeConstraintsError) Is(target error) bool { return target == ErrTreeConstraints }

// Error is letta-code's hook output, then what this change adds.
func (e *TreeConstraintsError) Error() string {
	return e.Text("Nothing was written: the memory folder is as it was.")
}

// Text is the hook's output with held in place of its line about staged
// changes, then the problems this change adds.
func (e *TreeConstraintsError) Text(held string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(e.Report.Text(held), "\n"))
	b.WriteString("\nThis change adds:")
	for _, p := range e.Worse {
		b.WriteString("\n  " + p.Text)
	}
	return b.String()
}
