#!/usr/bin/env bash
# The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli, from npm)
# against memfsd in the three set-ups docs/mcp.md recommends:
#   stdio in-process   (memfsd mcp, no daemon: the embedded remote),
#   stdio via daemon   (memfsd mcp beside memfsd run),
#   http --mcp-listen  (memfsd run --mcp-listen 127.0.0.1:PORT, the
#                       agent's token as --header "Authorization: Bearer ..."),
# each: tools/list, resources/list, prompts/list, tools/call, resources/read,
# prompts/get; over HTTP, another agent's token must be refused. Prints
# what the Inspector answered.
# The Inspector is scripts/mcp-node's pinned one (npm ci there, as
# scripts/mcp-node.sh does), else npx's INSPECTOR. Needs node >= 20; without
# node it says SKIP and exits 0, unless MEMFSD_REQUIRE_NODE=1 (CI): then 1.
#   scripts/mcp-inspector.sh
#   INSPECTOR=@modelcontextprotocol/inspector@2.12.0 scripts/mcp-inspector.sh
#   MEMFSD=/path/to/memfsd scripts/mcp-inspector.sh   (no build)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1 || ! command -v npx >/dev/null 2>&1; then
  if [ "${MEMFSD_REQUIRE_NODE:-0}" = 1 ]; then
    echo "FAIL mcp-inspector: node/npx not found and MEMFSD_REQUIRE_NODE=1 (install Node.js >= 20)" >&2
    exit 1
  fi
  echo "SKIP mcp-inspector: node/npx not found (install Node.js >= 20, which ships npm and npx)"
  exit 0
fi
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
bin=${MEMFSD:-}
if [ -z "$bin" ]; then
  bin="$tmp/memfsd"
  go build -o "$bin" ./cmd/memfsd
fi
local_inspector=scripts/mcp-node/node_modules/.bin/mcp-inspector
if [ -z "${INSPECTOR:-}" ] && [ -x "$local_inspector" ]; then
  inspector=("$PWD/$local_inspector")
  ver=$(node -p 'require("./scripts/mcp-node/node_modules/@modelcontextprotocol/inspector/package.json").version')
else
  pkg=${INSPECTOR:-@modelcontextprotocol/inspector@2.12.0}
  inspector=(npx -y "$pkg")
  ver="$pkg (npx)"
fi
echo "inspector: @modelcontextprotocol/inspector $ver, node $(node --version)"

fail=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fail=1; }
# expect LABEL PATTERN OUTPUT: OUTPUT holds PATTERN (a fixed string).
expect() {
  if grep -qF -- "$2" <<<"$3"; then ok "$1"; else notok "$1"; printf '%s\n' "$3" | head -40; fi
}

# check LABEL TARGET...: the six methods on one set-up.
check() {
  local label=$1
  shift
  local out
  out=$("${inspector[@]}" --cli "$@" --method tools/list 2>&1) || true
  for t in memory memory_history memory_search memory_show memory_sync; do
    expect "$label: tools/list lists $t" "\"name\": \"$t\"" "$out"
  done
  expect "$label: read-only tools carry readOnlyHint" '"readOnlyHint": true' "$out"
  out=$("${inspector[@]}" --cli "$@" --method resources/list 2>&1) || true
  expect "$label: resources/list lists memory:///system/persona.md" '"uri": "memory:///system/persona.md"' "$out"
  out=$("${inspector[@]}" --cli "$@" --method prompts/list 2>&1) || true
  expect "$label: prompts/list lists memory_context" '"name": "memory_context"' "$out"
  out=$("${inspector[@]}" --cli "$@" --method tools/call --tool-name memory \
    --tool-arg command=create --tool-arg path=/memories/inspector.md --tool-arg 'file_text=from the inspector' 2>&1) || true
  expect "$label: tools/call memory create" 'File created successfully at: /memories/inspector.md' "$out"
  out=$("${inspector[@]}" --cli "$@" --method tools/call --tool-name memory_search --tool-arg query=inspector 2>&1) || true
  expect "$label: tools/call memory_search finds inspector.md" '/memories/inspector.md' "$out"
  out=$("${inspector[@]}" --cli "$@" --method resources/read --uri memory:///inspector.md 2>&1) || true
  expect "$label: resources/read memory:///inspector.md" '"text": "from the inspector"' "$out"
  out=$("${inspector[@]}" --cli "$@" --method prompts/get --prompt-name memory_context 2>&1) || true
  expect "$label: prompts/get memory_context" '<memory_blocks>' "$out"
}

# committed LABEL DIR: the create is a commit in DIR's log (read whole:
# no grep -q on a pipe, whose early exit would fail the pipeline).
committed() {
  local log
  log=$(git -C "$2" log --format=%s)
  if grep -qx 'memory: create inspector.md' <<<"$log"; then ok "$1: the create is a commit"; else notok "$1: no commit of the create"; printf '%s\n' "$log" | head; fi
}

# 1. stdio, no daemon.
check "stdio in-process" "$bin" mcp --agent me --home "$tmp/solo"
committed "stdio in-process" "$tmp/solo/agents/me/memory"

# 2 and 3: a daemon for agents i1 and i2, MCP also on loopback TCP.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
home="$tmp/daemon"
"$bin" run --home "$home" --agent i1 --agent i2 --mcp-listen "127.0.0.1:$port" --log-level warn &
daemon_pid=$!
for i in $(seq 1 300); do
  [ -S "$home/agents/i2/memfsd.sock" ] && [ -f "$home/agents/i2/mcp-token" ] && [ -d "$home/agents/i2/memory/system" ] && break
  sleep 0.1
done
check "stdio via daemon" "$bin" mcp --agent i1 --home "$home"
committed "stdio via daemon" "$home/agents/i1/memory"

tok2=$(cat "$home/agents/i2/mcp-token")
tok1=$(cat "$home/agents/i1/mcp-token")
url="http://127.0.0.1:$port/agents/i2/mcp"
check "http --mcp-listen" "$url" --transport http --header "Authorization: Bearer $tok2"
committed "http --mcp-listen" "$home/agents/i2/memory"
# i1's token on i2's endpoint: refused (the Inspector then asks for OAuth,
# which it cannot do without a terminal).
out=$("${inspector[@]}" --cli "$url" --transport http --header "Authorization: Bearer $tok1" --method tools/list 2>&1) || true
if grep -q '"tools"' <<<"$out"; then notok "http --mcp-listen: i1's token listed i2's tools"; else ok "http --mcp-listen: i1's token on /agents/i2/mcp refused: $(tr -s ' \n' ' ' <<<"$out" | cut -c1-160)"; fi

[ "$fail" = 0 ] || exit 1
echo "PASS"
