package memtool

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// SecretPattern is a credential shape the secret guard refuses. Re finds
// candidates; Real, when set, keeps only those with a real token's shape
// (text is the whole text, loc the candidate's [start, end)), so a word
// that merely starts like a token is not held.
type SecretPattern struct {
	Name string
	Re   *regexp.Regexp
	Real func(text string, loc []int) bool
}

// DefaultSecretPatterns are the credential shapes refused by default. Each
// is anchored on the token's real shape: its prefix, its alphabet and
// length, what may stand on either side of it; a private key block is held
// only with a key body under its header (base64 that decodes to a key's
// structure), not a header alone as in a glossary or a manual.
func DefaultSecretPatterns() []SecretPattern {
	return []SecretPattern{
		{"private key block", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`), pemKeyBody},
		// sk-ant-api03-… : 93 URL-safe characters and AA (108 in all).
		{"Anthropic key (sk-ant-)", regexp.MustCompile(`\bsk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_-]{80,}`), tokenAlone},
		// sk- then 48 base62 (T3BlbkFJ inside); sk-proj-/sk-svcacct-/
		// sk-admin- then URL-safe base64 of 48 to 160-odd: at least 32,
		// random (upper, lower and digits), never a name such as
		// sk-ecdsa-sha2-nistp256-cert-v01@openssh.com.
		{"OpenAI-style key (sk-)", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}`), randomToken(3)},
		// ghp_/gho_/ghu_/ghs_/ghr_ then 36 base62; github_pat_ then 22,
		// _ and 59.
		{"GitHub token (ghp_/gho_/ghs_/ghu_/github_pat_)", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b`), tokenAlone},
		// AKIA/ASIA then 16 of base32's alphabet (A-Z, 2-7).
		{"AWS access key id (AKIA)", regexp.MustCompile(`\b(AKIA|ASIA)[A-Z2-7]{16}\b`), tokenAlone},
		{"AWS secret access key", regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+]|$)`), nil},
		// xoxb-/xoxp-/xoxa-/xoxr-/xoxs-/xoxe- then digits, -, and more.
		{"Slack token (xox)", regexp.MustCompile(`\bxox[abprse]-[0-9]+-[A-Za-z0-9-]{10,}`), tokenAlone},
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
		if p.Real == nil {
			if p.Re.MatchString(text) {
				return p.Name, true
			}
			continue
		}
		for _, loc := range p.Re.FindAllStringIndex(text, -1) {
			if p.Real(text, loc) {
				return p.Name, true
			}
		}
	}
	return "", false
}

// tokenAlone: the candidate is not part of a longer name — neither
// followed by @ (user@host, an OpenSSH key type) nor by a dot and a
// letter (a dotted name), nor glued to a longer word before it.
func tokenAlone(text string, loc []int) bool {
	if s := loc[0]; s > 0 {
		if c := text[s-1]; c == '-' || c == '.' && s > 1 && isAlnum(text[s-2]) {
			return false
		}
	}
	if e := loc[1]; e < len(text) {
		switch text[e] {
		case '@':
			return false
		case '.':
			if e+1 < len(text) && isAlnum(text[e+1]) {
				return false
			}
		}
	}
	return true
}

// randomToken is tokenAlone for a token whose body is random: it mixes
// classes (upper, lower, digits: n of them), as no word or name does.
// A random 32 of base62 misses a class about once in 10^7.
func randomToken(n int) func(text string, loc []int) bool {
	return func(text string, loc []int) bool {
		if !tokenAlone(text, loc) {
			return false
		}
		var up, low, dig bool
		for _, c := range []byte(text[loc[0]:loc[1]]) {
			switch {
			case c >= 'A' && c <= 'Z':
				up = true
			case c >= 'a' && c <= 'z':
				low = true
			case c >= '0' && c <= '9':
				dig = true
			}
		}
		k := 0
		for _, b := range []bool{up, low, dig} {
			if b {
				k++
			}
		}
		return k >= n
	}
}

func isAlnum(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// pemBodyMax bounds how much text under a header is read for its body.
const pemBodyMax = 64 << 10

// pemKeyBody: under the header (after optional RFC 1421 headers such as
// Proc-Type and DEK-Info) stand lines of base64 that decode to a key —
// DER (a SEQUENCE, 0x30), an OpenSSH key (openssh-key-v1), or an
// encrypted key's bytes (with Proc-Type) — of at least 48 bytes (an
// Ed25519 PKCS #8 key, the smallest). Lines may be indented, quoted, or
// joined by \n escapes (a key inside a JSON string), as keys are pasted;
// the END line may be missing (a key cut short is still a key).
func pemKeyBody(text string, loc []int) bool {
	rest := text[loc[1]:]
	if len(rest) > pemBodyMax {
		rest = rest[:pemBodyMax]
	}
	rest = strings.ReplaceAll(rest, `\r\n`, "\n")
	rest = strings.ReplaceAll(rest, `\n`, "\n")
	var body strings.Builder
	encrypted, inHeaders := false, true
	for i, line := range strings.Split(rest, "\n") {
		line = strings.Trim(line, " \t\r\"',>#/*")
		if i == 0 && line == "" {
			continue // the rest of the header's line
		}
		if strings.HasPrefix(line, "-----END ") {
			break
		}
		if inHeaders {
			if k, _, ok := strings.Cut(line, ":"); ok && k != "" && !strings.ContainsAny(k, " +/=") {
				if k == "Proc-Type" {
					encrypted = true
				}
				continue
			}
			if line == "" && body.Len() == 0 {
				continue // the blank line after the headers
			}
			inHeaders = false
		}
		if line == "" || !isBase64Line(line) {
			break
		}
		body.WriteString(line)
	}
	b := body.String()
	b = b[:len(b)-len(b)%4]
	der, err := base64.StdEncoding.DecodeString(b)
	if err != nil || len(der) < 48 {
		return false
	}
	return encrypted || der[0] == 0x30 || bytes.HasPrefix(der, []byte("openssh-key-v1\x00"))
}

func isBase64Line(s string) bool {
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}
