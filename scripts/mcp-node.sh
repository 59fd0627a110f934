#!/usr/bin/env bash
# memfsd's MCP driven by clients from another ecosystem, in the three
# set-ups docs/mcp.md recommends (stdio without a daemon, stdio through a
# daemon, streamable HTTP on --mcp-listen with the agent's token): the
# official TypeScript SDK (@modelcontextprotocol/sdk, scripts/mcp-node/
# test.mjs: list, call, read, subscribe, prompt), then the MCP Inspector's
# CLI (scripts/mcp-inspector.sh). Both are pinned in scripts/mcp-node/
# package-lock.json and installed there with npm ci (npm's cache: set
# npm_config_cache to keep it, as .ci/run does).
# Needs node >= 20, npm and git. Without node or npm it says SKIP and exits
# 0, unless MEMFSD_REQUIRE_NODE=1 (CI: .ci/run): then it fails.
# MEMFSD_INSPECTOR=0 skips the inspector.
set -euo pipefail
cd "$(dirname "$0")/.."
need() {
  if [ "${MEMFSD_REQUIRE_NODE:-0}" = 1 ]; then
    echo "FAIL mcp-node: $1 and MEMFSD_REQUIRE_NODE=1 (install Node.js >= 20, which ships npm and npx)" >&2
    exit 1
  fi
  echo "SKIP mcp-node: $1 (install Node.js >= 20, which ships npm and npx)"
  exit 0
}
for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || need "$tool not found"
done
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || need "node $(node --version) is older than 20"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MEMFSD="$tmp/memfsd"
go build -o "$MEMFSD" ./cmd/memfsd
(
  cd scripts/mcp-node
  sdk=node_modules/@modelcontextprotocol/sdk/package.json
  if [ ! -f "$sdk" ] || [ ! -f node_modules/@modelcontextprotocol/inspector/package.json ]; then
    npm ci --no-audit --no-fund --prefer-offline --loglevel=error
  fi
  echo "sdk: @modelcontextprotocol/sdk $(node -p "require('./$sdk').version"), node $(node --version)"
  node test.mjs
)
if [ "${MEMFSD_INSPECTOR:-1}" != 0 ]; then
  scripts/mcp-inspector.sh
fi
