#!/usr/bin/env bash
# Side-by-side benchmarks of memfsd's git engine against the git CLI, on
# fixture repos built once with git fast-import under testdata/repos.
# Prints a markdown table of medians and ratios (memfsd ÷ CLI).
#   scripts/bench.sh            # 200 writes, 30 pushes per row
#   N=50 P=10 scripts/bench.sh  # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
P=${P:-30}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

C=${C:-5}
go test -run '^$' -bench 'BenchmarkDurableWriteFloor' -benchtime "${N}x" -timeout 60m ./gitmem/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkCommitWrite' -benchtime "${N}x" -timeout 60m ./gitmem/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkPush' -benchtime "${P}x" -timeout 60m ./gitmem/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkClone' -benchtime "${C}x" -timeout 60m ./gitmem/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkAPIWrite|BenchmarkTurn' -benchtime "${N}x" -timeout 60m ./cmd/memfsd/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkMCPWrite' -benchtime "${N}x" -timeout 60m ./cmd/memfsd/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkLongLife' -benchtime 1x -timeout 60m ./cmd/memfsd/ | tee -a "$out" >&2
go test -run '^$' -bench 'BenchmarkSearchGoDocs|BenchmarkSearchAgents' -benchtime 1x -timeout 30m ./search/ | tee -a "$out" >&2
agents=$(scripts/bench-agents.sh)

echo
echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(git --version), $(go env GOVERSION)."
echo
echo "| operation | repo | memfsd (median) | git CLI (median) | memfsd ÷ CLI |"
echo "|---|---|---|---|---|"
awk '
/^Benchmark(CommitWrite|Push|Clone|APIWrite|Turn)[\/-]/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  for (i = 2; i <= NF; i++) { if ($i == "memfsd-ms") m=$(i-1); if ($i == "cli-ms") c=$(i-1); if ($i == "ratio") r=$(i-1) }
  split(name, p, "/")
  if (p[1] == "BenchmarkCommitWrite") {
    op = "commit one write"; gsub("files=", "", p[2]); gsub("commits=", "", p[3]); gsub("fsync=", "", p[4])
    repo = p[2] " files / " p[3] " commits, fsync " p[4]
    cli = "git add + git commit"
  } else if (p[1] == "BenchmarkPush") {
    op = "push one commit"; gsub("commits=", "", p[2]); repo = "100 files / " p[2] " commits"; cli = "git push"
  } else if (p[1] == "BenchmarkClone") {
    op = "clone"; repo = "1000 files / 10000 commits"; cli = "git clone"
  } else {
    gsub("files=", "", p[2]); gsub("commits=", "", p[3]); repo = p[2] " files / " p[3] " commits"
    if (p[1] == "BenchmarkAPIWrite") { op = "memory write through the API"; cli = "write + git add -A + git status + git commit" }
    else { op = "turn: write + push"; cli = "the same + git push" }
  }
  printf "| %s | %s | %.2f ms | %.2f ms (%s) | %.3f (1/%.1f) |\n", op, repo, m, c, cli, r, 1/r
}' "$out"
echo
echo "| one memory write | MCP (median) | socket API (median) | MCP ÷ API (target ≤ 1.5) |"
echo "|---|---|---|---|"
awk '/^BenchmarkMCPWrite\// {
  name=$1; sub(/-[0-9]+$/, "", name); split(name, p, "/"); via=p[2]; gsub("via=", "", via)
  for (i = 2; i <= NF; i++) { if ($i == "memfsd-ms") m=$(i-1); if ($i == "cli-ms") c=$(i-1); if ($i == "ratio") r=$(i-1) }
  label = "memfsd mcp (stdio), " via; if (via == "http") label = "/mcp on the agent socket (streamable HTTP)"
  printf "| %s | %.2f ms | %.2f ms | %.2f |\n", label, m, c, r
}' "$out"
echo
echo "| long life (W=${W:-10000} writes through the API, no turns) | first 100 (median) | last 100 | last ÷ first | .git ÷ after git gc --aggressive | objects ÷ |"
echo "|---|---|---|---|---|---|"
awk '/^BenchmarkLongLife/ {
  for (i = 2; i <= NF; i++) { if ($i == "first100-ms") f=$(i-1); if ($i == "last100-ms") l=$(i-1); if ($i == "write-ratio") w=$(i-1); if ($i == "git-size-ratio") g=$(i-1); if ($i == "objects-size-ratio") o=$(i-1) }
  printf "| one agent, 200 files | %.2f ms | %.2f ms | %.2f | %.2f | %.2f |\n", f, l, w, g, o
}' "$out"
echo
echo "| scale | start-up | memory | idle |"
echo "|---|---|---|---|"
echo "$agents"
echo
echo "| memory_search on Go doc comments | recall@1 | recall@5 | names only @1 / @5 | p50 | p99 | heap | build (first search) | one write re-indexed |"
echo "|---|---|---|---|---|---|---|---|---|"
awk '/^BenchmarkSearchGoDocs\// {
  name=$1; sub(/-[0-9]+$/, "", name); split(name, p, "/"); gsub("files=", "", p[2])
  for (i = 2; i <= NF; i++) { v[$i]=$(i-1) }
  printf "| %s files | %.1f%% | %.1f%% | %.1f%% / %.1f%% | %.2f ms | %.2f ms | %.1f MiB | %.0f ms | %.2f ms |\n", p[2], v["recall@1-%"], v["recall@5-%"], v["names@1-%"], v["names@5-%"], v["p50-ms"], v["p99-ms"], v["heap-MiB"], v["build-ms"], v["write-ms"]
}
/^BenchmarkSearchAgents/ {
  for (i = 2; i <= NF; i++) { v[$i]=$(i-1) }
  printf "| 1,000 agents, default blocks | | | | | | %.1f KiB per agent | %.0f ms for all | |\n", v["KiB/agent"], v["ms/1000-agents"]
}' "$out"
