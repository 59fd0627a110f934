// letta-tool-golden.mjs runs letta-code's own memory tools on memory
// folders and prints what each call wrote (or the error it threw), so
// memfsd's letta-code dialect can be compared with it byte for byte.
//
//   node scripts/letta-tool-golden.mjs BUNDLE CASES > EXPECTED
//
// BUNDLE    letta-code's letta.js (npm pack @letta-ai/letta-code@0.32.18)
// CASES     testdata/letta/tool/cases.json: named trees, and calls on them
// EXPECTED  testdata/letta/tool/expected.json: for each case, the error, or
//           every path the call changed with its bytes afterwards (null:
//           removed)
//
// The functions are taken verbatim from the bundle's sections (never ported
// by hand): applyMemoryCommand (src/tools/impl/memory.ts) and
// applyMemoryPatch (src/tools/impl/memory-apply-patch.ts), the steps
// between memory2's / memory_apply_patch's argument checks and their git
// commit, with the layout detectMemoryFormat(DIR, false) finds (memfs v2
// when DIR has a root MEMORY.md), as letta-code runs them on a git-backed
// memory. The argument checks before (validateRequiredParams, reason) are
// the same in both layouts and covered by memtool's own tests.
import { readFileSync, writeFileSync, mkdtempSync, rmSync, mkdirSync, readdirSync, lstatSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { pathToFileURL } from "node:url";

const [bundlePath, casesPath] = process.argv.slice(2);
if (!bundlePath || !casesPath) {
  console.error("usage: node scripts/letta-tool-golden.mjs BUNDLE CASES");
  process.exit(2);
}
const bundle = readFileSync(bundlePath, "utf8");

// section returns the text of one source file of the bundle: from its
// "// src/<name>" header to the next source header.
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
  "src/utils/text-files.ts",
  "src/agent/memory-format.ts",
  "src/agent/memory-markdown.ts",
  "src/tools/impl/memory.ts",
  "src/tools/impl/memory-apply-patch.ts",
].map(section);
const code = sections.map(withoutImports).join("\n");
// The sections' init functions call other sections' (context, git, ...),
// which the two apply functions never use: those are no-ops here.
const defined = new Set([...code.matchAll(/\bvar (init_\w+) =/g)].map((m) => m[1]));
const stubs = [...new Set([...code.matchAll(/\b(init_\w+)\(\)/g)].map((m) => m[1]))]
  .filter((n) => !defined.has(n))
  .map((n) => `function ${n}() {}`);
const module = [
  ...new Set(sections.flatMap(importsOf)),
  "var __esm = (fn) => { let done = false; return () => { if (!done) { done = true; fn(); } }; };",
  ...stubs,
  code,
  "init_text_files(); init_memory_format(); init_memory_markdown(); init_memory6(); init_memory_apply_patch();",
  "export { applyMemoryCommand, applyMemoryPatch, detectMemoryFormat };",
].join("\n");

// files lists every file below dir (not .git) with its text.
function files(dir, prefix = "", out = {}) {
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix ? `${prefix}/${name}` : name;
    if (rel === ".git") continue;
    if (lstatSync(join(dir, rel)).isDirectory()) files(dir, rel, out);
    else out[rel] = readFileSync(join(dir, rel), "utf8");
  }
  return out;
}

const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "letta-tool-golden-"));
const results = [];
try {
  const file = join(tmp, "letta-tool.mjs");
  writeFileSync(file, module);
  const m = await import(pathToFileURL(file).href);
  for (const [i, c] of cases.cases.entries()) {
    const dir = join(tmp, `case-${i}`);
    mkdirSync(join(dir, ".git"), { recursive: true });
    const tree = { ...cases.trees[c.tree], ...(c.files ?? {}) };
    for (const [rel, text] of Object.entries(tree)) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    const before = files(dir);
    const format = m.detectMemoryFormat(dir, false);
    const result = { name: c.name, format };
    try {
      if ((c.tool ?? "memory") === "memory") await m.applyMemoryCommand(dir, c.args, format);
      else await m.applyMemoryPatch(dir, c.args.input, format);
      const after = files(dir);
      const changed = {};
      for (const rel of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
        if (before[rel] !== after[rel]) changed[rel] = after[rel] ?? null;
      }
      result.changed = changed;
    } catch (err) {
      // The folder's name, which differs from run to run, as {DIR}.
      result.error = (err instanceof Error ? err.message : String(err)).split(dir).join("{DIR}");
    }
    results.push(result);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(results, null, 1) + "\n");
