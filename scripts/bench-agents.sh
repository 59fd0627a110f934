#!/usr/bin/env bash
# 1,000 agents in one daemon on the embedded default remote: time from start
# to /healthz 200, resident memory, and idle CPU over a minute.
#   scripts/bench-agents.sh            # 1000 agents, 60 s idle
#   AGENTS=100 IDLE=10 scripts/bench-agents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${AGENTS:-1000}
IDLE=${IDLE:-60}
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/memfsd" ./cmd/memfsd
args=()
for i in $(seq -w 1 "$N"); do args+=(--agent "agent-$i"); done
start=$(date +%s.%N)
"$work/memfsd" run --home "$work/home" --log-level warn ${EXTRA:-} "${args[@]}" 2>"$work/log" &
pid=$!
until curl -sf --unix-socket "$work/home/memfsd.sock" http://memfsd/healthz >/dev/null 2>&1; do
  kill -0 $pid 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.1
done
ready=$(date +%s.%N)
rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
hz=$(getconf CLK_TCK)
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep "$IDLE"
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
rss_idle_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
kill -TERM $pid; wait $pid || true
# A restart: every work tree is there, so each agent is opened and watched
# at once; the start-up syncs run on behind /healthz.
start2=$(date +%s.%N)
"$work/memfsd" run --home "$work/home" --log-level warn "${args[@]}" 2>"$work/log2" &
pid=$!
until curl -sf --unix-socket "$work/home/memfsd.sock" http://memfsd/healthz >/dev/null 2>&1; do
  kill -0 $pid 2>/dev/null || { cat "$work/log2"; exit 1; }
  sleep 0.05
done
ready2=$(date +%s.%N)
kill -TERM $pid; wait $pid || true
awk -v s="$start2" -v r="$ready2" -v n="$N" 'BEGIN { printf "| %d agents, restart (clones present) | start-up to /healthz 200: %.2f s |\n", n, r - s }'
awk -v n="$N" -v s="$start" -v r="$ready" -v rss="$rss_kb" -v rss2="$rss_idle_kb" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v idle="$IDLE" 'BEGIN {
  printf "| %d agents in one daemon | start-up to /healthz 200: %.1f s | RSS %.0f MiB at ready, %.0f MiB after %d s idle | idle CPU %.2f%% of a core |\n",
    n, r - s, rss/1024, rss2/1024, idle, (t1 - t0) / hz / idle * 100 }'
