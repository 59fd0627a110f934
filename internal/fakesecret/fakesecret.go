// Package fakesecret makes real-looking credentials for the secret guard's
// tests: tokens of each provider's shape from crypto/rand, and private
// keys made by ssh-keygen and openssl into a temporary folder.
package fakesecret

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Secret is one credential and what kind it is.
type Secret struct {
	Kind string
	Text string
}

const (
	base62  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	urlSafe = base62 + "-_"
	base32  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64     = base62 + "+/"
)

// Random is n characters of alphabet from crypto/rand.
func Random(alphabet string, n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(err)
	}
	for i, b := range buf {
		buf[i] = alphabet[int(b)%len(alphabet)]
	}
	return string(buf)
}

// OpenAI is a legacy OpenAI key: sk-, 20 base62, T3BlbkFJ, 20 base62.
func OpenAI() string { return "sk-" + Random(base62, 20) + "T3BlbkFJ" + Random(base62, 20) }

// Tokens are one of each token shape the guard knows.
func Tokens() []Secret {
	return []Secret{
		{"aws access key id", "AKIA" + Random(base32, 16)},
		{"aws session key id", "ASIA" + Random(base32, 16)},
		{"aws secret access key", "aws_secret_access_key = " + Random(b64, 40)},
		{"aws credentials file", "[default]\naws_access_key_id=AKIA" + Random(base32, 16) + "\naws_secret_access_key=" + Random(b64, 40) + "\n"},
		{"github classic", "ghp_" + Random(base62, 36)},
		{"github oauth", "gho_" + Random(base62, 36)},
		{"github app", "ghs_" + Random(base62, 36)},
		{"github fine-grained", "github_pat_" + Random(base62, 22) + "_" + Random(base62, 59)},
		{"openai legacy", OpenAI()},
		{"openai project", "sk-proj-" + Random(urlSafe, 74) + "T3BlbkFJ" + Random(urlSafe, 74)},
		{"openai service account", "sk-svcacct-" + Random(urlSafe, 74) + "T3BlbkFJ" + Random(urlSafe, 74)},
		{"anthropic", "sk-ant-api03-" + Random(urlSafe, 93) + "AA"},
		{"slack bot", "xoxb-" + Random("0123456789", 12) + "-" + Random("0123456789", 13) + "-" + Random(base62, 24)},
		{"slack user", "xoxp-" + Random("0123456789", 12) + "-" + Random("0123456789", 12) + "-" + Random("0123456789", 13) + "-" + Random("0123456789abcdef", 32)},
	}
}

// Keys are private keys made by ssh-keygen and openssl (skipped when
// either is missing): RSA, ECDSA and Ed25519 in OpenSSH's format, RSA
// in PEM's, PKCS #8 (plain and encrypted), SEC 1 EC, and an RSA key
// encrypted the traditional way (Proc-Type, DEK-Info).
func Keys(t testing.TB) []Secret {
	t.Helper()
	for _, tool := range []string{"ssh-keygen", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: the keys are made with it", tool)
		}
	}
	dir := t.TempDir()
	var out []Secret
	gen := func(kind, file string, args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v: %s", kind, err, b)
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Secret{kind, string(b)})
	}
	gen("openssh rsa", "rsa", "ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", "rsa")
	gen("openssh ecdsa", "ecdsa", "ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", "ecdsa")
	gen("openssh ed25519", "ed25519", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "ed25519")
	gen("openssh ed25519 with passphrase", "ed25519p", "ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", "ed25519p")
	gen("pem rsa (ssh-keygen -m PEM)", "rsapem", "ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", "rsapem")
	gen("pkcs8 rsa", "p8rsa.pem", "openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "p8rsa.pem")
	gen("pkcs8 ed25519", "p8ed.pem", "openssl", "genpkey", "-algorithm", "ED25519", "-out", "p8ed.pem")
	gen("sec1 ec", "ec.pem", "openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.pem")
	gen("pkcs8 encrypted", "p8enc.pem", "openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-128-cbc", "-pass", "pass:secret", "-out", "p8enc.pem")
	gen("rsa traditional encrypted", "rsaenc.pem", "openssl", "genrsa", "-traditional", "-aes128", "-passout", "pass:secret", "-out", "rsaenc.pem", "2048")
	// As keys are pasted: inside a JSON string (a cloud service
	// account's file), and indented in a note.
	p8 := out[5].Text
	out = append(out,
		Secret{"pkcs8 in a json string", `{"type": "service_account", "private_key": "` + strings.ReplaceAll(p8, "\n", `\n`) + `"}`},
		Secret{"ec key indented in markdown", "deploy key:\n\n" + indent(out[7].Text, "    ")},
	)
	return out
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return by + strings.Join(lines, "\n"+by) + "\n"
}

// Ed25519 is one OpenSSH Ed25519 private key made by ssh-keygen (skipped
// without it): the quick key for tests that need one.
func Ed25519(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed: the key is made with it")
	}
	f := filepath.Join(t.TempDir(), "key")
	if b, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f).CombinedOutput(); err != nil {
		t.Fatalf("make an ed25519 key: %v: %s", err, b)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
