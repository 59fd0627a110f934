// letta-constraints-golden.mjs installs letta-code's own pre-commit hook
// (its front-matter rules and its MemFS tree constraints) in throwaway git
// repositories, commits each case's change through it, and prints what the
// hook said, so memfsd's port (blocks.TreeConstraints) can be compared with
// it byte for byte.
//
//   node scripts/letta-constraints-golden.mjs BUNDLE CASES > EXPECTED
//
// BUNDLE    letta-code's letta.js (npm pack @letta-ai/letta-code@0.32.18)
// CASES     testdata/letta/constraints/cases.json: for each case the layout
//           policy letta-code installs ("root-marker": memfs v2 allowed,
//           "legacy-only"), the files committed at HEAD (past the hook), and
//           the change then committed through it (null: delete)
// EXPECTED  testdata/letta/constraints/expected.json: the hook's exit code
//           and its output (stdout then stderr)
//
// The hook is installed by installPreCommitHookWithPolicy taken verbatim
// from the bundle (src/agent/memory-git-hooks.ts with the sections it
// embeds: src/memory-frontmatter.ts, src/memory-constraints.ts,
// src/agent/memory-constraints.ts), never ported by hand.
//
// With --install DIR POLICY instead of CASES it only installs the hook in
// the git repository DIR, as letta-code does in its memory clone, and
// prints nothing: scripts/letta-golden.sh keeps a copy in
// testdata/letta/hook/ (the Go interop test installs it in a peer clone of
// memfsd's remote), scripts/interop-letta.sh installs it in its clone.
//
// A file's content in CASES is a string, or {"chars": N, "fm": F} for a
// file of exactly N characters: F "v1" (description), "v2" (name and
// description), or "none", then "x" up to N.
import { readFileSync, writeFileSync, mkdtempSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, basename } from "node:path";
import { pathToFileURL } from "node:url";
import { spawnSync } from "node:child_process";

const [bundlePath, casesPath, installDir, installPolicy] = process.argv.slice(2);
if (!bundlePath || !casesPath || (casesPath === "--install" && (!installDir || !installPolicy))) {
  console.error("usage: node scripts/letta-constraints-golden.mjs BUNDLE CASES\n       node scripts/letta-constraints-golden.mjs BUNDLE --install DIR POLICY");
  process.exit(2);
}
const bundle = readFileSync(bundlePath, "utf8");

function section(name) {
  const start = bundle.indexOf(`\n// ${name}\n`);
  if (start < 0) throw new Error(`bundle has no section ${name}`);
  const next = bundle.slice(start + 1).search(/\n\/\/ (src|node_modules)\/[^\n]*\n/);
  return bundle.slice(start + 1, next < 0 ? undefined : start + 1 + next + 1);
}
const importRe = /^import\s*\{([^}]*)\}\s*from\s*"(node:[^"]+)";?$/gm;
const importsOf = (text) => [...text.matchAll(importRe)].map((m) => m[0]);
const withoutImports = (text) => text.replace(importRe, "");
const sections = [
  "src/memory-frontmatter.ts",
  "src/memory-constraints.ts",
  "src/agent/memory-constraints.ts",
  "src/agent/memory-git-hooks.ts",
].map(section);
const code = sections.map(withoutImports).join("\n");
const defined = new Set([...code.matchAll(/\bvar (init_\w+) =/g)].map((m) => m[1]));
const stubs = [...new Set([...code.matchAll(/\b(init_\w+)\(\)/g)].map((m) => m[1]))]
  .filter((n) => !defined.has(n))
  .map((n) => `function ${n}() {}`);
const module = [
  ...new Set(sections.flatMap(importsOf)),
  "var __esm = (fn) => { let done = false; return () => { if (!done) { done = true; fn(); } }; };",
  "function debugLog() {}",
  ...stubs,
  code,
  "init_memory_constraints(); init_memory_constraints2(); init_memory_git_hooks();",
  "export { installPreCommitHookWithPolicy };",
].join("\n");

export function content(path, spec) {
  if (typeof spec === "string") return spec;
  let head = "";
  if (spec.fm === "v1") head = "---\ndescription: d\n---\n";
  if (spec.fm === "v2") head = `---\nname: ${basename(path, ".md")}\ndescription: d\n---\n`;
  return head + "x".repeat(spec.chars - head.length);
}

const git = (dir, ...args) => spawnSync("git", args, { cwd: dir, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } });
function write(dir, files) {
  for (const [rel, spec] of Object.entries(files ?? {})) {
    if (spec === null) rmSync(join(dir, rel), { force: true });
    else {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), content(rel, spec));
    }
  }
}

if (casesPath === "--install") {
  const tmp = mkdtempSync(join(tmpdir(), "letta-hook-"));
  try {
    const file = join(tmp, "letta-hooks.mjs");
    writeFileSync(file, module);
    const m = await import(pathToFileURL(file).href);
    m.installPreCommitHookWithPolicy(installDir, installPolicy);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(0);
}

const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "letta-constraints-golden-"));
const results = [];
try {
  const file = join(tmp, "letta-hooks.mjs");
  writeFileSync(file, module);
  const m = await import(pathToFileURL(file).href);
  for (const [i, c] of cases.cases.entries()) {
    const dir = join(tmp, `case-${i}`);
    mkdirSync(dir);
    git(dir, "init", "-q", "-b", "main");
    git(dir, "config", "user.name", "golden");
    git(dir, "config", "user.email", "golden@memfsd.local");
    m.installPreCommitHookWithPolicy(dir, c.policy);
    write(dir, c.head);
    git(dir, "add", "-A");
    const head = git(dir, "commit", "-q", "--no-verify", "--allow-empty", "-m", "head");
    if (head.status !== 0) throw new Error(`${c.name}: head commit: ${head.stderr}`);
    write(dir, c.change);
    git(dir, "add", "-A");
    const r = git(dir, "commit", "-q", "--allow-empty", "-m", "change");
    results.push({ name: c.name, exit: r.status, output: (r.stdout + r.stderr).split(dir).join("{DIR}") });
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(results, null, 1) + "\n");
