package testgit

import (
	"bytes"
	"compress/flate"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"hash/adler32"
	"os"
	"path/filepath"
	"testing"
)

// WriteZlibBomb writes a loose blob into gitDir's objects as the agent's
// own git could: a header stating declared bytes ("blob <declared>\x00")
// followed by zeros bytes of zeros, zlib-compressed, a valid stream (its
// Adler-32 checks). 2 GiB of zeros takes some 2 MiB on disk, and is built
// in well under a second: one deflate block of 1 MiB of zeros is made and
// repeated (with all-zero history, every such block is the same bytes),
// and the checksum of zeros is worked out, not computed byte by byte.
// Its id is made up (git finds a loose object by its name and checks no
// content until it reads it whole), and returned; git's own mktree and
// commit-tree accept it, reading only its header.
func WriteZlibBomb(tb testing.TB, gitDir string, declared, zeros int64) string {
	tb.Helper()
	const chunk = 1 << 20
	header := []byte("blob " + itoa(declared) + "\x00")
	var out bytes.Buffer
	out.Write([]byte{0x78, 0x01}) // zlib: deflate, 32 KiB window, no dictionary
	fw, err := flate.NewWriter(&out, flate.BestSpeed)
	if err != nil {
		tb.Fatal(err)
	}
	fw.Write(header)
	zero := make([]byte, chunk)
	// Two blocks of zeros to reach the state every later block starts in
	// (history all zeros); the third is the block repeated.
	left := zeros
	for i := 0; i < 2 && left > 0; i++ {
		n := min(left, chunk)
		fw.Write(zero[:n])
		fw.Flush()
		left -= n
	}
	if left >= chunk {
		mark := out.Len()
		fw.Write(zero)
		fw.Flush()
		block := bytes.Clone(out.Bytes()[mark:])
		left -= chunk
		// Check once that the block repeats as claimed.
		mark = out.Len()
		fw.Write(zero)
		fw.Flush()
		if !bytes.Equal(out.Bytes()[mark:], block) {
			tb.Fatal("deflate blocks of zeros differ: the bomb cannot be built by repetition")
		}
		left -= chunk
		for ; left >= chunk; left -= chunk {
			out.Write(block)
		}
	}
	if left > 0 {
		fw.Write(zero[:left])
	}
	fw.Close()
	// Adler-32 of header+zeros: after the header, each zero leaves A as it
	// is and adds A to B.
	sum := adler32.Checksum(header)
	a, b := int64(sum&0xffff), int64(sum>>16)
	b = (b + (zeros%65521)*a) % 65521
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], uint32(b<<16|a))
	out.Write(trailer[:])

	id := sha1.Sum([]byte("a zlib bomb " + itoa(declared) + " " + itoa(zeros)))
	hexID := hex.EncodeToString(id[:])
	dir := filepath.Join(gitDir, "objects", hexID[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hexID[2:]), out.Bytes(), 0o444); err != nil {
		tb.Fatal(err)
	}
	return hexID
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
