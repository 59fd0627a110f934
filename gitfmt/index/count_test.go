package index

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// The agent's shell can write the index: a header whose entry count was
// flipped (found by TestWalls_FuzzOneAgentsGitDir, which saw the daemon's
// RSS jump past 512 MiB) made Parse allocate room for that many entries
// before reading one — up to four billion, which Go cannot recover from.
// A count the file cannot hold is now a format error, with nothing
// allocated for it.
func TestParse_EntryCountBeyondTheFile(t *testing.T) {
	t.Parallel()
	for _, n := range []uint32{2, 1 << 24, 0xffffffff} {
		data := make([]byte, HeaderLen+entryFixedLen+TrailerSize)
		copy(data, "DIRC")
		binary.BigEndian.PutUint32(data[4:], 2)
		binary.BigEndian.PutUint32(data[8:], n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Parse(data)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrFormat) {
			t.Errorf("count %d in a one-entry file: %v, want ErrFormat", n, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("count %d: Parse allocated %d bytes for a %d-byte file", n, grew, len(data))
		}
	}
}
