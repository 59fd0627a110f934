#!/usr/bin/env bash
# The chaos soak: two daemons on one agent, a person committing with the git
# CLI, 30% of requests faulted (503, 520-524, resets, delays), one daemon
# SIGKILLed and restarted at random. Prints writes, faults, kills, lost (must
# be 0) and the git fsck --strict result.
#   scripts/chaos.sh            # the long run: 5,000 writes
#   WRITES=300 scripts/chaos.sh # the CI-sized run
#   SEED=123 scripts/chaos.sh   # replay a seed
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMFSD_CHAOS_WRITES=${WRITES:-5000}
[ -n "${SEED:-}" ] && export MEMFSD_CHAOS_SEED=$SEED
go test -count=1 -run '^TestChaos$' -v -timeout 120m ./cmd/memfsd/ 2>&1 | grep -E '^CHAOS|chaos:|--- (PASS|FAIL)|^(ok|FAIL)'
