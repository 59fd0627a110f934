#!/usr/bin/env bash
# The soaks at full length. The README's test command runs a short version
# of each (it must fit its machine: see docs/testing.md, Testing); this script runs
# them with MEMFSD_SOAK=1, each under its own time bound, and prints a
# figure line per soak plus the figures the tests log.
#   scripts/soak.sh              # everything (about 20 minutes on 2 cores)
#   scripts/soak.sh chaos fuzz   # some of them, by name
#   FUZZTIME=2m scripts/soak.sh fuzz
# Names: chaos writers scale gitmem history blockset walls e2e-race fuzz; by name only: persongit hostile. The whole output of each is
# kept in $LOGDIR (default ${TMPDIR:-/tmp}/memfsd-soak).
set -uo pipefail
cd "$(dirname "$0")/.."
export MEMFSD_SOAK=1
LOGDIR=${LOGDIR:-${TMPDIR:-/tmp}/memfsd-soak}
FUZZTIME=${FUZZTIME:-45s}
mkdir -p "$LOGDIR"
failed=()

# soak NAME BOUND PKG RUN [go test flags...]: one soak, bounded, with its
# figure line and the lines its tests log (t.Logf) printed.
soak() {
  local name=$1 bound=$2 pkg=$3 run=$4
  shift 4
  local log="$LOGDIR/$name.log" start rc=0
  start=$(date +%s)
  timeout --signal=QUIT "$bound" go test -race -count=1 -v -timeout "$bound" -run "$run" "$@" "$pkg" >"$log" 2>&1 || rc=$?
  local took=$(( $(date +%s) - start ))
  grep -E '^\s+\S+_test\.go:[0-9]+: |^CHAOS|^--- FAIL|^panic: ' "$log" | grep -vE 'daemon log|^\s+(time=|level=)' | head -40
  grep -E '^fuzz: elapsed' "$log" | tail -1
  if [ "$rc" = 0 ]; then
    echo "SOAK $name: pass in ${took}s (bound $bound)"
  else
    echo "SOAK $name: FAIL (exit $rc) after ${took}s (bound $bound); whole output in $log"
    failed+=("$name")
  fi
}

selected=("$@")
# named NAME: a soak run only when asked for by name.
named() {
  [ ${#selected[@]} -gt 0 ] && on "$1"
}
on() {
  [ ${#selected[@]} -eq 0 ] && return 0
  local s
  for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

# Two daemons on one agent, 30% of requests faulted, SIGKILLs, a person's
# git and two writer processes: 1,500 operations (the suite runs 100;
# scripts/chaos.sh runs 6,400 for a long night).
on chaos && soak chaos 15m ./cmd/memfsd/ '^TestChaos$'
# The writers real programs are (>, >>, rename) for 30 s each while pulls
# replace their file, at least 50 remote commits (the suite: 5 s, 10).
on writers && soak writers 10m ./cmd/memfsd/ '^(TestRun_WritersDuringPulls|TestShared_ViewWritersDuringRefresh)$'
# A thousand files settling as a thousand commits, a hundred agents in one
# daemon, a hundred starting with the remote down (the suite: 200, 25, 25).
on scale && soak scale 10m ./cmd/memfsd/ '^(TestRun_ThousandFilesThousandCommits|TestRun_HundredAgents|TestRun_RemoteDownAtStartHundredAgents)$'
# The git CLI beside memfsd: 200+200 commits in one folder, 24 rounds of
# geometric repacks, git gc beside five fetches of a 1,000-commit history,
# 15 pushes each side beside git pack-refs and gc, a clone of 10,000 commits
# compared with git clone, a repack of 300 commits beside a CPU hog per core.
on gitmem && soak gitmem 10m ./gitmem/ '^(TestRepo_CoexistsWithGitCLI|TestRepo_RepackGeometric|TestClone_SameAsGitClone|TestRepo_RepackNoStallOnBusyHost)$'
on gitmem && soak embedded 10m ./embedded/ '^(TestEmbedded_GitGCBesideFetch|TestEmbedded_RefsBesideGitCLI|TestEmbedded_PushBesideGitGC)$'
# A person's git loop in the memory folder (add + commit, revert, worktree
# add + merge, stash push/pop, checkout; each checked for exit 0 and its
# effect) for 2 minutes beside the agent writing a file every 20 ms, a
# second machine pushing and turns ending (the suite: 3 s). Its figures:
# commands run and failed, memfsd's holds of index.lock, the longest wait
# for a clean `git status` after a burst of writes (issue 44). Run only when
# named (scripts/soak.sh persongit): it still fails on issue 44's remainder
# (0-2 cold commands of ~1,250 meet a commit's window; `git status` not
# clean within 10 s about twice in 2 minutes; docs/testing.md), and a soak
# that is known to fail would only hide the others' results in CI.
named persongit && soak persongit 10m ./agent/ '^TestAgent_PersonsGit(LoopSoak|BesideAWritingAgent)$'
# Long histories read as git reads them (index-pack of a 10,000-commit pack)
# and the context's tree budget over 10,000 files.
on history && soak history-pack 10m ./gitfmt/pack/ '^TestIndexPack_SameIndexAsGit$'
on history && soak history-context 10m ./agent/ '^TestContext_BudgetsAndCache$'
# `block set` at once after /healthz against a slow remote, 100 times
# (10 daemons of 10 agents; the suite: 20).
on blockset && soak blockset 10m ./cmd/memfsd/ '^TestBlockSet_AtOnceAfterHealthz$'
# One agent's .git made hostile (a ref loop, FIFOs) for 60 s while the
# other agent writes, and the seeded fuzz of that .git for 4 minutes (10 once the memory drift it found is shown to level off)
# (MEMFSD_WALLS_SEED replays a seed), and 30 s of tool calls while the agent's
# shell swaps a folder for a link to memfsd's home (the suite: 4 s).
on walls && soak walls 15m ./cmd/memfsd/ '^(TestWalls_[^H].*|TestTool_SymlinkSwapThroughTheDaemon)$'
# Hostile agents beside good ones in one daemon (sparse and huge files,
# links in .git, a zlib bomb, MCP sessions past the bound and a stream
# never read, branch resets under a pending block set): three cycles of
# 50 s, each ended by SIGTERM on the same home (the suite: one of 4 s).
# Run only when named (scripts/soak.sh hostile): after the merges of
# 2026-12-08 (issue 44's commit window among them) its full length failed
# once at cycle 0 round 8, h2's reading session not told within 60 s
# beside 200 changed files a round (10.3 s at worst on the branch before
# the merge); not diagnosed yet, and a soak known to fail would only sink
# the others' results in CI. The suite's short version runs in the README's
# command.
named hostile && soak hostile 10m ./cmd/memfsd/ '^TestWalls_HostileAgents$'
# The end-to-end package again, at the suite's lengths, with the daemon built
# under the race detector (the suite runs the binary people deploy: see
# raceDaemon in cmd/memfsd/e2e_helpers_test.go; the soaks above build it
# with -race too).
on e2e-race && MEMFSD_SOAK=0 MEMFSD_RACE_DAEMON=1 soak e2e-race 15m ./cmd/memfsd/ '.'
# The fuzzers, each for $FUZZTIME.
if on fuzz; then
  soak fuzz-resolve 5m ./memtool/ '^$' -fuzz '^FuzzResolve$' -fuzztime "$FUZZTIME"
  soak fuzz-merge3 5m ./gitfmt/merge3/ '^$' -fuzz '^FuzzMerge3$' -fuzztime "$FUZZTIME"
  soak fuzz-readonly 5m ./agent/ '^$' -fuzz '^FuzzReadOnlyNeverReachesRemote$' -fuzztime "$FUZZTIME"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "soak: failed: ${failed[*]}"
  exit 1
fi
echo "soak: all passed"
