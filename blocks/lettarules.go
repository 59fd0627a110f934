package blocks

import (
	"errors"
	"regexp"
	"slices"
	"strings"
)

// letta-code's front-matter rules (SPEC §9): a port of
// validateMemoryFileFrontmatter in @letta-ai/letta-code 0.32.18
// (src/memory-frontmatter.ts, run by its pre-commit hook,
// src/agent/memory-git-hooks.ts), messages byte for byte.

// ErrFrontMatterRules is what a *FrontMatterRulesError is (errors.Is): a
// write whose front matter breaks letta-code's rules.
var ErrFrontMatterRules = errors.New("the file's front matter breaks letta-code's rules")

// FrontMatterRulesError names the rules a write broke, in letta-code's
// words ("<path>: missing frontmatter (must start with ---)", ...).
type FrontMatterRulesError struct {
	Path   string
	Errors []string
}

// Error is letta-code's pre-commit hook output.
func (e *FrontMatterRulesError) Error() string {
	return "Memory validation failed:\n  " + strings.Join(e.Errors, "\n  ")
}

// Is makes errors.Is(err, ErrFrontMatterRules) true.
func (e *FrontMatterRulesError) Is(target error) bool { return target == ErrFrontMatterRules }

// v1Scope is the hook's set of memory files in letta-code's legacy layout
// (memory-constraints.ts: /^(?:memory\/)?(?:system|reference)\/.*\.md$/).
var v1Scope = regexp.MustCompile(`^(?:memory/)?(?:system|reference)/.*\.md$`)

// LettaV2 reports whether a memory folder is memfs v2: a root MEMORY.md
// (exists says whether a path is in the folder).
func LettaV2(exists func(rel string) bool) bool { return exists("MEMORY.md") }

// LettaRulesApply reports whether letta-code's hook validates rel: in v1,
// system/**.md and reference/**.md; in v2, every .md outside skills/ whose
// folders each have a MEMORY.md (the "projected" files).
func LettaRulesApply(rel string, v2 bool, exists func(rel string) bool) bool {
	if !v2 {
		return v1Scope.MatchString(rel)
	}
	if !strings.HasSuffix(rel, ".md") || strings.HasPrefix(rel, "skills/") {
		return false
	}
	for dir := rel; strings.Contains(dir, "/"); {
		dir = dir[:strings.LastIndex(dir, "/")]
		if !exists(dir + "/MEMORY.md") {
			return false
		}
	}
	return true
}

// CheckLettaRules is ValidateLettaFrontMatter as an error (nil: valid).
func CheckLettaRules(rel string, content, previous []byte, v2 bool) error {
	if errs := ValidateLettaFrontMatter(rel, string(content), previous, v2); len(errs) > 0 {
		return &FrontMatterRulesError{Path: rel, Errors: errs}
	}
	return nil
}

// ValidateLettaFrontMatter is letta-code's validateMemoryFileFrontmatter:
// the rules content (replacing previous, nil when new; the hook passes it
// only in v1) breaks, each as "<path>: <why>".
func ValidateLettaFrontMatter(path, content string, previous []byte, v2 bool) []string {
	var errs []string
	lines := strings.Split(content, "\n")
	if v2 && path[strings.LastIndex(path, "/")+1:] == "MEMORY.md" {
		if lines[0] == "---" {
			return []string{path + ": MEMORY.md must not have frontmatter"}
		}
		return nil
	}
	if lines[0] != "---" {
		return []string{path + ": missing frontmatter (must start with ---)"}
	}
	closing := slices.Index(lines[1:], "---")
	if closing < 0 {
		return []string{path + ": frontmatter opened but never closed (missing closing ---)"}
	}
	closing++
	// JS: previousContent is null or "" (both falsy) when there is none.
	prev := string(previous)
	hasPrev := len(previous) > 0
	if !v2 && hasPrev && legacyValue(prev, "read_only") == "true" {
		return []string{path + ": file is read_only and cannot be modified"}
	}
	seen := map[string]bool{}
	allowed := []string{"description", "read_only", "limit"}
	if v2 {
		allowed = []string{"name", "description"}
	}
	for _, line := range lines[1:closing] {
		if line == "" {
			continue
		}
		if !v2 && (line[0] == ' ' || line[0] == '\t') {
			continue
		}
		rawKey, value := line, line
		if i := strings.IndexByte(line, ':'); i >= 0 {
			rawKey, value = line[:i], line[i+1:]
		}
		var key string
		if v2 {
			key = trimSpaces(rawKey)
		} else {
			key = strings.ReplaceAll(rawKey, " ", "")
		}
		value = trimSpaces(value)
		if !slices.Contains(allowed, key) {
			errs = append(errs, path+": unknown frontmatter key '"+key+"' (allowed: "+strings.Join(allowed, " ")+")")
			continue
		}
		if v2 && seen[key] {
			errs = append(errs, path+": duplicate frontmatter key '"+key+"'")
		}
		seen[key] = true
		if key == "read_only" {
			if !hasPrev {
				errs = append(errs, path+": 'read_only' is a protected field and cannot be set by the agent")
			} else if value != legacyValue(prev, key) {
				errs = append(errs, path+": 'read_only' is a protected field and cannot be changed by the agent")
			}
		}
		if (v2 || key == "description") && (value == "" || v2 && (value == `""` || value == "''")) {
			errs = append(errs, path+": '"+key+"' must not be empty")
		}
	}
	required := []string{"description"}
	if v2 {
		required = []string{"name", "description"}
	}
	for _, key := range required {
		if !seen[key] {
			errs = append(errs, path+": missing required field '"+key+"'")
		}
	}
	if !v2 && legacyValue(prev, "read_only") != "" && legacyValue(content, "read_only") == "" {
		errs = append(errs, path+": 'read_only' is a protected field and cannot be removed by the agent")
	}
	return errs
}

// legacyValue is the hook's reading of key in text's front matter: every
// "key:" line's value, trimmed of spaces, one a line.
func legacyValue(text, key string) string {
	lines := strings.Split(text, "\n")
	end := -1
	if len(lines) > 1 {
		if i := slices.Index(lines[1:], "---"); i >= 0 {
			end = i + 1
		}
	}
	if end < 0 {
		return ""
	}
	var vals []string
	for _, l := range lines[1:end] {
		if strings.HasPrefix(l, key+":") {
			vals = append(vals, trimSpaces(l[len(key)+1:]))
		}
	}
	return strings.Join(vals, "\n")
}

// trimSpaces is JS's replace(/^ +| +$/g, ""): spaces only, not tabs or "\r".
func trimSpaces(s string) string { return strings.Trim(s, " ") }
