// memfsd mcp driven end to end by the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk): over stdio (memfsd mcp, in-process agent)
// and over streamable HTTP (/mcp on a daemon's agent socket).
// Run by scripts/mcp-node.sh; MEMFSD is the binary.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import assert from "node:assert/strict";

const bin = process.env.MEMFSD;
assert.ok(bin, "MEMFSD: the memfsd binary");
const root = mkdtempSync(join(tmpdir(), "memfsd-mcp-node-"));
const git = (dir, ...args) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(25);
  }
}
const text = (res) => res.content[0].text;
const step = (s) => console.log("ok -", s);

async function stdio() {
  const home = join(root, "stdio");
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "--agent", "me", "--home", home, "--push-idle", "300ms"],
    stderr: "inherit",
  });
  const client = new Client({ name: "node-e2e", version: "1.0.0" });
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(tools, ["memory", "memory_history", "memory_search", "memory_show", "memory_sync"]);
  const show = (await client.listTools()).tools.find((t) => t.name === "memory_show");
  assert.equal(show.annotations.readOnlyHint, true);
  step("stdio: tools/list " + tools.join(","));
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert.ok(prompts.includes("memory_context"));
  step("stdio: prompts/list " + prompts.join(","));

  const call = (args) => client.callTool({ name: "memory", arguments: args });
  let r = await call({ command: "create", path: "/memories/notes.md", file_text: "alpha\nbeta\n" });
  assert.equal(r.isError ?? false, false, text(r));
  r = await call({ command: "str_replace", path: "/memories/notes.md", old_str: "beta", new_str: "gamma" });
  assert.equal(r.isError ?? false, false, text(r));
  r = await call({ command: "rename", old_path: "/memories/notes.md", new_path: "/memories/topics/notes.md" });
  assert.equal(r.isError ?? false, false, text(r));
  r = await call({ command: "view", path: "/memories/topics/notes.md" });
  assert.match(text(r), /^Here's the content of \/memories\/topics\/notes.md with line numbers:/);
  assert.match(text(r), / {5}2\tgamma/);
  step("stdio: create, str_replace, rename, view");
  r = await call({ command: "create", path: "/memories/system/persona.md", file_text: "hijack" });
  assert.equal(r.isError, true);
  assert.match(text(r), /\/memories\/system\/persona.md is read-only and cannot be modified/);
  step("stdio: read-only block refused: " + text(r));

  const resources = (await client.listResources()).resources;
  const notes = resources.find((x) => x.uri === "memory:///topics/notes.md");
  assert.ok(notes, "memory:///topics/notes.md listed");
  assert.equal(notes.mimeType, "text/markdown");
  const read = await client.readResource({ uri: "memory:///topics/notes.md" });
  assert.equal(read.contents[0].text, "alpha\ngamma\n");
  step(`stdio: resources/list (${resources.length}), resources/read memory:///topics/notes.md`);
  const prompt = await client.getPrompt({ name: "memory_context" });
  assert.match(prompt.messages[0].content.text, /<memory_blocks>/);
  step("stdio: prompts/get memory_context");

  const dir = join(home, "agents", "me", "memory");
  const log = git(dir, "log", "--format=%s");
  for (const want of ["memory: create notes.md", "memory: str_replace notes.md", "memory: rename notes.md -> topics/notes.md"]) {
    assert.ok(log.includes(want), `git log lacks ${want}:\n${log}`);
  }
  step("stdio: commits in git log");
  const remote = join(home, "remote", "v1", "git", "me", "state.git");
  const remoteHead = () => execFileSync("git", ["--git-dir", remote, "rev-parse", "refs/heads/main"], { encoding: "utf8" }).trim();
  const local = git(dir, "rev-parse", "HEAD");
  await waitFor("the push after --push-idle", () => remoteHead() === local);
  step("stdio: pushed to the remote after the idle period");
  r = await call({ command: "create", path: "/memories/b.md", file_text: "b\n" });
  r = await client.callTool({ name: "memory_sync", arguments: {} });
  assert.equal(r.isError ?? false, false, text(r));
  assert.equal(remoteHead(), git(dir, "rev-parse", "HEAD"));
  step("stdio: memory_sync pushed: " + text(r));
  r = await client.callTool({ name: "memory", arguments: { command: "create", path: 5 } });
  assert.equal(r.isError, true);
  step("stdio: wrong argument type answered isError: " + text(r));
  await client.close();
}

async function http() {
  const home = join(root, "daemon");
  const daemon = spawn(bin, ["run", "--home", home, "--agent", "n1", "--mcp-push-idle", "300ms"], { stdio: ["ignore", "inherit", "inherit"] });
  try {
    const sock = join(home, "agents", "n1", "memfsd.sock");
    await waitFor("the agent's socket", () => existsSync(sock));
    // The TypeScript SDK speaks HTTP over TCP: a loopback port piped to
    // the agent's unix socket.
    const fwd = net.createServer((c) => {
      const u = net.connect(sock);
      c.pipe(u).pipe(c);
      c.on("error", () => u.destroy());
      u.on("error", () => c.destroy());
    });
    await new Promise((r) => fwd.listen(0, "127.0.0.1", r));
    const url = new URL(`http://127.0.0.1:${fwd.address().port}/mcp`);
    const client = new Client({ name: "node-e2e-http", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(url));
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(tools, ["memory", "memory_history", "memory_search", "memory_show", "memory_sync"]);
    step("http: tools/list on the agent's socket");
    const dir = join(home, "agents", "n1", "memory");
    await waitFor("the daemon's first clone", () => existsSync(join(dir, "system")));
    const r = await client.callTool({ name: "memory", arguments: { command: "create", path: "/memories/h.md", file_text: "over http\n" } });
    assert.equal(r.isError ?? false, false, text(r));
    assert.ok(git(dir, "log", "--format=%s").includes("memory: create h.md"));
    step("http: create committed by the daemon");
    await client.close();
    fwd.close();
  } finally {
    daemon.kill("SIGTERM");
    await new Promise((r) => daemon.on("exit", r));
  }
}

try {
  await stdio();
  await http();
  console.log("PASS");
} finally {
  rmSync(root, { recursive: true, force: true });
}
