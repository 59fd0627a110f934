"use strict";

const { execFileSync, spawn, spawnSync } = require("node:child_process");
const { readFileSync } = require("node:fs");
const { resolve } = require("node:path");

const CONFIG_PATH = ".memfs.config.json";
const parseMemoryConstraintsConfig = function parseMemoryConstraintsConfig(content) {
  const path8 = ".memfs.config.json";
  const errors4 = [];
  let value;
  try {
    value = JSON.parse(content);
  } catch (error4) {
    throw new Error(`${path8}: invalid JSON (${error4 instanceof Error ? error4.message : String(error4)})`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${path8}: expected a JSON object`);
  }
  const config = value;
  const keys2 = new Set([
    "version",
    "maxDepth",
    "maxFileCharacters",
    "maxCoreMemoryCharacters",
    "fileCharacterLimits"
  ]);
  for (const key of Object.keys(config)) {
    if (!keys2.has(key))
      errors4.push(`${path8}: unknown field '${key}'`);
  }
  if (config.version !== 1)
    errors4.push(`${path8}: version must be 1`);
  if (config.maxDepth !== undefined && !(Number.isSafeInteger(config.maxDepth) && Number(config.maxDepth) >= 0)) {
    errors4.push(`${path8}: maxDepth must be a non-negative integer`);
  }
  for (const key of ["maxFileCharacters", "maxCoreMemoryCharacters"]) {
    if (config[key] !== undefined && !(Number.isSafeInteger(config[key]) && Number(config[key]) > 0)) {
      errors4.push(`${path8}: ${key} must be a positive integer`);
    }
  }
  const overrides = config.fileCharacterLimits;
  if (overrides !== undefined && !Array.isArray(overrides)) {
    errors4.push(`${path8}: fileCharacterLimits must be an array`);
  }
  if (Array.isArray(overrides)) {
    overrides.forEach((override, index) => {
      const label = `${path8}: fileCharacterLimits[${index}]`;
      if (override === null || typeof override !== "object" || Array.isArray(override)) {
        errors4.push(`${label} must be an object`);
        return;
      }
      const item = override;
      for (const key of Object.keys(item)) {
        if (key !== "pattern" && key !== "maxCharacters")
          errors4.push(`${label}: unknown field '${key}'`);
      }
      const pattern4 = item.pattern;
      if (typeof pattern4 !== "string" || pattern4.length === 0 || pattern4.startsWith("/") || pattern4.includes(String.fromCharCode(92)) || pattern4.split("/").includes("..")) {
        errors4.push(`${label}: pattern must be a non-empty repo-relative glob using '/'`);
      } else if (pattern4.split("/").some((segment) => segment.includes("**") && segment !== "**")) {
        errors4.push(`${label}: '**' must be a complete path segment`);
      }
      if (item.maxCharacters !== null && !(Number.isSafeInteger(item.maxCharacters) && Number(item.maxCharacters) > 0)) {
        errors4.push(`${label}: maxCharacters must be a positive integer or null`);
      }
    });
  }
  if (errors4.length)
    throw new Error(errors4.join(`
`));
  return config;
};
const validateMemoryTreeConstraints = async function validateMemoryTreeConstraints(reader, options) {
  const errors4 = [];
  const files = (await reader.listFiles()).filter((file) => file.path.endsWith(".md"));
  const paths = new Set(files.map((file) => file.path));
  const v2 = options.layout === "root-marker" && (options.requireRootMarker || paths.has("MEMORY.md"));
  if (v2 && !paths.has("MEMORY.md")) {
    errors4.push("MEMORY.md: root memory index is required for MemFS v2");
  }
  const memoryFiles = files.filter(({ path: path8 }) => {
    if (path8.startsWith("skills/"))
      return false;
    return v2 || options.layout === "shared-memory" || /^(?:memory\/)?(?:system|reference)\/.*\.md$/.test(path8);
  });
  if (v2) {
    for (const { path: path8 } of memoryFiles) {
      const directories = path8.split("/").slice(0, -1);
      let current = "";
      for (const directory of directories) {
        current = current ? `${current}/${directory}` : directory;
        const index = `${current}/MEMORY.md`;
        if (!paths.has(index)) {
          errors4.push(`${path8}: missing required index ${index}`);
          break;
        }
      }
    }
  }
  const overrides = (options.config.fileCharacterLimits ?? []).map((override) => {
    let source = "^";
    const pattern4 = override.pattern;
    for (let index = 0;index < pattern4.length; index++) {
      const character = pattern4.charAt(index);
      if (character === "*") {
        if (pattern4[index + 1] === "*") {
          if (pattern4[index + 2] === "/") {
            source += "(?:.*/)?";
            index += 2;
          } else {
            source += ".*";
            index++;
          }
        } else
          source += "[^/]*";
      } else if (character === "?")
        source += "[^/]";
      else
        source += "^$.*+?()[]{}|".includes(character) || character.charCodeAt(0) === 92 ? String.fromCharCode(92) + character : character;
    }
    return { ...override, regex: new RegExp(`${source}$`) };
  });
  let coreCharacters = 0;
  for (const { path: path8, mode } of memoryFiles) {
    if (!mode.startsWith("100")) {
      errors4.push(`${path8}: memory Markdown must be a regular file`);
      continue;
    }
    const depth = path8.split("/").length - 1;
    if (options.config.maxDepth !== undefined && depth > options.config.maxDepth) {
      errors4.push(`${path8}: depth ${depth} exceeds maxDepth ${options.config.maxDepth}`);
    }
    const override = overrides.find((item) => item.regex.test(path8));
    const limit4 = override ? override.maxCharacters : options.config.maxFileCharacters;
    const source = override ? `glob '${override.pattern}'` : "maxFileCharacters";
    const countCore = options.layout === "root-marker" && !path8.includes("/") && options.config.maxCoreMemoryCharacters !== undefined;
    if ((limit4 === null || limit4 === undefined) && !countCore)
      continue;
    let characters = 0;
    if (reader.countCharacters) {
      characters = await reader.countCharacters(path8);
    } else {
      const bytes = await reader.readFile(path8);
      if (bytes === null)
        throw new Error(`${path8}: listed memory file is missing`);
      for (const _character of new TextDecoder("utf-8", {
        ignoreBOM: true
      }).decode(bytes))
        characters++;
    }
    if (countCore)
      coreCharacters += characters;
    if (limit4 !== undefined && limit4 !== null && characters > limit4) {
      errors4.push(`${path8}: ${characters} characters exceeds ${limit4} from ${source}`);
    }
  }
  if (options.layout === "root-marker" && options.config.maxCoreMemoryCharacters !== undefined && coreCharacters > options.config.maxCoreMemoryCharacters) {
    errors4.push(`core memory: ${coreCharacters} characters exceeds ${options.config.maxCoreMemoryCharacters} from maxCoreMemoryCharacters`);
  }
  return errors4;
};
const DEFAULT_CONFIG = {"version":1,"maxDepth":2,"maxFileCharacters":20000,"maxCoreMemoryCharacters":65536};
const CONFIG_UPDATE_ENV = "LETTA_MEMORY_CONSTRAINTS_UPDATE";
const LAYOUT_POLICY_FILE = "letta-memory-layout-policy";
const AUDIT_MODE = process.argv.includes("--audit");
let activeLayoutPolicy = "legacy-only";

function runGit(args, encoding = "utf8") {
  return execFileSync("git", args, {
    encoding,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function gitSucceeds(args) {
  return spawnSync("git", args, { stdio: "ignore" }).status === 0;
}

function stagedFile(path) {
  return runGit(["show", ":" + path]);
}

function stagedMode(path) {
  return runGit(["ls-files", "--stage", "--", path]).split(" ", 1)[0];
}

function parseConfig(content, errors) {
  try {
    return parseMemoryConstraintsConfig(content);
  } catch (error) {
    errors.push(...error.message.split("\n"));
    return null;
  }
}

function readLayoutPolicy() {
  const layoutArgument = process.argv.indexOf("--layout");
  if (layoutArgument >= 0) {
    const policy = process.argv[layoutArgument + 1];
    if (["legacy-only", "root-marker", "shared-memory"].includes(policy)) {
      return policy;
    }
  }
  try {
    const commonDir = runGit(["rev-parse", "--git-common-dir"]).trim();
    return readFileSync(resolve(commonDir, LAYOUT_POLICY_FILE), "utf8").trim();
  } catch {
    return "legacy-only";
  }
}

function report(errors) {
  if (errors.length === 0) return;
  if (AUDIT_MODE) {
    console.error("Memory constraints failed:");
  } else {
    console.error("Memory validation blocked this commit.");
    console.error("No files were committed. Your staged changes are still present.");
    console.error(
      "Validation checks the complete repository, so these problems may predate your staged changes.",
    );
    console.error("");
    console.error("Fix these problems:");
  }
  for (const error of errors) console.error("  " + error);
  if (!AUDIT_MODE) {
    console.error("");
    if (activeLayoutPolicy === "root-marker") {
      console.error(
        "Move non-core detail out of root Markdown and behind MEMORY.md indexes.",
      );
    }
    console.error("Split files above their per-file limit, then retry the commit.");
    console.error(
      "Limits come from .memfs.config.json, or the Letta Code defaults when it is absent.",
    );
    console.error(
      "Do not raise or disable these limits unless the user explicitly approves it.",
    );
  }
  process.exit(1);
}

async function main() {
  const errors = [];
  const layoutPolicy = readLayoutPolicy();
  activeLayoutPolicy = layoutPolicy;
  const configChanged = !gitSucceeds([
    "diff",
    "--cached",
    "--quiet",
    "--",
    CONFIG_PATH,
  ]);
  if (configChanged && process.env[CONFIG_UPDATE_ENV] !== "1") {
    errors.push(
      CONFIG_PATH + " is protected and requires human approval to change",
    );
  }

  const hasConfig = gitSucceeds(["cat-file", "-e", ":" + CONFIG_PATH]);
  const hasV2Root =
    layoutPolicy === "root-marker" &&
    (gitSucceeds(["cat-file", "-e", ":MEMORY.md"]) ||
      gitSucceeds(["cat-file", "-e", "HEAD:MEMORY.md"]));
  if (!hasConfig && !hasV2Root) {
    report(errors);
    return;
  }

  let config = DEFAULT_CONFIG;
  if (hasConfig) {
    if (!stagedMode(CONFIG_PATH).startsWith("100")) {
      errors.push(CONFIG_PATH + ": constraint config must be a regular file");
      report(errors);
    }

    const parsedConfig = parseConfig(stagedFile(CONFIG_PATH), errors);
    if (!parsedConfig || errors.length > 0) report(errors);
    config =
      layoutPolicy === "root-marker"
        ? { ...DEFAULT_CONFIG, ...parsedConfig }
        : parsedConfig;
  }

  errors.push(...await validateMemoryTreeConstraints({
    async countCharacters(path) {
      return new Promise((resolveCount, reject) => {
        const child = spawn("git", ["show", ":" + path], { stdio: ["ignore", "pipe", "pipe"] });
        let characters = 0;
        let stderr = "";
        child.stdout.setEncoding("utf8");
        child.stdout.on("data", (chunk) => { for (const character of chunk) characters++; });
        child.stderr.on("data", (chunk) => { stderr += chunk; });
        child.on("error", reject);
        child.on("close", (code) => code === 0 ? resolveCount(characters) : reject(new Error(stderr || "git show failed for " + path)));
      });
    },
    async listFiles() {
      return runGit(["ls-files", "--stage", "-z"]).split("\0").filter(Boolean).map((entry) => {
        const separator = entry.indexOf("\t");
        return { path: entry.slice(separator + 1), mode: entry.split(" ", 1)[0] };
      });
    },
    async readFile(path) {
      return new Promise((resolveBytes, reject) => {
        const child = spawn("git", ["show", ":" + path], { stdio: ["ignore", "pipe", "pipe"] });
        const chunks = [];
        let stderr = "";
        child.stdout.on("data", (chunk) => chunks.push(chunk));
        child.stderr.on("data", (chunk) => { stderr += chunk; });
        child.on("error", reject);
        child.on("close", (code) => code === 0 ? resolveBytes(Buffer.concat(chunks)) : reject(new Error(stderr || "git show failed for " + path)));
      });
    },
  }, { config, layout: layoutPolicy, requireRootMarker: gitSucceeds(["cat-file", "-e", "HEAD:MEMORY.md"]) }));

  report(errors);
}

main().catch((error) => {
  console.error("Memory constraints failed:");
  console.error("  " + (error instanceof Error ? error.message : String(error)));
  process.exit(1);
});
