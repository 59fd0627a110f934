package testgit

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
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

// WritePackedDeltaOnBomb writes into gitDir's objects/pack a pack as the
// agent's own git could make it (indexed by git index-pack): a blob of
// baseSize zeros, its header stating baseSize, and a delta on it (OFS_DELTA
// with ofs, else REF_DELTA) whose data is a few bytes: it declares the
// base's size and a target of 10 bytes copied from the base. It returns
// the ids of the base and of the delta's object.
func WritePackedDeltaOnBomb(tb testing.TB, gitDir string, baseSize int64, ofs bool) (base, delta string) {
	tb.Helper()
	var pack bytes.Buffer
	pack.WriteString("PACK")
	binary.Write(&pack, binary.BigEndian, uint32(2))
	binary.Write(&pack, binary.BigEndian, uint32(2))
	entryHeader := func(typ byte, size int64) {
		c := typ<<4 | byte(size&15)
		size >>= 4
		for size > 0 {
			pack.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		pack.WriteByte(c)
	}
	// The base: blob, baseSize zeros, and its id.
	baseAt := int64(pack.Len())
	entryHeader(3, baseSize)
	zw, _ := zlib.NewWriterLevel(&pack, zlib.BestSpeed)
	bh := sha1.New()
	bh.Write([]byte("blob " + itoa(baseSize) + "\x00"))
	zero := make([]byte, 1<<20)
	for left := baseSize; left > 0; {
		n := min(left, int64(len(zero)))
		zw.Write(zero[:n])
		bh.Write(zero[:n])
		left -= n
	}
	zw.Close()
	base = hex.EncodeToString(bh.Sum(nil))
	// The delta: base size, target size 10, copy 10 bytes from offset 0.
	var data []byte
	for _, v := range []int64{baseSize, 10} {
		for v >= 0x80 {
			data = append(data, byte(v&0x7f)|0x80)
			v >>= 7
		}
		data = append(data, byte(v))
	}
	data = append(data, 0x90, 10)
	deltaAt := int64(pack.Len())
	if ofs {
		entryHeader(6, int64(len(data)))
		rel := deltaAt - baseAt
		enc := []byte{byte(rel & 0x7f)}
		for rel >>= 7; rel > 0; rel >>= 7 {
			rel--
			enc = append([]byte{byte(rel&0x7f) | 0x80}, enc...)
		}
		pack.Write(enc)
	} else {
		entryHeader(7, int64(len(data)))
		raw, _ := hex.DecodeString(base)
		pack.Write(raw)
	}
	zw, _ = zlib.NewWriterLevel(&pack, zlib.BestSpeed)
	zw.Write(data)
	zw.Close()
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	dh := sha1.Sum(append([]byte("blob 10\x00"), make([]byte, 10)...))
	delta = hex.EncodeToString(dh[:])

	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	name := filepath.Join(dir, "pack-"+hex.EncodeToString(sum[:]))
	if err := os.WriteFile(name+".pack", pack.Bytes(), 0o444); err != nil {
		tb.Fatal(err)
	}
	Run(tb, dir, "index-pack", "-o", name+".idx", name+".pack")
	return base, delta
}
