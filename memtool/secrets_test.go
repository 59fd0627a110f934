package memtool_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/fakesecret"
	"github.com/memfsd/memfsd/memtool"
)

// Every real-looking credential is held: alone, inside a note, and at the
// end of a sentence.
func TestSecretGuard_RealSecretsHeld(t *testing.T) {
	t.Parallel()
	pats := memtool.DefaultSecretPatterns()
	all := append(fakesecret.Tokens(), fakesecret.Keys(t)...)
	for _, s := range all {
		for _, text := range []string{s.Text, "notes for the deploy\n" + s.Text + "\nmore notes\n", "the key is " + strings.TrimSpace(s.Text) + "."} {
			if _, ok := memtool.SecretIn(pats, text); !ok {
				t.Errorf("%s not held: %q", s.Kind, text)
			}
		}
	}
	if len(all) < 25 {
		t.Fatalf("only %d secrets made", len(all))
	}
}

// Text that only looks like the start of a credential is not held: the
// two files of the Debian man pages the guard held before (ssh_config(5)'s
// OpenSSH key-type names, openssl-glossary(7)'s example header), and
// near misses of each rule.
func TestSecretGuard_NotHeld(t *testing.T) {
	t.Parallel()
	pats := memtool.DefaultSecretPatterns()
	for _, text := range []string{
		// ssh_config(5), CASignatureAlgorithms and friends.
		"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,\nsk-ssh-ed25519-cert-v01@openssh.com,\nsk-ecdsa-sha2-nistp256@openssh.com",
		"see sk-ecdsa-sha2-nistp256-cert-v01-openssh.example.org for the name",
		// openssl-glossary(7): the header named, no key under it.
		"Privacy Enhanced Mail (PEM)\n    A format for encoding keys, e.g.\n    -----BEGIN RSA PRIVATE KEY-----\n    followed by base64 data.\n",
		"           example:\n\n            -----BEGIN PRIVATE KEY-----\n            MIICdg....\n            ... bhTQ==\n            -----END PRIVATE KEY-----\n",
		"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n", // 18 bytes: no key
		"-----BEGIN RSA PRIVATE KEY-----\nthis is where the key goes, base64 of the DER bytes\n-----END RSA PRIVATE KEY-----",
		// Near misses of the token rules.
		"sk-abcdefghijklmnopqrstuvwxyzabcdefghij", // one class: a word, not a key
		"task-force-planning-meeting-2024-notes-and-agenda",
		"ghp_short", "AKIA0000000000000000", "the xoxb-token setting",
	} {
		if name, ok := memtool.SecretIn(pats, text); ok {
			t.Errorf("held as %s: %q", name, text)
		}
	}
}
