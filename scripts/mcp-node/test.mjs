// memfsd mcp driven end to end by the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk), in the three set-ups docs/mcp.md recommends:
//   1. stdio, no daemon (`memfsd mcp`: the agent runs in that process);
//   2. stdio through a daemon (`memfsd mcp` beside `memfsd run`: the
//      session goes through the agent's socket);
//   3. streamable HTTP on loopback TCP (`memfsd run --mcp-listen`), with
//      the agent's own bearer token; another agent's token is refused.
// Each: list (tools, resources, prompts: the SDK sends them without
// params), call, read, subscribe (notifications/resources/updated on a
// write), prompt. Run by scripts/mcp-node.sh; MEMFSD is the binary.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, rmSync } from "node:fs";
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
const TOOLS = ["memory", "memory_history", "memory_search", "memory_show", "memory_sync"];

// exercise runs list, call, read, subscribe and prompt on a connected
// client whose agent's folder is dir; label names the set-up.
async function exercise(label, client, dir) {
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });

  const tools = (await client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  assert.equal(tools.find((t) => t.name === "memory_show").annotations.readOnlyHint, true);
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert.ok(prompts.includes("memory_context"), prompts.join(","));
  let resources = (await client.listResources()).resources;
  assert.ok(resources.some((x) => x.uri === "memory:///system/persona.md"));
  step(`${label}: list: tools/list ${tools.length}, prompts/list ${prompts.join(",")}, resources/list ${resources.length} (no params, as the SDK sends them)`);

  const call = (args) => client.callTool({ name: "memory", arguments: args });
  let r = await call({ command: "create", path: "/memories/notes.md", file_text: "alpha\nbeta\n" });
  assert.equal(r.isError ?? false, false, text(r));
  await client.subscribeResource({ uri: "memory:///notes.md" });
  r = await call({ command: "str_replace", path: "/memories/notes.md", old_str: "beta", new_str: "gamma" });
  assert.equal(r.isError ?? false, false, text(r));
  r = await call({ command: "view", path: "/memories/notes.md" });
  assert.match(text(r), /^Here's the content of \/memories\/notes.md with line numbers:/);
  assert.match(text(r), / {5}2\tgamma/);
  r = await call({ command: "create", path: "/memories/system/persona.md", file_text: "hijack" });
  assert.equal(r.isError, true);
  assert.match(text(r), /\/memories\/system\/persona.md is read-only and cannot be modified/);
  r = await client.callTool({ name: "memory", arguments: { command: "create", path: 5 } });
  assert.equal(r.isError, true);
  r = await client.callTool({ name: "memory_search", arguments: { query: "gamma" } });
  assert.match(text(r), /notes\.md/);
  const log = git(dir, "log", "--format=%s");
  for (const want of ["memory: create notes.md", "memory: str_replace notes.md"]) {
    assert.ok(log.includes(want), `git log lacks ${want}:\n${log}`);
  }
  step(`${label}: call: create, str_replace, view, memory_search; read-only block and a wrong type answered isError; commits in git log`);

  resources = (await client.listResources()).resources;
  const notes = resources.find((x) => x.uri === "memory:///notes.md");
  assert.ok(notes, "memory:///notes.md listed");
  assert.equal(notes.mimeType, "text/markdown");
  const read = await client.readResource({ uri: "memory:///notes.md" });
  assert.equal(read.contents[0].text, "alpha\ngamma\n");
  const ctx = await client.readResource({ uri: "memfsd://context" });
  assert.match(ctx.contents[0].text, /<memory_blocks>/);
  step(`${label}: read: memory:///notes.md, memfsd://context`);

  await waitFor("notifications/resources/updated for memory:///notes.md", () => updated.includes("memory:///notes.md"));
  await client.unsubscribeResource({ uri: "memory:///notes.md" });
  step(`${label}: subscribe: notifications/resources/updated memory:///notes.md after the write`);

  const prompt = await client.getPrompt({ name: "memory_context" });
  assert.match(prompt.messages[0].content.text, /<memory_blocks>/);
  const letta = await client.getPrompt({ name: "memory_context", arguments: { format: "letta-code" } });
  assert.ok(letta.messages[0].content.text.length > 0);
  step(`${label}: prompt: prompts/get memory_context (memfsd, letta-code)`);
}

// stdio, no daemon: the agent runs in `memfsd mcp`.
async function stdioInProcess() {
  const home = join(root, "stdio");
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "--agent", "me", "--home", home, "--push-idle", "300ms"],
    stderr: "inherit",
  });
  const client = new Client({ name: "node-e2e", version: "1.0.0" });
  await client.connect(transport);
  const dir = join(home, "agents", "me", "memory");
  await exercise("stdio in-process", client, dir);

  const remote = join(home, "remote", "v1", "git", "me", "state.git");
  const remoteHead = () => execFileSync("git", ["--git-dir", remote, "rev-parse", "refs/heads/main"], { encoding: "utf8" }).trim();
  await waitFor("the push after --push-idle", () => remoteHead() === git(dir, "rev-parse", "HEAD"));
  step("stdio in-process: pushed to the remote after the idle period");
  await client.callTool({ name: "memory", arguments: { command: "create", path: "/memories/b.md", file_text: "b\n" } });
  const r = await client.callTool({ name: "memory_sync", arguments: {} });
  assert.equal(r.isError ?? false, false, text(r));
  assert.equal(remoteHead(), git(dir, "rev-parse", "HEAD"));
  step("stdio in-process: memory_sync pushed: " + text(r));
  await client.close();
}

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  return port;
}

// A daemon serving agents n1 and n2, MCP also on loopback TCP.
async function withDaemon(fn) {
  const home = join(root, "daemon");
  const port = await freePort();
  const daemon = spawn(bin, ["run", "--home", home, "--agent", "n1", "--agent", "n2", "--mcp-push-idle", "300ms", "--mcp-listen", `127.0.0.1:${port}`],
    { stdio: ["ignore", "inherit", "inherit"] });
  try {
    for (const id of ["n1", "n2"]) {
      await waitFor(`${id}'s socket and token`, () => existsSync(join(home, "agents", id, "memfsd.sock")) && existsSync(join(home, "agents", id, "mcp-token")));
      await waitFor(`the daemon's first clone of ${id}`, () => existsSync(join(home, "agents", id, "memory", "system")));
    }
    await fn(home, port);
  } finally {
    daemon.kill("SIGTERM");
    await new Promise((r) => daemon.on("exit", r));
  }
}

// stdio through the daemon: `memfsd mcp` proxies to n1's socket.
async function stdioThroughDaemon(home) {
  const client = new Client({ name: "node-e2e-proxy", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: bin, args: ["mcp", "--agent", "n1", "--home", home], stderr: "inherit" }));
  await exercise("stdio through the daemon", client, join(home, "agents", "n1", "memory"));
  await client.close();
}

// Streamable HTTP on --mcp-listen with n2's own token.
async function httpLoopback(home, port) {
  const token = (id) => readFileSync(join(home, "agents", id, "mcp-token"), "utf8").trim();
  const url = (id) => new URL(`http://127.0.0.1:${port}/agents/${id}/mcp`);
  const withToken = (tok) => ({ requestInit: { headers: { Authorization: `Bearer ${tok}` } } });
  const client = new Client({ name: "node-e2e-http", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url("n2"), withToken(token("n2"))));
  await exercise("http --mcp-listen", client, join(home, "agents", "n2", "memory"));
  await client.close();

  // n1's token does not open n2's endpoint (nor does none).
  for (const [what, opts] of [["n1's token", withToken(token("n1"))], ["no token", {}]]) {
    const other = new Client({ name: "node-e2e-http-other", version: "1.0.0" });
    let said = "";
    await assert.rejects(other.connect(new StreamableHTTPClientTransport(url("n2"), opts)), (err) => {
      said = String(err);
      assert.match(said, /401|nauthorized/);
      return true;
    });
    step(`http --mcp-listen: ${what} on /agents/n2/mcp refused: ${said.replace(/\s+/g, " ").slice(0, 200)}`);
  }
}

try {
  await stdioInProcess();
  await withDaemon(async (home, port) => {
    await stdioThroughDaemon(home);
    await httpLoopback(home, port);
  });
  console.log("PASS");
} finally {
  rmSync(root, { recursive: true, force: true });
}
