package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// EWAH bitmaps written by ewahBitmap read back as the same bits, for
// sets with long empty stretches, full words and single bits.
func TestEWAH_RoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	sets := [][]int{nil, {0}, {63}, {64}, {0, 64, 128, 5000}}
	var full []int
	for i := 64; i < 192; i++ {
		full = append(full, i)
	}
	sets = append(sets, full)
	for n := 0; n < 200; n++ {
		var s []int
		for b := 0; b < 3000; b++ {
			if rng.IntN(40) == 0 {
				s = append(s, b+rng.IntN(2)*1000*(b/1000))
			}
		}
		slices.Sort(s)
		sets = append(sets, slices.Compact(s))
	}
	for _, want := range sets {
		enc := ewahBitmap(want)
		n, err := ewahLen(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("%v: length %d of %d: %v", want, n, len(enc), err)
		}
		got, err := ewahBits(enc, 10000)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%v read back as %v (%v)", want, got, err)
		}
	}
	if _, err := ewahBits(ewahBitmap([]int{70}), 70); err == nil {
		t.Fatal("a bit past the shared index's end was accepted")
	}
}
