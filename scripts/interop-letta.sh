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
# Meanwhile git gc repacks the bare repository under both (receive-pack's
# auto gc, made frequent, and a gc/repack loop; see below), so memfsd's
# fetches meet packs deleted under them.
#
# letta-code's own pre-commit hook (its front-matter rules and MemFS tree
# constraints, installed from the bundle as letta-code installs it in its
# memory clone: root-marker policy) runs on every letta-code commit, with
# letta-code's defaults in .memfs.config.json on the remote (put there by
# the operator, LETTA_MEMORY_CONSTRAINTS_UPDATE=1). Half-way, memfsd's
# side tries a turn past those rules on each route (issue 29): a depth-3
# file through the tool (refused), a 20,001-character direct write (held),
# a depth-3 file committed with the shell's git (held back from the push);
# letta-code's next commit on the shared remote must still pass its hook.
#
# At the end: every line each side wrote is in the remote's main, both
# sides' HEAD equal the remote's, `git fsck --strict` clean on all three.
# Prints the figures (and how many gcs ran, how many syncs memfsd retried);
# exits non-zero on any loss, divergence or failed memfsd command.
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
# memfsd's log (info: a sync that needed retries logs "sync recovered")
# goes to a file, shown when a command fails.
M() { "$W/memfsd" --home "$W/home" --log-level info "$@" 2>>"$W/memfsd.log" || { tail -5 "$W/memfsd.log" >&2; return 1; }; }
AGENT=interop
M sync --agent "$AGENT" >/dev/null
BARE="$W/home/remote/v1/git/$AGENT/state.git"
MEM="$W/home/agents/$AGENT/memory"
[ -d "$BARE" ] && [ -d "$MEM/.git" ] || { echo "interop: memfsd made no remote at $BARE" >&2; exit 1; }

# git gc on the shared bare repository while memfsd reads it through its
# in-process transport: packs vanish under memfsd's fetches, which must be
# retried, never lost or failed. Two sources, both counted:
#  - receive-pack's own `git gc --auto` after each of letta-code's pushes,
#    detached (git's default), made to run often: memfsd's in-process pushes
#    write a pack each, so more than 1 pack (or a few loose objects) is most
#    turns. Counted from git's trace (GIT_TRACE2 on letta-code's commands,
#    which receive-pack and its gc inherit): one repack per gc that ran.
#  - a loop beside the run, `git gc` then `git repack -A -d`, every second.
#    (-A, not -a: -a -d deletes packed objects no ref reaches yet, which cuts
#    any pusher, git's receive-pack too, between writing its objects and
#    moving its ref; -A loosens them, as git gc does. Both delete every old
#    pack, which is what memfsd's reads must survive.)
git -C "$BARE" config gc.autoPackLimit 1
git -C "$BARE" config gc.auto 64       # > 1 loose object in objects/17
git -C "$BARE" config gc.logExpiry now # a failed detached gc does not silence the next ones
TRACE="$W/trace2"
GCLOOP="$W/gcloop"
gcloop() {
  local gcs=0 repacks=0 failed=0
  while [ ! -e "$W/stop" ]; do
    if git -C "$BARE" gc -q 2>>"$GCLOOP.err"; then gcs=$((gcs + 1)); else failed=$((failed + 1)); fi
    if git -C "$BARE" repack -A -d -q 2>>"$GCLOOP.err"; then repacks=$((repacks + 1)); else failed=$((failed + 1)); fi
    echo "$gcs $repacks $failed" >"$GCLOOP"
    sleep 1 # room for receive-pack's auto gc, which skips while ours runs
  done
}

# letta-code's clone and session start.
L="$W/letta"
git clone -q "$BARE" "$L"
git -C "$L" pull --ff-only -q
node scripts/letta-constraints-golden.mjs "$B" --install "$L" root-marker
printf '{\n  "version": 1,\n  "maxDepth": 2,\n  "maxFileCharacters": 20000,\n  "maxCoreMemoryCharacters": 65536\n}\n' >"$L/.memfs.config.json"
git -C "$L" add .memfs.config.json
LETTA_MEMORY_CONSTRAINTS_UPDATE=1 git -C "$L" -c user.name=operator -c user.email=operator@example.com commit -q -m "letta-code's limits"
git -C "$L" push -q origin main
# (the gc loop starts after the clone: a local clone hard-links the
# repository's files and fails on one a gc rewrote under it.)
gcloop &
GCPID=$!
trap 'touch "$W/stop"; wait "$GCPID" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
lgit() { GIT_TRACE2="$TRACE" git -C "$L" "$@"; }
hook_refused=0
letta_commit() { # reason paths...
  local reason=$1 out; shift
  lgit add -A -- "$@"
  [ -n "$(lgit status --porcelain -- "$@")" ] || return 0
  # through letta-code's pre-commit hook (no --no-verify)
  out=$(lgit -c user.name="Letta Agent" -c user.email="$AGENT@letta.com" commit -q -m "$reason" 2>&1) && return 0
  hook_refused=$((hook_refused + 1))
  echo "interop: letta-code's commit '$reason' refused:" >&2
  echo "$out" >&2
  return 1
}
# memfsd's turn past letta-code's rules (see the top).
past_refused=0 past_held=0
memfsd_past_rules() {
  local out held f
  if out=$(echo '{"command":"create","reason":"too deep","file_path":"system/deep/a/b.md","description":"deep","file_text":"deep\n"}' |
    "$W/memfsd" --home "$W/home" memory --agent "$AGENT" --dialect letta-code 2>>"$W/memfsd.log"); then
    echo "interop: memfsd's tool committed a depth-3 file: $out" >&2; return 1
  fi
  grep -qF 'system/deep/a/b.md: depth 3 exceeds maxDepth 2' <<<"$out" || { echo "interop: the tool's refusal does not name the rule: $out" >&2; return 1; }
  past_refused=$((past_refused + 1))
  { printf -- '---\ndescription: big\n---\n'; head -c 19977 /dev/zero | tr '\0' x; } >"$MEM/system/big.md"
  mkdir -p "$MEM/system/d/e"
  printf -- '---\ndescription: deep\n---\ndeep\n' >"$MEM/system/d/e/f.md"
  git -C "$MEM" add system/d/e/f.md
  git -C "$MEM" -c user.name=person -c user.email=person@example.com commit -q -m "shell: too deep"
  "$W/memfsd" --home "$W/home" sync --agent "$AGENT" >/dev/null 2>>"$W/memfsd.log" || true # exits 1 naming what it holds
  # status exits 2 while something is held: its constraints_held paths
  held=$({ "$W/memfsd" --home "$W/home" status --agent "$AGENT" --json 2>>"$W/memfsd.log" || true; } |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);const a=Array.isArray(j)?j[0]:j;console.log((a.constraints_held||[]).map(h=>JSON.stringify(h.path)).join(" "))})')
  for f in system/big.md system/d/e/f.md; do
    grep -qF "\"$f\"" <<<"$held" || { echo "interop: memfsd did not hold $f (held: $held)" >&2; return 1; }
    past_held=$((past_held + 1))
  done
  for f in system/big.md system/d system/deep; do
    if git -C "$BARE" cat-file -e "main:$f" 2>/dev/null; then echo "interop: memfsd pushed $f past letta-code's rules" >&2; return 1; fi
  done
  return 0
}
rebased=0
letta_failed=0
letta_push() {
  local out
  out=$(lgit push -u origin main 2>&1) && return 0
  if grep -qE 'non-fast-forward|fetch first|rejected' <<<"$out"; then
    if out=$(lgit pull --rebase -q 2>&1) && out=$(lgit push -u origin main -q 2>&1); then
      rebased=$((rebased + 1))
      return 0
    fi
    lgit rebase --abort >/dev/null 2>&1 || true
  fi
  # git's own reads race the gc too (a pack index gone, "not our ref"):
  # like letta-code, leave the commit for the next turn's push, and count it.
  letta_failed=$((letta_failed + 1))
  echo "$out" | tail -1 >>"$W/letta-failures"
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
  if ((i == TURNS / 2)); then
    memfsd_past_rules
    # letta-code's next commit must pass its hook; then the held files
    # go, so both sides end clean.
    echo "letta line $i.5" >>"$L/system/letta-log.md"
    letta_commit "letta after memfsd's turn past the rules" system/letta-log.md
    letta_push
    rm -rf "$MEM/system/big.md" "$MEM/system/d"
    M sync --agent "$AGENT" >/dev/null
  fi
done
# Stop the gc loop, then converge: memfsd pulls letta-code's last push;
# letta-code pulls memfsd's.
touch "$W/stop"
wait "$GCPID"
letta_push
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

echo "INTEROP turns=$TURNS (each side) letta_commits=$(git -C "$BARE" log --format=%an main | grep -c 'Letta Agent') memfsd_commits=$(git -C "$BARE" log --format=%an main | grep -vc 'Letta Agent') letta_rebases=$rebased letta_push_failures=$letta_failed"
read -r loop_gcs loop_repacks loop_failed <"$GCLOOP"
auto_gcs=$(grep -c 'cmd_name repack (push/receive-pack/gc/repack)' "$TRACE" || true)
echo "INTEROP gc auto_gcs=$auto_gcs loop_gcs=$loop_gcs loop_repacks=$loop_repacks loop_failed=$loop_failed memfsd_retried_syncs=$(grep -c 'sync recovered' "$W/memfsd.log" || true) bare_packs=$(find "$BARE/objects/pack" -name '*.pack' | wc -l) bare_loose=$(find "$BARE/objects" -path '*/objects/[0-9a-f][0-9a-f]/*' -type f | wc -l)"
grep -o 'sync recovered.*after_class=[a-z_]*' "$W/memfsd.log" | sed 's/.*after_class=/INTEROP memfsd retried after class /' | sort | uniq -c || true
[ -s "$GCLOOP.err" ] && sort "$GCLOOP.err" | uniq -c | sort -rn | head -5 | sed 's/^/INTEROP gc loop: /'
[ -s "$W/letta-failures" ] && sort "$W/letta-failures" | uniq -c | sort -rn | head -5 | sed 's/^/INTEROP letta-code push failed (git under the gc): /'
[ -f "$BARE/gc.log" ] && sed 's/^/INTEROP gc.log: /' "$BARE/gc.log"
echo "INTEROP constraints memfsd_refused=$past_refused memfsd_held=$past_held letta_hook_refusals=$hook_refused remote_config=$(git -C "$BARE" cat-file -e main:.memfs.config.json 2>/dev/null && echo yes || echo no)"
echo "INTEROP lines letta=$(git -C "$BARE" show main:system/letta-log.md | grep -c '^letta line') memfsd=$(git -C "$BARE" show main:system/memfsd-log.md | grep -c '^memfsd line') lost=$lost converged=$converged fsck=$fsck"
[ "$lost" = 0 ] && [ "$converged" = yes ] && [ "$fsck" = clean ] && [ "$hook_refused" = 0 ] && [ "$past_refused" = 1 ] && [ "$past_held" = 2 ]
