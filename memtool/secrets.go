package memtool

import (
	"fmt"
	"regexp"
)

// SecretPattern is a credential shape the secret guard refuses.
type SecretPattern struct {
	Name string
	Re   *regexp.Regexp
}

// DefaultSecretPatterns are the credential shapes refused by default.
func DefaultSecretPatterns() []SecretPattern {
	return []SecretPattern{
		{"private key block", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)},
		{"OpenAI-style key (sk-)", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
		{"GitHub token (ghp_/gho_/ghs_/ghu_/github_pat_)", regexp.MustCompile(`\b(gh[posu]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
		{"AWS access key id (AKIA)", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{"Slack token (xox)", regexp.MustCompile(`\bxox[abprse]-[A-Za-z0-9-]{10,}`)},
	}
}

// ParseSecretPattern makes a pattern from "name=regexp" or a bare regexp.
func ParseSecretPattern(s string) (SecretPattern, error) {
	name, expr := s, s
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			name, expr = s[:i], s[i+1:]
			break
		}
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return SecretPattern{}, fmt.Errorf("secret pattern %q: %w", s, err)
	}
	return SecretPattern{Name: name, Re: re}, nil
}

// SecretIn names the first pattern that matches text (false when none):
// the memory tool's guard, and the commit pipeline's for direct writes.
func SecretIn(patterns []SecretPattern, text string) (string, bool) {
	for _, p := range patterns {
		if p.Re.MatchString(text) {
			return p.Name, true
		}
	}
	return "", false
}
