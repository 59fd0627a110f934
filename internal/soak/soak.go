// Package soak sizes the tests that are soaks at heart: the suite runs a
// short version of each (the README's test command must fit its machine:
// docs/testing.md, Testing),
// scripts/soak.sh runs them at full length with MEMFSD_SOAK=1.
package soak

import (
	"os"
	"time"
)

// On reports whether this run is a soak (MEMFSD_SOAK=1).
func On() bool { return os.Getenv("MEMFSD_SOAK") == "1" }

// Int is short in the suite and long in a soak.
func Int(short, long int) int {
	if On() {
		return long
	}
	return short
}

// Duration is short in the suite and long in a soak.
func Duration(short, long time.Duration) time.Duration {
	if On() {
		return long
	}
	return short
}
