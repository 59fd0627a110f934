#!/usr/bin/env bash
# The chaos soak: two daemons on one agent, a person committing with the git
# CLI, 30% of requests faulted (503, 520-524, resets, delays), one daemon
# SIGKILLed and restarted at random, and two writer processes (one truncating
# and writing, one appending) writing files that pulls replace meanwhile.
# Prints writes, faults, kills, lost (must be 0; every writer line included),
# the writers' line counts and the git fsck --strict result.
#   scripts/chaos.sh            # the long run: 6,400 operations, over 5,000 writes
#   WRITES=300 scripts/chaos.sh # the CI-sized run
#   SEED=123 scripts/chaos.sh   # replay a seed
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMFSD_CHAOS_WRITES=${WRITES:-6400} # operations; about 80% are writes
[ -n "${SEED:-}" ] && export MEMFSD_CHAOS_SEED=$SEED
# The long run uses the binary people deploy; CI's short run (go test) runs
# the daemons under the race detector. RACE=1 keeps it for the long run too.
[ "${RACE:-0}" = 1 ] || export MEMFSD_NORACE=1
# The whole output (a timeout's goroutine dump, the daemons' logs on a
# failure) is kept in LOG; the summary lines are printed.
LOG=${LOG:-${TMPDIR:-/tmp}/memfsd-chaos.log}
rc=0
go test -count=1 -run '^TestChaos$' -v -timeout 120m ./cmd/memfsd/ >"$LOG" 2>&1 || rc=$?
grep -E '^CHAOS|chaos_test.go|--- (PASS|FAIL)|^(ok|FAIL)|^panic: ' "$LOG" || true
[ "$rc" = 0 ] || echo "chaos: go test exited $rc; the whole output is in $LOG" >&2
exit "$rc"
