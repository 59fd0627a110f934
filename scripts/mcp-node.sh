#!/usr/bin/env bash
# memfsd mcp driven by clients from another ecosystem: the official
# TypeScript SDK (@modelcontextprotocol/sdk, from npm) over stdio and over
# streamable HTTP, then the MCP Inspector's CLI (scripts/mcp-inspector.sh).
# Needs node >= 18, npm and git; without node or npm it says so and exits 0
# (skipped). MEMFSD_INSPECTOR=0 skips the inspector.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP mcp-node: $tool not found (install Node.js >= 18, which ships npm and npx)"
    exit 0
  fi
done
bin=$(mktemp -d)/memfsd
go build -o "$bin" ./cmd/memfsd
(
  cd scripts/mcp-node
  [ -d node_modules/@modelcontextprotocol/sdk ] || npm install --no-audit --no-fund --silent
  MEMFSD="$bin" node test.mjs
)
rm -rf "$(dirname "$bin")"
if [ "${MEMFSD_INSPECTOR:-1}" != 0 ]; then
  scripts/mcp-inspector.sh
fi
