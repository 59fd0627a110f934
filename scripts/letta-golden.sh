#!/usr/bin/env bash
# letta-golden.sh regenerates the golden files under testdata/letta/ with
# letta-code's own renderers (scripts/letta-golden.mjs) and memory tools
# (scripts/letta-tool-golden.mjs), so the Go tests compare memfsd's
# renderers and its letta-code dialect with letta-code's byte for byte
# without npm.
#
#   scripts/letta-golden.sh            # from the repository root; needs node, npm, git
#
# It fetches letta-code's package with `npm pack` (a plain `npm install` fails
# on a missing optional dependency), commits each tree into a throwaway git
# repository (the local backend renders the committed HEAD; letta-code's
# reflection renders a worktree of HEAD), and renders it under an English
# locale with a git configuration of its own (core.quotePath at its default).
set -euo pipefail

version=0.32.18
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "@letta-ai/letta-code@$version" >/dev/null && tar xzf ./*.tgz)
bundle=$work/package/letta.js

export HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
# Node's ICU takes its locale from LC_ALL (the C library need not have it).
render() { env LC_ALL=en_US.UTF-8 node "$root/scripts/letta-golden.mjs" "$bundle" "$@"; }

for tree in v1 v2; do
	src=$root/testdata/letta/$tree
	dir=$work/$tree
	cp -r "$src/tree" "$dir"
	git -C "$dir" init -q -b main
	git -C "$dir" add -A
	git -C "$dir" -c user.name=fixture -c user.email=fixture@memfsd.local commit -q -m fixture
	render letta-code "$dir" >"$src/letta-code.golden"
	render letta-local "$dir" >"$src/letta-local.golden"
done
# The 40,000-character cap, and the tree's budgets, at sizes these trees
# reach: the cap swept over the pinned files (cuts inside lines), plus caps
# found by trying every one: a file left out with a notice (3840, 3843,
# 6698), a cut inside a surrogate pair (3932; v2: 1982), files left out and
# counted (6614, 6650). Then the tree's limits from the environment.
render letta-code "$work/v1" --max-chars-sweep 3800:6800:83,3840,3843,3932,6614,6650,6698 >"$root/testdata/letta/v1/letta-code.max-chars-sweep.golden"
render letta-code "$work/v2" --max-chars-sweep 1000:4000:83,1982 >"$root/testdata/letta/v2/letta-code.max-chars-sweep.golden"
LETTA_MEMFS_TREE_MAX_LINES=40 render letta-code "$work/v1" >"$root/testdata/letta/v1/letta-code.tree-max-lines-40.golden"
LETTA_MEMFS_TREE_MAX_CHARS=1000 LETTA_MEMFS_TREE_MAX_CHILDREN_PER_DIR=5 \
	render letta-code "$work/v1" >"$root/testdata/letta/v1/letta-code.tree-max-chars-1000-children-5.golden"
# The order letta-code's localeCompare gives names.
render collation <"$root/testdata/letta/collation.txt" >"$root/testdata/letta/collation.golden"
# What letta-code's memory tools write, v1 and v2 (scripts/letta-tool-golden.mjs).
node "$root/scripts/letta-tool-golden.mjs" "$bundle" "$root/testdata/letta/tool/cases.json" >"$root/testdata/letta/tool/expected.json"
# What letta-code's own pre-commit hook says of trees (its tree constraints
# and front matter, scripts/letta-constraints-golden.mjs).
node "$root/scripts/letta-constraints-golden.mjs" "$bundle" "$root/testdata/letta/constraints/cases.json" >"$root/testdata/letta/constraints/expected.json"
# letta-code's pre-commit hook itself, as it installs it in its memory clone
# (TestLettaInterop_HookOnPeerClone installs this copy in a peer clone).
hook=$work/hook
git init -q "$hook"
node "$root/scripts/letta-constraints-golden.mjs" "$bundle" --install "$hook" root-marker
cp "$hook/.git/hooks/pre-commit" "$hook/.git/hooks/letta-memory-constraints.cjs" "$root/testdata/letta/hook/"
wc -c "$root"/testdata/letta/*/*.golden "$root"/testdata/letta/collation.golden "$root"/testdata/letta/tool/expected.json
