#!/usr/bin/env bash
# 1,000 agents in one daemon on the embedded default remote: time from start
# to /healthz 200, resident memory, and idle CPU over a minute.
#   scripts/bench-agents.sh            # 1000 agents, 60 s idle
#   AGENTS=100 IDLE=10 scripts/bench-agents.sh
#   SHARED=100 scripts/bench-agents.sh # 100 of them attached to one shared repository
# With SHARED=K the shared repository "team" is created on the embedded
# remote first (letta-code's shared-memory create: a shared repository
# starts empty; 20 files in one commit, made with the git CLI) and attached
# to agent-0001..K with `memfsd shared attach` before the first start (no
# daemon runs: the CLI records them; the daemon attaches them at start). The
# extra figure is the time from start until all K views hold the shared tip
# (their records name the seeded commit and the view has its files).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${AGENTS:-1000}
IDLE=${IDLE:-60}
K=${SHARED:-0}
work=$(mktemp -d)
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/memfsd" ./cmd/memfsd
args=()
for i in $(seq -w 1 "$N"); do args+=(--agent "agent-$i"); done
if [ "$K" -gt 0 ]; then
  [ "$K" -le "$N" ] || { echo "SHARED=$K > AGENTS=$N" >&2; exit 2; }
  first=$(printf 'agent-%0*d' "${#N}" 1)
  bare="$work/home/remote/v1/git/$first/repositories/team.git"
  mkdir -p "$(dirname "$bare")"
  git init -q --bare -b main "$bare"
  seed="$work/seed"
  git init -q -b main "$seed"
  for f in $(seq -w 1 20); do
    mkdir -p "$seed/reference/team"
    printf -- '---\ndescription: Team note %s.\n---\nShared fact %s, written once by the operator.\n' "$f" "$f" >"$seed/reference/team/note-$f.md"
  done
  git -C "$seed" add -A
  git -C "$seed" -c user.name=operator -c user.email=operator@example.com commit -q -m "create shared repository team"
  git -C "$seed" push -q "$bare" main
  tip=$(git -C "$seed" rev-parse HEAD)
  t=$(date +%s.%N)
  for i in $(seq -w 1 "$K"); do
    id=$(printf 'agent-%0*d' "${#N}" "$((10#$i))")
    "$work/memfsd" --home "$work/home" shared attach team --agent "$id" >/dev/null 2>&1
  done
  awk -v s="$t" -v e="$(date +%s.%N)" -v k="$K" 'BEGIN { printf "recorded %d attachments with memfsd shared attach (no daemon): %.1f s\n", k, e - s }' >&2
  # views_at_tip (run beside the start, polling every 0.2 s) prints the
  # time when every attached view's record names the seeded tip and the
  # view holds the last seeded file.
  views_at_tip() {
    local recs=() files=()
    for i in $(seq 1 "$K"); do
      id=$(printf 'agent-%0*d' "${#N}" "$i")
      recs+=("$work/home/agents/$id/records/shared-view-team.json")
      files+=("$work/home/agents/$id/shared/team/reference/team/note-20.md")
    done
    until [ "$(grep -ls "\"tip\": \"$tip\"" "${recs[@]}" | wc -l)" -eq "$K" ] &&
      [ "$(ls "${files[@]}" 2>/dev/null | wc -l)" -eq "$K" ]; do
      kill -0 $pid 2>/dev/null || return 1
      sleep 0.2
    done
    date +%s.%N
  }
fi
start=$(date +%s.%N)
"$work/memfsd" run --home "$work/home" --log-level warn ${EXTRA:-} "${args[@]}" 2>"$work/log" &
pid=$!
vpid=
if [ "$K" -gt 0 ]; then views_at_tip >"$work/viewed" & vpid=$!; fi
until curl -sf --unix-socket "$work/home/memfsd.sock" http://memfsd/healthz >/dev/null 2>&1; do
  kill -0 $pid 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.1
done
ready=$(date +%s.%N)
rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
hz=$(getconf CLK_TCK)
cpu_ready=$(awk '{print $14+$15}' /proc/$pid/stat) # CPU ticks to ready: less at the mercy of other load than the wall clock
[ -z "$vpid" ] || wait $vpid
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep "$IDLE"
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
rss_idle_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
kill -TERM $pid; wait $pid || true
# A restart: every work tree is there, so each agent is opened and watched
# at once; the start-up syncs run on behind /healthz.
start2=$(date +%s.%N)
"$work/memfsd" run --home "$work/home" --log-level warn ${EXTRA:-} "${args[@]}" 2>"$work/log2" &
pid=$!
until curl -sf --unix-socket "$work/home/memfsd.sock" http://memfsd/healthz >/dev/null 2>&1; do
  kill -0 $pid 2>/dev/null || { cat "$work/log2"; exit 1; }
  sleep 0.05
done
ready2=$(date +%s.%N)
rss2_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
cpu_ready2=$(awk '{print $14+$15}' /proc/$pid/stat)
kill -TERM $pid; wait $pid || true
what="$N agents"
[ "$K" -gt 0 ] && what="$N agents, $K attached to one shared repository"
awk -v s="$start2" -v r="$ready2" -v w="$what" -v rss="$rss2_kb" -v c="$cpu_ready2" -v hz="$hz" 'BEGIN { printf "| %s, restart (clones present) | start-up to /healthz 200: %.2f s (%.2f CPU-s) | RSS %.0f MiB at ready |\n", w, r - s, c / hz, rss/1024 }'
awk -v w="$what" -v s="$start" -v r="$ready" -v rss="$rss_kb" -v rss2="$rss_idle_kb" -v t0="$t0" -v t1="$t1" -v c="$cpu_ready" -v hz="$hz" -v idle="$IDLE" 'BEGIN {
  printf "| %s in one daemon | start-up to /healthz 200: %.1f s (%.1f CPU-s) | RSS %.0f MiB at ready, %.0f MiB after %d s idle | idle CPU %.2f%% of a core |\n",
    w, r - s, c / hz, rss/1024, rss2/1024, idle, (t1 - t0) / hz / idle * 100 }'
[ "$K" -gt 0 ] && awk -v s="$start" -v v="$(cat "$work/viewed")" -v k="$K" 'BEGIN { printf "| all %d views hold the shared tip | %.1f s after start |\n", k, v - s }'
[ "${ERRLOG:-0}" = 1 ] && { echo "--- first start log (warn+):"; head -20 "$work/log"; echo "--- restart log:"; head -20 "$work/log2"; } >&2
exit 0
