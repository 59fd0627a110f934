package blocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// letta-code's MemFS tree constraints (SPEC §9): a port of
// parseMemoryConstraintsConfig and validateMemoryTreeConstraints in
// @letta-ai/letta-code 0.32.18 (src/memory-constraints.ts, run by its
// pre-commit hook through .git/hooks/letta-memory-constraints.cjs,
// src/agent/memory-constraints.ts), messages byte for byte.

// ConstraintsConfigPath is letta-code's constraint configuration file.
const ConstraintsConfigPath = ".memfs.config.json"

// letta-code's defaults (DEFAULT_MEMORY_CONSTRAINTS_CONFIG).
const (
	DefaultMaxDepth                = 2
	DefaultMaxFileCharacters       = 20000
	DefaultMaxCoreMemoryCharacters = 65536
)

// ConstraintsConfig is .memfs.config.json. A nil limit is absent: it does
// not apply.
type ConstraintsConfig struct {
	MaxDepth                *int
	MaxFileCharacters       *int
	MaxCoreMemoryCharacters *int
	FileCharacterLimits     []FileCharacterLimit
}

// FileCharacterLimit is one fileCharacterLimits entry: files matching the
// glob have MaxCharacters (nil: null, no limit) instead of
// maxFileCharacters.
type FileCharacterLimit struct {
	Pattern       string
	MaxCharacters *int
	re            *regexp.Regexp
}

func intp(n int) *int { return &n }

// DefaultConstraintsConfig is letta-code's defaults.
func DefaultConstraintsConfig() ConstraintsConfig {
	return ConstraintsConfig{
		MaxDepth:                intp(DefaultMaxDepth),
		MaxFileCharacters:       intp(DefaultMaxFileCharacters),
		MaxCoreMemoryCharacters: intp(DefaultMaxCoreMemoryCharacters),
	}
}

// mergeDefaults is the hook's `{ ...DEFAULT_CONFIG, ...parsedConfig }`
// (memfs v2): a key the file sets wins.
func (c ConstraintsConfig) mergeDefaults() ConstraintsConfig {
	d := DefaultConstraintsConfig()
	if c.MaxDepth != nil {
		d.MaxDepth = c.MaxDepth
	}
	if c.MaxFileCharacters != nil {
		d.MaxFileCharacters = c.MaxFileCharacters
	}
	if c.MaxCoreMemoryCharacters != nil {
		d.MaxCoreMemoryCharacters = c.MaxCoreMemoryCharacters
	}
	d.FileCharacterLimits = c.FileCharacterLimits
	return d
}

// ParseConstraintsConfig is parseMemoryConstraintsConfig: the
// configuration, or the errors letta-code reports for it (one a line,
// "<path>: ..."). One difference: for text that is not JSON the cause in
// parentheses is Go's wording, not Node's.
func ParseConstraintsConfig(data []byte) (ConstraintsConfig, []string) {
	const p = ConstraintsConfigPath
	var cfg ConstraintsConfig
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return cfg, []string{p + ": invalid JSON (" + err.Error() + ")"}
	}
	if dec.More() {
		return cfg, []string{p + ": invalid JSON (unexpected text after the JSON value)"}
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return cfg, []string{p + ": expected a JSON object"}
	}
	var errs []string
	// Object.keys order is insertion order; JSON's, here.
	for _, key := range objectKeys(data) {
		switch key {
		case "version", "maxDepth", "maxFileCharacters", "maxCoreMemoryCharacters", "fileCharacterLimits":
		default:
			errs = append(errs, p+": unknown field '"+key+"'")
		}
	}
	if n, ok := safeInteger(obj["version"]); !ok || n != 1 {
		errs = append(errs, p+": version must be 1")
	}
	if v, set := obj["maxDepth"]; set {
		if n, ok := safeInteger(v); ok && n >= 0 {
			cfg.MaxDepth = intp(n)
		} else {
			errs = append(errs, p+": maxDepth must be a non-negative integer")
		}
	}
	for _, key := range []string{"maxFileCharacters", "maxCoreMemoryCharacters"} {
		v, set := obj[key]
		if !set {
			continue
		}
		n, ok := safeInteger(v)
		if !ok || n <= 0 {
			errs = append(errs, p+": "+key+" must be a positive integer")
			continue
		}
		if key == "maxFileCharacters" {
			cfg.MaxFileCharacters = intp(n)
		} else {
			cfg.MaxCoreMemoryCharacters = intp(n)
		}
	}
	if v, set := obj["fileCharacterLimits"]; set {
		list, ok := v.([]any)
		if !ok {
			errs = append(errs, p+": fileCharacterLimits must be an array")
		}
		var raws []json.RawMessage
		_ = json.Unmarshal(fieldRaw(data, "fileCharacterLimits"), &raws)
		for i, item := range list {
			label := fmt.Sprintf("%s: fileCharacterLimits[%d]", p, i)
			o, ok := item.(map[string]any)
			if !ok {
				errs = append(errs, label+" must be an object")
				continue
			}
			var order []string
			if i < len(raws) {
				order = objectKeys(raws[i])
			}
			for _, key := range order {
				if key != "pattern" && key != "maxCharacters" {
					errs = append(errs, label+": unknown field '"+key+"'")
				}
			}
			lim := FileCharacterLimit{}
			pattern, ok := o["pattern"].(string)
			switch {
			case !ok || pattern == "" || strings.HasPrefix(pattern, "/") || strings.Contains(pattern, `\`) || slices.Contains(strings.Split(pattern, "/"), ".."):
				errs = append(errs, label+": pattern must be a non-empty repo-relative glob using '/'")
			case slices.ContainsFunc(strings.Split(pattern, "/"), func(s string) bool { return strings.Contains(s, "**") && s != "**" }):
				errs = append(errs, label+": '**' must be a complete path segment")
			default:
				lim.Pattern = pattern
				lim.re = globRegexp(pattern)
			}
			mc, set := o["maxCharacters"]
			if mc != nil || !set {
				if n, ok := safeInteger(mc); ok && n > 0 {
					lim.MaxCharacters = intp(n)
				} else {
					errs = append(errs, label+": maxCharacters must be a positive integer or null")
				}
			}
			cfg.FileCharacterLimits = append(cfg.FileCharacterLimits, lim)
		}
	}
	if len(errs) > 0 {
		return ConstraintsConfig{}, errs
	}
	return cfg, nil
}

// safeInteger is Number.isSafeInteger on a JSON value.
func safeInteger(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
		return 0, false
	}
	return int(f), true
}

// fieldRaw is the raw JSON of a top-level field of an object (its last
// occurrence, as JSON.parse keeps).
func fieldRaw(data []byte, key string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	return m[key]
}

// objectKeys lists the top-level keys of a JSON object in their order
// (duplicates once, where first seen: JS keeps a repeated key's first
// position).
func objectKeys(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys []string
	seen := map[string]bool{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// jsDot is JS's "." (no line terminators).
const jsDot = "[^\n\r\u2028\u2029]"

// globRegexp is letta-code's glob-to-RegExp for fileCharacterLimits.
func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		switch {
		case r == '*' && strings.HasPrefix(pattern[i+1:], "*/"):
			b.WriteString("(?:" + jsDot + "*/)?")
			i += 3
			continue
		case r == '*' && strings.HasPrefix(pattern[i+1:], "*"):
			b.WriteString(jsDot + "*")
			i += 2
			continue
		case r == '*':
			b.WriteString("[^/]*")
		case r == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += size
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// CountCharacters is how letta-code counts a file's characters: the code
// points of its UTF-8 decoding, a byte order mark included and each
// invalid sequence (its maximal subpart, as Node's decoder replaces it)
// one U+FFFD.
func CountCharacters(b []byte) int {
	n := 0
	for i := 0; i < len(b); n++ {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		i += maximalSubpart(b[i:])
	}
	return n
}

// maximalSubpart is the length of the ill-formed sequence at b's start
// that one U+FFFD replaces (WHATWG's UTF-8 decoder).
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
