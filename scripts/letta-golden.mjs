// letta-golden.mjs renders a memory folder with letta-code's own renderer
// functions, taken verbatim from its published bundle (never ported by hand),
// and prints exactly the text letta-code puts in the prompt.
//
//   node scripts/letta-golden.mjs BUNDLE FORMAT DIR [--max-chars N]
//
// BUNDLE  letta-code's letta.js (npm pack @letta-ai/letta-code@0.32.18)
// FORMAT  letta-code   buildParentMemorySnapshot(DIR, {memoryFormat}) with the
//                      format detectMemoryFormat(DIR, false) finds (memfs v2 when
//                      DIR has a root MEMORY.md): src/cli/helpers/reflection-transcript.ts,
//                      src/cli/helpers/reflection-memory-v2.ts
//         letta-local  renderMemfsProjection(DIR).content, the local backend's
//                      memory projection (<self>, <memory>, <projection>,
//                      <external_projection>) from DIR's committed HEAD:
//                      src/backend/local/system-prompt-compilation.ts
//         collation    reads names (one per line) on stdin, prints them sorted
//                      with String.prototype.localeCompare, as letta-code sorts
// --max-chars N  letta-code's options.maxChars (default 40,000)
// --max-chars-sweep SPEC  letta-code for each maxChars of SPEC (a comma list
//                of N and FROM:TO:STEP ranges),
//                each rendering from its "</memory_filesystem>" line on (the
//                tree does not change), after a line "=== max-chars N ==="
//
// LETTA_MEMFS_TREE_MAX_LINES / _CHARS / _CHILDREN_PER_DIR apply as in
// letta-code. Run it under an English locale (LC_ALL=en_US.UTF-8): letta-code
// formats counts with toLocaleString(). scripts/letta-golden.sh runs this for
// every tree under testdata/letta/ and writes the golden files.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [bundlePath, format, dir, ...rest] = process.argv.slice(2);
if (!bundlePath || !format || (format !== "collation" && !dir)) {
  console.error("usage: node scripts/letta-golden.mjs BUNDLE letta-code|letta-local|collation [DIR] [--max-chars N]");
  process.exit(2);
}
let maxChars;
let sweep;
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === "--max-chars") maxChars = Number(rest[++i]);
  else if (rest[i] === "--max-chars-sweep") {
    sweep = rest[++i].split(",").flatMap((item) => {
      const [from, to = from, step = 1] = item.split(":").map(Number);
      const caps = [];
      for (let n = from; n <= to; n += step) caps.push(n);
      return caps;
    });
  }
  else {
    console.error(`unknown argument ${rest[i]}`);
    process.exit(2);
  }
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

// fn returns one top-level function of a section (bundled top-level
// functions start at column 0 and end at the first "}" line).
function fn(text, name) {
  const m = new RegExp(`^(async )?function ${name}\\(`, "m").exec(text);
  if (!m) throw new Error(`bundle has no function ${name}`);
  const end = text.indexOf("\n}\n", m.index);
  return text.slice(m.index, end + 3);
}

// imports keeps a section's node: imports, the only imports the renderer
// code uses; everything else in a section is code.
const importRe = /^import\s*\{([^}]*)\}\s*from\s*"(node:[^"]+)";?$/gm;
function importsOf(text) {
  return [...text.matchAll(importRe)].map((m) => m[0]);
}
function withoutImports(text) {
  return text.replace(importRe, "");
}

// constant reads a constant's initialiser from the bundle.
function constant(name) {
  // A string, a number, or strings joined with "+" (as "$" + "{MEMORY_DIR}").
  const m = new RegExp(`\\b${name} = ("[^"]*"(?: \\+ "[^"]*")*|\\d+)[,;\\n]`).exec(bundle);
  if (!m) throw new Error(`bundle has no constant ${name}`);
  return `var ${name} = ${m[1]};`;
}

const whole = [
  "src/utils/frontmatter.ts",
  "src/utils/directory-limits.ts",
  "src/agent/memory-format.ts",
  "src/agent/memory-scanner.ts",
  "src/cli/helpers/reflection-memory-v2.ts",
].map(section);
const transcript = section("src/cli/helpers/reflection-transcript.ts");
const local = section("src/backend/local/system-prompt-compilation.ts");
const picked = [
  ...[
    "isSystemMemoryFile",
    "collectParentMemoryFiles",
    "buildParentMemoryTree",
    "joinedLength",
    "canAppendWithinBudget",
    "truncateMemoryContentToFit",
    "buildMemoryPreviewNotice",
    "buildParentMemorySnapshot",
  ].map((n) => fn(transcript, n)),
  ...[
    "normalizePath",
    "labelFromPath",
    "gitOutput",
    "getCommittedMemfsRevision",
    "collectCommittedMemoryFiles",
    "renderExternalProjection",
    "renderSystemTree",
    "renderMemfsProjection",
  ].map((n) => fn(local, n)),
];
// The bundler's own helpers (__export, __esm, ...), from its preamble.
const helpers = bundle.slice(bundle.indexOf("var __create"), bundle.indexOf("var __promiseAll"));
const module = [
  ...new Set([...whole, transcript, local].flatMap(importsOf)),
  helpers,
  "var init_context_budget = () => {};", // only sets the constant below
  constant("MEMORY_SYSTEM_DIR"),
  constant("REFLECTION_PARENT_MEMORY_SNAPSHOT_CHAR_LIMIT"),
  constant("MEMORY_DIR_PLACEHOLDER"),
  ...whole.map(withoutImports),
  ...picked,
  "init_directory_limits(); init_memory_format(); init_memory_scanner();",
  "export { buildParentMemorySnapshot, detectMemoryFormat, renderMemfsProjection };",
].join("\n");

const tmp = mkdtempSync(join(tmpdir(), "letta-golden-"));
let out;
try {
  const file = join(tmp, "letta-render.mjs");
  writeFileSync(file, module);
  const m = await import(pathToFileURL(file).href);
  if (format === "letta-code") {
    const memoryFormat = m.detectMemoryFormat(dir, false);
    if (sweep) {
      const parts = [];
      for (const n of sweep) {
        const text = await m.buildParentMemorySnapshot(dir, { memoryFormat, maxChars: n });
        parts.push(`=== max-chars ${n} ===\n${text.slice(text.indexOf("</memory_filesystem>"))}\n`);
      }
      out = parts.join("");
    } else {
      out = await m.buildParentMemorySnapshot(dir, { memoryFormat, maxChars });
    }
  } else if (format === "letta-local") {
    out = m.renderMemfsProjection(dir).content;
  } else if (format === "collation") {
    const names = readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
    out = names.sort((a, b) => a.localeCompare(b)).join("\n");
  } else {
    throw new Error(`unknown format ${format}`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(out);
