#!/usr/bin/env bash
# Check that every relative link in README.md and docs/*.md resolves: the
# file exists and a #anchor names a heading in it (internal/checklinks).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./internal/checklinks "$@"
