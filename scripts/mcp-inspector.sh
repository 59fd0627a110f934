#!/usr/bin/env bash
# The MCP Inspector's CLI (npx @modelcontextprotocol/inspector --cli, from
# npm) against `memfsd mcp`: it lists the tools, resources and prompts of
# an agent run in-process on the embedded remote (a throwaway home), and
# calls memory_search. Prints what the inspector answered.
# Needs node >= 18 with npx; without npx it says so and exits 0 (skipped).
#   scripts/mcp-inspector.sh
#   INSPECTOR=@modelcontextprotocol/inspector@0.17.2 scripts/mcp-inspector.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npx >/dev/null 2>&1; then
  echo "SKIP mcp-inspector: npx not found (install Node.js >= 18, which ships npm and npx)"
  exit 0
fi
pkg=${INSPECTOR:-@modelcontextprotocol/inspector}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/memfsd" ./cmd/memfsd
home="$tmp/home"
inspect() { npx -y "$pkg" --cli "$tmp/memfsd" mcp --agent me --home "$home" "$@"; }
fail=0
tools=$(inspect --method tools/list)
# The version npx ran: the newest package.json of it in npx's cache.
ver=$(ls -t "$(npm config get cache)"/_npx/*/node_modules/@modelcontextprotocol/inspector/package.json 2>/dev/null | head -1 | xargs -r node -p 'require(process.argv[1]).version' 2>/dev/null || true)
echo "inspector: $pkg ${ver:-(version unknown)}, node $(node --version)"
for t in memory memory_history memory_search memory_show memory_sync; do
  if grep -q "\"name\": \"$t\"" <<<"$tools"; then echo "ok - tools/list lists $t"; else echo "not ok - tools/list lacks $t"; fail=1; fi
done
grep -q '"readOnlyHint": true' <<<"$tools" && echo "ok - read-only tools carry readOnlyHint" || { echo "not ok - no readOnlyHint"; fail=1; }
resources=$(inspect --method resources/list)
grep -q '"uri": "memory:///system/persona.md"' <<<"$resources" && echo "ok - resources/list lists memory:///system/persona.md" || { echo "not ok - resources/list lacks persona.md"; fail=1; }
prompts=$(inspect --method prompts/list)
grep -q '"name": "memory_context"' <<<"$prompts" && echo "ok - prompts/list lists memory_context" || { echo "not ok - prompts/list lacks memory_context"; fail=1; }
found=$(inspect --method tools/call --tool-name memory_search --tool-arg query=persona)
grep -q 'system/persona.md' <<<"$found" && echo "ok - tools/call memory_search finds system/persona.md" || { echo "not ok - memory_search: $found"; fail=1; }
if [ "$fail" != 0 ]; then
  printf '%s\n' "--- tools/list" "$tools" "--- resources/list" "$resources" "--- prompts/list" "$prompts"
  exit 1
fi
echo "tools: $(grep -o '"name": "memory[a-z_]*"' <<<"$tools" | sed 's/"name": //' | tr -d '"' | tr '\n' ' ')"
