#!/usr/bin/env bash
# Interop with letta-code (issue 20): letta-code's own git sequence and
# memfsd writing in turns to one remote. Not part of `go test` (it reads the
# git commands from letta-code's npm package, so it needs npm).
#
# The remote is memfsd's embedded one: the bare repository
# <home>/remote/v1/git/<agent>/state.git, which memfsd reaches through its
# in-process transport and letta-code's side through the git CLI on its path.
# letta-code's side runs, per turn, the commands of its post-turn sync
# (src/agent/memory-git.ts in @letta-ai/letta-code@0.32.18, checked below
# against the bundle): stageMemoryPaths `git add -A -- <paths>`,
# commitMemoryPaths `git -c user.name=… -c user.email=… commit -m <reason>`,
# then `git push -u origin main`, on a rejected (non-fast-forward) push
# `git pull --rebase` and `git push -u origin main` again; its session start
# is `git pull --ff-only`. memfsd's side writes files directly and through
# `memfsd memory --dialect letta-code`, then `memfsd sync` (no daemon).
#
# At the end: every line each side wrote is in the remote's main, both
# sides' HEAD equal the remote's, `git fsck --strict` clean on all three.
# Prints the figures; exits non-zero on any loss or divergence.
#   scripts/interop-letta.sh            # 40 turns each
#   TURNS=200 scripts/interop-letta.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TURNS=${TURNS:-40}
LETTA_VERSION=${LETTA_VERSION:-0.32.18}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# letta-code's sequence, read from its bundle: fail loudly if it changed.
(cd "$W" && npm pack --silent "@letta-ai/letta-code@$LETTA_VERSION" >/dev/null && tar xzf ./*.tgz)
B="$W/package/letta.js"
for want in '["add", "-A", "--", ...pathspecs]' '"commit",' '["push", "-u", "origin", "main"]' '["pull", "--rebase"]' '["pull", "--ff-only"]' 'isNonFastForwardPushError(pushError)'; do
  grep -qF -- "$want" "$B" || { echo "interop: letta-code $LETTA_VERSION no longer has $want in letta.js; update this script" >&2; exit 1; }
done

go build -o "$W/memfsd" ./cmd/memfsd
M() { "$W/memfsd" --home "$W/home" --log-level error "$@"; }
AGENT=interop
M sync --agent "$AGENT" >/dev/null
BARE="$W/home/remote/v1/git/$AGENT/state.git"
MEM="$W/home/agents/$AGENT/memory"
[ -d "$BARE" ] && [ -d "$MEM/.git" ] || { echo "interop: memfsd made no remote at $BARE" >&2; exit 1; }

# git's defaults on the shared bare repository: the auto gc a push starts
# (receive-pack's `git gc --auto`) runs detached and repacks while memfsd's
# next sync reads the repository through its in-process transport. A pack
# that vanishes under that read is retried, not a failure.

# letta-code's clone and session start.
L="$W/letta"
git clone -q "$BARE" "$L"
git -C "$L" pull --ff-only -q
lgit() { git -C "$L" "$@"; }
letta_commit() { # reason paths...
  local reason=$1; shift
  lgit add -A -- "$@"
  [ -n "$(lgit status --porcelain -- "$@")" ] || return 0
  lgit -c user.name="Letta Agent" -c user.email="$AGENT@letta.com" commit -q -m "$reason"
}
rebased=0
letta_push() {
  if ! out=$(lgit push -u origin main 2>&1); then
    grep -qE 'non-fast-forward|fetch first|rejected' <<<"$out" || { echo "interop: letta push: $out" >&2; exit 1; }
    lgit pull --rebase -q
    lgit push -u origin main -q 2>/dev/null
    rebased=$((rebased + 1))
  fi
}

mkdir -p "$L/system" "$L/reference/letta" "$MEM/reference/memfsd"
printf -- '---\ndescription: lines letta-code wrote\n---\n' >"$L/system/letta-log.md"
printf -- '---\ndescription: lines memfsd wrote\n---\n' >"$MEM/system/memfsd-log.md"
for i in $(seq 1 "$TURNS"); do
  # letta-code's turn: one line in its log, one new reference file.
  echo "letta line $i" >>"$L/system/letta-log.md"
  printf -- '---\ndescription: letta note %d\n---\nletta note %d\n' "$i" "$i" >"$L/reference/letta/n$i.md"
  letta_commit "letta turn $i" system/letta-log.md "reference/letta/n$i.md"
  letta_push
  # memfsd's turn: a direct write, every other turn a tool call too.
  echo "memfsd line $i" >>"$MEM/system/memfsd-log.md"
  if ((i % 2 == 0)); then
    M memory --agent "$AGENT" --dialect letta-code >/dev/null <<EOF
{"command":"create","reason":"memfsd turn $i","file_path":"reference/memfsd/n$i.md","description":"memfsd note $i","file_text":"memfsd note $i\n"}
EOF
  else
    printf -- '---\ndescription: memfsd note %d\n---\nmemfsd note %d\n' "$i" "$i" >"$MEM/reference/memfsd/n$i.md"
  fi
  M sync --agent "$AGENT" >/dev/null
done
# Converge: memfsd pulls letta-code's last push; letta-code pulls memfsd's.
M sync --agent "$AGENT" >/dev/null
lgit pull --ff-only -q

remote=$(git -C "$BARE" rev-parse main)
lost=0
for i in $(seq 1 "$TURNS"); do
  git -C "$BARE" show main:system/letta-log.md | grep -qx "letta line $i" || { echo "lost: letta line $i"; lost=$((lost + 1)); }
  git -C "$BARE" show main:system/memfsd-log.md | grep -qx "memfsd line $i" || { echo "lost: memfsd line $i"; lost=$((lost + 1)); }
  git -C "$BARE" cat-file -e "main:reference/letta/n$i.md" 2>/dev/null || { echo "lost: reference/letta/n$i.md"; lost=$((lost + 1)); }
  git -C "$BARE" cat-file -e "main:reference/memfsd/n$i.md" 2>/dev/null || { echo "lost: reference/memfsd/n$i.md"; lost=$((lost + 1)); }
done
converged=yes
[ "$(lgit rev-parse HEAD)" = "$remote" ] || converged="no (letta-code at $(lgit rev-parse --short HEAD))"
[ "$(git -C "$MEM" rev-parse HEAD)" = "$remote" ] || converged="no (memfsd at $(git -C "$MEM" rev-parse --short HEAD))"
[ -z "$(lgit status --porcelain)" ] || converged="no (letta-code's clone is dirty)"
fsck=clean
for d in "$BARE" "$L" "$MEM"; do git -C "$d" fsck --strict --no-progress >/dev/null 2>&1 || fsck="FAILED in $d"; done

echo "INTEROP turns=$TURNS (each side) letta_commits=$(git -C "$BARE" log --format=%an main | grep -c 'Letta Agent') memfsd_commits=$(git -C "$BARE" log --format=%an main | grep -vc 'Letta Agent') letta_rebases=$rebased"
echo "INTEROP lines letta=$(git -C "$BARE" show main:system/letta-log.md | grep -c '^letta line') memfsd=$(git -C "$BARE" show main:system/memfsd-log.md | grep -c '^memfsd line') lost=$lost converged=$converged fsck=$fsck"
[ "$lost" = 0 ] && [ "$converged" = yes ] && [ "$fsck" = clean ]
