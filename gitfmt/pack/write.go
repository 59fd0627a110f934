package pack

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Object is one object to pack: its id, type and content.
type Object struct {
	Hash plumbing.Hash
	Type plumbing.ObjectType
	Data []byte
}

// Encode encodes objs as a version 2 pack of whole objects and its
// version 2 index; offsets[i] is where objs[i] starts in the pack.
func Encode(objs []Object) (pack, idx []byte, offsets []int64) {
	var buf bytes.Buffer
	buf.WriteString("PACK")
	binary.Write(&buf, binary.BigEndian, [2]uint32{2, uint32(len(objs))})
	zw := zlibPool.Get().(*zlib.Writer)
	defer zlibPool.Put(zw)
	offsets = make([]int64, len(objs))
	crcs := make([]uint32, len(objs))
	for i, o := range objs {
		offsets[i] = int64(buf.Len())
		size := uint64(len(o.Data))
		b := byte(o.Type)<<4 | byte(size&0x0f)
		for size >>= 4; size > 0; size >>= 7 {
			buf.WriteByte(b | 0x80)
			b = byte(size & 0x7f)
		}
		buf.WriteByte(b)
		zw.Reset(&buf)
		zw.Write(o.Data)
		zw.Close()
		crcs[i] = crc32.ChecksumIEEE(buf.Bytes()[offsets[i]:])
	}
	sum := sha1.Sum(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes(), encodeIdx(objs, offsets, crcs, sum), offsets
}

// encodeIdx is a version 2 pack index (git's Documentation/gitformat-pack).
func encodeIdx(objs []Object, offsets []int64, crcs []uint32, packSum [20]byte) []byte {
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(objs[a].Hash[:], objs[b].Hash[:]) })
	var buf bytes.Buffer
	buf.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fanout [256]uint32
	for _, o := range objs {
		fanout[o.Hash[0]]++
	}
	for i := 1; i < 256; i++ {
		fanout[i] += fanout[i-1]
	}
	binary.Write(&buf, binary.BigEndian, fanout)
	for _, i := range order {
		buf.Write(objs[i].Hash[:])
	}
	for _, i := range order {
		binary.Write(&buf, binary.BigEndian, crcs[i])
	}
	var large []uint64
	for _, i := range order {
		off := uint32(offsets[i])
		if offsets[i] >= 1<<31 {
			off = 1<<31 | uint32(len(large))
			large = append(large, uint64(offsets[i]))
		}
		binary.Write(&buf, binary.BigEndian, off)
	}
	binary.Write(&buf, binary.BigEndian, large)
	buf.Write(packSum[:])
	sum := sha1.Sum(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes()
}

// zlibPool keeps compressors: a fresh one allocates ~600 KB of state.
var zlibPool = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return zw
}}
