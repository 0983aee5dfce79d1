// client.mjs — drives sbx-mcp with the official MCP TypeScript SDK (@modelcontextprotocol/sdk)
// for tests/sbx-mcp.bats, over stdio or Streamable HTTP, and prints one JSON document.
//
//   node client.mjs (--stdio CMD ARGS... | --url URL [--token T]) [--steps JSON]
//
// Steps (a JSON array, run in order after initialize):
//   {"list": true}                          tools/list → the tools
//   {"call": NAME, "args": {...}}           tools/call → {text, isError, structured[, content]}
//   {"call": ..., "progress": true}         the same with a progressToken: notifications counted
//   {"call": ..., "cancel_when": CMD}       aborted (notifications/cancelled) once the shell
//                                           command CMD succeeds (polled every 100 ms)
//   {"until": CMD}                          waits (at most 30 s) until CMD succeeds
//   {"ping": true}
// Output: {"server": serverInfo, "protocol": version, "instructions": text, "results": [...]}
// or {"failed": message} with exit status 1.
import { execSync } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(process.env.MCP_SDK_DIR + "/package.json");
const load = async (p) => import(pathToFileURL(require.resolve(p)).href);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js");

const argv = process.argv.slice(2);
const opt = { steps: "[]" };
let cmd = null;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--stdio") { cmd = argv.slice(i + 1); break; }
  opt[argv[i].replace(/^--/, "")] = argv[++i];
}

function emit(obj, code) {
  process.stdout.write(JSON.stringify(obj) + "\n", () => process.exit(code));
}

const sh = (c) => { try { execSync(c, { stdio: "ignore", shell: "/bin/bash" }); return true; } catch { return false; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(c) {
  for (let i = 0; i < 300; i++) { if (sh(c)) return true; await sleep(100); }
  throw new Error("timed out waiting for: " + c);
}

let transport;
if (cmd) {
  transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), env: process.env, stderr: "inherit" });
} else {
  const headers = opt.token !== undefined ? { Authorization: "Bearer " + opt.token } : {};
  transport = new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } });
}
const client = new Client({ name: "sbx-mcp-test", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  emit({ failed: String(e.message || e), code: e.code }, 1);
  await sleep(60000);
}

const results = [];
try {
  for (const st of JSON.parse(opt.steps)) {
    if (st.list) {
      const r = await client.listTools();
      results.push({ tools: r.tools });
    } else if (st.ping) {
      results.push({ ping: await client.ping() });
    } else if (st.until) {
      await until(st.until);
      results.push({ until: st.until });
    } else if (st.call) {
      const ac = new AbortController();
      let progress = 0;
      const ro = { signal: ac.signal, timeout: 120000 };
      if (st.progress) { ro.onprogress = () => { progress++; }; ro.resetTimeoutOnProgress = true; }
      const p = client.callTool({ name: st.call, arguments: st.args || {} }, undefined, ro);
      if (st.cancel_when) {
        await until(st.cancel_when);
        ac.abort("test cancels");
      }
      try {
        const r = await p;
        results.push({ text: r.content.map((c) => c.text).join("\n"), isError: !!r.isError,
          structured: r.structuredContent ?? null, progress,
          // items other than text (images, audio, resources) as the SDK parsed them
          ...(r.content.some((c) => c.type !== "text") ? { content: r.content } : {}) });
      } catch (e) {
        results.push({ error: String(e.message || e), code: e.code ?? null, progress });
      }
    }
  }
} catch (e) {
  emit({ failed: String(e.message || e) }, 1);
  await sleep(60000);
}
const out = { server: client.getServerVersion(), instructions: client.getInstructions(),
  protocol: transport.protocolVersion ?? null, results };
if (opt.url && opt.terminate) await transport.terminateSession();
await client.close();
emit(out, 0);
