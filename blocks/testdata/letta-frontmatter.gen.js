// Produces letta-frontmatter.json (beside it) from letta-code 0.32.18's own
// validateMemoryFileFrontmatter (src/memory-frontmatter.ts). Made with:
//   npm pack @letta-ai/letta-code@0.32.18 && tar xzf *.tgz
//   s=$(grep -n "^function validateMemoryFileFrontmatter" package/letta.js | cut -d: -f1)
//   e=$(grep -n "^// src/memory-constraints.ts" package/letta.js | cut -d: -f1)
//   sed -n "${s},$((e-1))p" package/letta.js > vfm.js
//   node letta-frontmatter.gen.js letta-frontmatter.json   (vfm.js beside this script)
const fs = require("fs");
eval(fs.readFileSync(__dirname + "/vfm.js", "utf8") + "; globalThis.v = validateMemoryFileFrontmatter;");
const P = "system/notes.md";
const cases = [
  [P, "plain text\n", null, "legacy"],
  [P, "", null, "legacy"],
  [P, "---\ndescription: x\n", null, "legacy"],
  [P, "---\ndescription: Notes\n---\nbody\n", null, "legacy"],
  [P, "---\ndescription:\n---\nbody\n", null, "legacy"],
  [P, "---\ndescription:   \n---\n", null, "legacy"],
  [P, "---\ntags: a\ndescription: d\n---\n", null, "legacy"],
  [P, "---\nlimit: 10\n---\n", null, "legacy"],
  [P, "---\ndescription: d\n  nested: x\n\tmore\n---\n", null, "legacy"],
  [P, "---\nde scription: d\n---\n", null, "legacy"],
  [P, "---\ndescription: d\nno colon line\n---\n", null, "legacy"],
  [P, "---\r\ndescription: d\r\n---\r\n", null, "legacy"],
  [P, "---\ndescription: d\n---\n", "---\ndescription: d\nread_only: true\n---\n", "legacy"],
  [P, "---\ndescription: d\nread_only: false\n---\n", null, "legacy"],
  [P, "---\ndescription: d\nread_only: false\n---\n", "---\ndescription: d\nread_only: false\n---\n", "legacy"],
  [P, "---\ndescription: d\nread_only: no\n---\n", "---\ndescription: d\nread_only: false\n---\n", "legacy"],
  [P, "---\ndescription: d\n---\n", "---\ndescription: d\nread_only: false\n---\n", "legacy"],
  [P, "---\ndescription: d\ndescription: e\n---\n", null, "legacy"],
  [P, "---\ndescription:\t\n---\n", null, "legacy"],
  [P, "---\ndescription: d\r\n---\n", null, "legacy"],
  ["notes.md", "---\nname:\t\ndescription: d\n---\n", null, "memfs-v2"],
  ["reference/a/b.md", "---\ndescription: \"\"\n---\n", null, "legacy"],
  ["MEMORY.md", "# Memory\n", null, "memfs-v2"],
  ["MEMORY.md", "---\nname: x\n---\n", null, "memfs-v2"],
  ["project/MEMORY.md", "---\n", null, "memfs-v2"],
  ["notes.md", "---\nname: n\ndescription: d\n---\nbody\n", null, "memfs-v2"],
  ["notes.md", "---\ndescription: d\n---\n", null, "memfs-v2"],
  ["notes.md", "---\nname: ''\ndescription: \"\"\n---\n", null, "memfs-v2"],
  ["notes.md", "---\nname: n\nname: m\ndescription: d\n---\n", null, "memfs-v2"],
  ["notes.md", "---\nname: n\ndescription: d\nread_only: true\nlimit: 3\n---\n", null, "memfs-v2"],
  ["notes.md", "---\n  name : n\ndescription: d\n---\n", null, "memfs-v2"],
  ["notes.md", "no front matter\n", null, "memfs-v2"],
  ["notes.md", "---\nname: n\n", null, "memfs-v2"],
];
const out = cases.map(([path, content, previousContent, format]) => ({
  path, content, previous: previousContent, v2: format === "memfs-v2",
  errors: validateMemoryFileFrontmatter({ path, content, previousContent, format }),
}));
fs.writeFileSync(process.argv[2], JSON.stringify(out, null, 1) + "\n");
