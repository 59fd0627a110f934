package index

import (
	"encoding/binary"
	"fmt"
)

// ewahLen is the length of the EWAH bitmap at the start of d.
func ewahLen(d []byte) (int, error) {
	if len(d) < 12 {
		return 0, fmt.Errorf("read index: %w: short bitmap", ErrFormat)
	}
	words := int(binary.BigEndian.Uint32(d[4:8]))
	if words > (len(d)-12)/8 {
		return 0, fmt.Errorf("read index: %w: truncated bitmap", ErrFormat)
	}
	return 12 + words*8, nil
}

// ewahBits lists the set bits of an EWAH bitmap (git's ewah/ewah_io.c
// layout: bit count, word count, 64-bit words, last marker's position),
// each below limit.
func ewahBits(d []byte, limit int) ([]int, error) {
	if len(d) == 0 {
		return nil, nil
	}
	bad := fmt.Errorf("read index: %w: a link bitmap names an entry the shared index lacks", ErrFormat)
	words := int(binary.BigEndian.Uint32(d[4:8]))
	word := func(i int) uint64 { return binary.BigEndian.Uint64(d[8+i*8:]) }
	var bits []int
	pos := 0
	for p := 0; p < words; {
		w := word(p)
		p++
		run := int((w >> 1) & 0xffffffff)
		if run > limit/64+1 {
			return nil, bad
		}
		if w&1 != 0 {
			for k := 0; k < run*64; k++ {
				bits = append(bits, pos)
				pos++
			}
		} else {
			pos += run * 64
		}
		for k := 0; k < int(w>>33) && p < words; k++ {
			lw := word(p)
			p++
			for c := 0; c < 64; c++ {
				if lw>>c&1 != 0 {
					bits = append(bits, pos)
				}
				pos++
			}
		}
		if len(bits) > 0 && bits[len(bits)-1] >= limit {
			return nil, bad
		}
	}
	return bits, nil
}

// ewahBitmap encodes the ascending bit positions as an EWAH bitmap, as
// git's ewah_serialize_strbuf writes it.
func ewahBitmap(bits []int) []byte {
	var buf []uint64
	rlw, size := 0, 0
	if len(bits) == 0 {
		buf = []uint64{0}
	} else {
		size = bits[len(bits)-1] + 1
		lits := make([]uint64, (size+63)/64)
		for _, b := range bits {
			lits[b/64] |= 1 << (b % 64)
		}
		for i := 0; i < len(lits); {
			zeros := 0
			for i < len(lits) && lits[i] == 0 {
				zeros++
				i++
			}
			start := i
			for i < len(lits) && lits[i] != 0 {
				i++
			}
			rlw = len(buf)
			buf = append(buf, uint64(zeros)<<1|uint64(i-start)<<33)
			buf = append(buf, lits[start:i]...)
		}
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(size))
	out = binary.BigEndian.AppendUint32(out, uint32(len(buf)))
	for _, w := range buf {
		out = binary.BigEndian.AppendUint64(out, w)
	}
	return binary.BigEndian.AppendUint32(out, uint32(rlw))
}
