// acp-load.mjs — load for tests/bench/acp.sh, with the official ACP client library.
//   node acp-load.mjs turns ADDR N      N clients at once, each: initialize, session/new, one
//                                       approved tool turn; prints latencies of the turns
//   node acp-load.mjs sessions ADDR K   K idle sessions over K/50 connections kept open until
//                                       stdin closes; prints "ready" once they exist
import net from "node:net";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { require } from "../acp/validate.mjs";

const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const [mode, addr, nStr] = process.argv.slice(2);
const [host, port] = addr.split(":");
const n = Number(nStr);

function connect() {
  const sock = net.connect({ host, port: Number(port) });
  return { sock, stream: acp.ndJsonStream(Writable.toWeb(sock), Readable.toWeb(sock)) };
}

function app() {
  return acp.client({ name: "bench" })
    .onNotification("session/update", () => {})
    .onRequest("session/request_permission", async () => ({ outcome: { outcome: "selected", optionId: "allow-once" } }));
}

const init = (ctx) => ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "bench", version: "1" } });

async function turn(i) {
  const { sock, stream } = connect();
  try {
    return await app().connectWith(stream, async (ctx) => {
      await init(ctx);
      const s = await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] });
      const t0 = performance.now();
      const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: `run: echo ${i}` }] });
      return { ms: performance.now() - t0, ok: r.stopReason === "end_turn" };
    });
  } catch (e) {
    return { ms: 0, ok: false, err: String(e) };
  } finally {
    sock.end();
  }
}

if (mode === "turns") {
  const t0 = performance.now();
  const res = await Promise.all(Array.from({ length: n }, (_, i) => turn(i)));
  const wall = performance.now() - t0;
  const lat = res.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b);
  const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : NaN;
  console.log(JSON.stringify({ clients: n, failed: res.filter((r) => !r.ok).length, wall_ms: wall, p50_ms: q(0.5), p99_ms: q(0.99), turns_per_s: lat.length / (wall / 1000) }));
  process.exit(0);
} else if (mode === "sessions") {
  const per = 50;
  const conns = [];
  for (let made = 0; made < n; made += per) {
    const { sock, stream } = connect();
    const c = app().connect(stream);
    await init(c.agent);
    for (let k = 0; k < Math.min(per, n - made); k++) await c.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    conns.push({ sock, c });
  }
  console.log("ready");
  process.stdin.resume();
  process.stdin.on("end", () => { for (const x of conns) x.sock.end(); setTimeout(() => process.exit(0), 200); });
}
