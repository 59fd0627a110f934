package pack

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/sidebyside"

	"github.com/memfsd/memfsd/internal/soak"
)

// packOf has git pack every object of the fixture repo at bare into one
// pack, with OFS_DELTA bases (as upload-pack sends to go-git) or REF_DELTA.
func packOf(t *testing.T, bare string, ofs bool) []byte {
	t.Helper()
	args := []string{"-C", bare, "pack-objects", "--stdout", "--all", "-q"}
	if ofs {
		args = append(args, "--delta-base-offset")
	}
	cmd := exec.Command("git", args...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git pack-objects: %v %s", err, errb.String())
	}
	return out.Bytes()
}

// gitIndex is what `git index-pack` writes for pack.
func gitIndex(t *testing.T, pack []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "p.pack")
	if err := os.WriteFile(p, pack, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "index-pack", "-o", filepath.Join(dir, "p.idx"), p).CombinedOutput(); err != nil {
		t.Fatalf("git index-pack: %v %s", err, out)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "p.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// ourIndex runs Index over pack and encodes the index.
func ourIndex(t *testing.T, pack []byte) ([]byte, error) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "p.pack"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx, _, err := Index(context.Background(), bytes.NewReader(pack), f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := idxfile.NewEncoder(&buf).Encode(idx); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, pack) {
		t.Fatalf("the pack written (%d bytes) differs from the pack read (%d bytes)", len(written), len(pack))
	}
	return buf.Bytes(), nil
}

func TestIndexPack_SameIndexAsGit(t *testing.T) {
	t.Parallel()
	// A long history (10,000 commits) in a soak; 2,000 in the suite still
	// has long delta chains of both kinds.
	big := struct {
		name   string
		files  int
		commit int
	}{"f500-c2000", 500, 2000}
	if soak.On() {
		big.name, big.files, big.commit = "f1000-c10000", 1000, 10000
	}
	for _, fx := range []struct {
		name   string
		files  int
		commit int
	}{{"small", 20, 60}, big} {
		bare := fixtureBare(t, fx.files, fx.commit)
		for _, ofs := range []bool{true, false} {
			name := fx.name + "/ref-delta"
			if ofs {
				name = fx.name + "/ofs-delta"
			}
			t.Run(name, func(t *testing.T) {
				pack := packOf(t, bare, ofs)
				want := gitIndex(t, pack)
				got, err := ourIndex(t, pack)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("our index (%d bytes) differs from git index-pack's (%d bytes)", len(got), len(want))
				}
			})
		}
	}
}

// With nothing kept from pass one (a pack past keepBudget), every delta
// and base is inflated again from the file: the same index as git's.
// Not parallel: it sets the package's keepBudget.
func TestIndexPack_PastTheKeepBudget(t *testing.T) {
	defer func(b int64) { keepBudget = b }(keepBudget)
	keepBudget = 0
	for _, ofs := range []bool{true, false} {
		pack := packOf(t, fixtureBare(t, 20, 60), ofs)
		got, err := ourIndex(t, pack)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, gitIndex(t, pack)) {
			t.Fatalf("ofs=%v: our index differs from git index-pack's", ofs)
		}
	}
}

func TestIndexPack_RefusesDamage(t *testing.T) {
	t.Parallel()
	pack := packOf(t, fixtureBare(t, 20, 60), true)
	cases := map[string][]byte{
		"truncated":     pack[:len(pack)/2],
		"bad trailer":   append(append([]byte{}, pack[:len(pack)-1]...), pack[len(pack)-1]^1),
		"flipped byte":  flip(pack, len(pack)/3),
		"junk after":    append(append([]byte{}, pack...), 'x'),
		"not a pack":    []byte("HTTP/1.1 200 OK\r\n\r\n<html>"),
		"wrong version": append([]byte("PACK\x00\x00\x00\x09"), pack[8:]...),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ourIndex(t, bad); err == nil {
				t.Fatal("a damaged pack was indexed")
			} else if name != "truncated" && !errors.Is(err, ErrBadPack) {
				t.Fatalf("error %v is not ErrBadPack", err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x40
	return c
}

// fixtureBare is fixture.Bare in testdata/repos, built once and reused.
func fixtureBare(t *testing.T, files, commits int) string {
	t.Helper()
	bare, err := fixture.Bare(filepath.Join("..", "..", "testdata", "repos"), files, commits)
	if err != nil {
		t.Fatal(err)
	}
	return bare
}

// BenchmarkIndexPack indexes the 1k-file / 10k-commit pack with Index,
// go-git's parser and `git index-pack`, side by side.
func BenchmarkIndexPack(b *testing.B) {
	bare, err := fixture.Bare(filepath.Join("..", "..", "testdata", "repos"), 1000, 10000)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("git", "-C", bare, "pack-objects", "--stdout", "--all", "-q", "--delta-base-offset")
	cmd.Stdin = strings.NewReader("")
	pack, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	pp := filepath.Join(dir, "p.pack")
	os.WriteFile(pp, pack, 0o644)
	var ours, gogit, cli []time.Duration
	for i := 0; i < b.N; i++ {
		f, _ := os.Create(filepath.Join(dir, "o.pack"))
		t0 := time.Now()
		if _, _, err := Index(context.Background(), bytes.NewReader(pack), f); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		f.Close()
		iw := new(idxfile.Writer)
		parser, _ := packfile.NewParser(packfile.NewScanner(bytes.NewReader(pack)), iw)
		if _, err := parser.Parse(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if out, err := exec.Command("git", "index-pack", "-o", filepath.Join(dir, "g.idx"), pp).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		t3 := time.Now()
		os.Remove(filepath.Join(dir, "g.idx"))
		ours, gogit, cli = append(ours, t1.Sub(t0)), append(gogit, t2.Sub(t1)), append(cli, t3.Sub(t2))
	}
	b.ReportMetric(float64(sidebyside.Median(gogit).Microseconds())/1000, "gogit-ms")
	sidebyside.Report(b, ours, cli)
}

// Hostile packs: a broken or malicious server gets an error (or a correct
// index), never a crash, a hang or a data race in the daemon that serves
// every agent.

func zlibOf(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func entryHeader(typ int, size int64) []byte {
	b := byte(typ<<4) | byte(size&0x0f)
	size >>= 4
	var out []byte
	for size > 0 {
		out = append(out, b|0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	return append(out, b)
}

func leb(n int) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		if n >>= 7; n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func craftPack(count uint32, body []byte) []byte {
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, count)
	p.Write(body)
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// literalDelta is a delta from a base of baseLen bytes to out (inserted
// literally, out shorter than 128 bytes).
func literalDelta(baseLen int, out []byte) []byte {
	d := append(leb(baseLen), leb(len(out))...)
	return append(append(d, byte(len(out))), out...)
}

func TestIndexPack_Hostile(t *testing.T) {
	t.Parallel()
	hello := []byte("hello")
	helloID := codec.Hash(plumbing.BlobObject, hello)
	blob := append(entryHeader(3, 5), zlibOf(hello)...)

	t.Run("delta whose result is its own base", func(t *testing.T) {
		d := literalDelta(5, hello)
		body := append(append(append([]byte{}, blob...), entryHeader(7, int64(len(d)))...), helloID[:]...)
		body = append(body, zlibOf(d)...)
		if _, err := ourIndex(t, craftPack(2, body)); err != nil && !errors.Is(err, ErrBadPack) {
			t.Fatal(err)
		}
	})
	t.Run("object count of four billion", func(t *testing.T) {
		if _, err := ourIndex(t, craftPack(0xffffffff, blob)); err == nil {
			t.Fatal("a pack short of its count was indexed")
		}
	})
	t.Run("object declaring a terabyte", func(t *testing.T) {
		body := append(entryHeader(3, 1<<40), zlibOf([]byte("x"))...)
		if _, err := ourIndex(t, craftPack(1, body)); !errors.Is(err, ErrBadPack) {
			t.Fatalf("err = %v, want ErrBadPack", err)
		}
	})
	t.Run("object declaring more than it holds", func(t *testing.T) {
		body := append(entryHeader(3, 200<<20), zlibOf([]byte("x"))...)
		if _, err := ourIndex(t, craftPack(1, body)); !errors.Is(err, ErrBadPack) {
			t.Fatalf("err = %v, want ErrBadPack", err)
		}
	})
	t.Run("the same base twice, fifty deltas on it", func(t *testing.T) {
		body := append(append([]byte{}, blob...), blob...)
		for i := 0; i < 50; i++ {
			d := literalDelta(5, []byte{'a' + byte(i%26), byte('0' + i/26)})
			body = append(append(append(body, entryHeader(7, int64(len(d)))...), helloID[:]...), zlibOf(d)...)
		}
		for i := 0; i < 10; i++ { // -race watches the workers
			if _, err := ourIndex(t, craftPack(52, body)); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("delta chain deeper than git allows", func(t *testing.T) {
		body := append([]byte{}, blob...)
		prev := int64(12)
		offsets := []int64{12}
		d := literalDelta(5, hello)
		zd := zlibOf(d)
		for i := 0; i < maxDeltaDepth+10; i++ {
			off := 12 + int64(len(body))
			rel := off - prev
			// OFS_DELTA's offset encoding.
			enc := []byte{byte(rel & 0x7f)}
			for rel >>= 7; rel > 0; rel >>= 7 {
				rel--
				enc = append([]byte{byte(0x80 | (rel & 0x7f))}, enc...)
			}
			body = append(append(append(body, entryHeader(6, int64(len(d)))...), enc...), zd...)
			prev = off
			offsets = append(offsets, off)
		}
		if _, err := ourIndex(t, craftPack(uint32(len(offsets)), body)); !errors.Is(err, ErrBadPack) {
			t.Fatalf("err = %v, want ErrBadPack", err)
		}
	})
}
