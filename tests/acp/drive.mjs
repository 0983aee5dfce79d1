// drive.mjs — drives acp-server with the official ACP client library (@agentclientprotocol/sdk)
// for tests/acp-server.bats. Every byte the server sends is also checked against the ACP v1
// schema (validate.mjs); any violation fails the scenario.
//
//   node drive.mjs SCENARIO [--addr HOST:PORT | --stdio CMD...] [options]
//
// Scenarios print one JSON document on stdout describing what happened, for jq assertions:
//   turn       initialize, session/new, N prompts (--prompt, --prompts N), answering permission
//              requests with --answer (allow-once, reject-once, allow-always, reject-always,
//              cancelled)
//   load       session/load of --session, then one prompt ("hello again", or --load-prompt)
//   cancel     a prompt, session/cancel once --cancel-on says so (tool = the tool started,
//              file:PATH = PATH exists), plus a second prompt on the busy session; the
//              session's mcpServers from --mcp-servers FILE (a JSON array)
//   auth       initialize, session/new without authenticating, authenticate with --token
//              (absent = no token), session/new again
//   concurrent --clients N connections at once, each one tool turn approved
//   raw        lines from --lines FILE sent as they are; the answers collected
import fs from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { Validator, require } from "./validate.mjs";

const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

const args = process.argv.slice(2);
const scenario = args.shift();
const opt = { prompt: "run: uname -a", prompts: 1, answer: "allow-once", clients: 1 };
let stdioCmd = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--stdio") { stdioCmd = args.slice(i + 1); break; }
  const key = a.replace(/^--/, "").replace(/-(.)/g, (_, c) => c.toUpperCase());
  opt[key] = args[++i];
}
opt.prompts = Number(opt.prompts);
opt.clients = Number(opt.clients);
const CWD = "/tmp";

// Writes one line and exits once it is flushed (stdout may be a pipe: exit would cut it).
let emitted = false;
function emit(obj, code) {
  if (emitted) return;
  emitted = true;
  process.stdout.write(JSON.stringify(obj) + "\n", () => process.exit(code));
}

function fail(msg, extra) {
  emit({ failed: msg, ...extra }, 1);
}

// A raw duplex to the server: a TCP (or TLS) socket, or a spawned acp-server -stdio.
function openTransport() {
  if (stdioCmd) {
    const child = spawn(stdioCmd[0], stdioCmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    return { input: child.stdout, output: child.stdin, close: () => child.stdin.end(), child };
  }
  const [host, port] = opt.addr.split(":");
  let sock;
  if (opt.tlsCa) {
    sock = tls.connect({ host, port: Number(port), ca: fs.readFileSync(opt.tlsCa), servername: "localhost" });
  } else {
    sock = net.connect({ host, port: Number(port) });
  }
  return { input: sock, output: sock, close: () => sock.end() };
}

// Opens the transport and wraps it in the SDK's NDJSON stream, with the validator on both sides.
function openStream(v) {
  const t = openTransport();
  const dec = new TextDecoder();
  const input = Readable.toWeb(t.input).pipeThrough(new TransformStream({
    transform(chunk, ctl) { v.feed(dec.decode(chunk, { stream: true })); ctl.enqueue(chunk); },
  }));
  const sink = Writable.toWeb(t.output);
  const tap = new TransformStream({
    transform(chunk, ctl) {
      for (const line of new TextDecoder().decode(chunk).split("\n")) if (line) v.sent(line);
      ctl.enqueue(chunk);
    },
  });
  tap.readable.pipeTo(sink).catch(() => {});
  return { stream: acp.ndJsonStream(tap.writable, input), transport: t };
}

// available_commands_update comes after the session/new (load, resume) answer, at any time:
// kept apart from a step's or turn's updates, in arrival order, with its sessionId.
const commandUpdates = [];
function record(state, params) {
  if (params.update?.sessionUpdate === "available_commands_update") commandUpdates.push(params);
  else state.updates.push(params.update);
}

// A client app that records updates and answers permission requests with `answer`.
function makeClient(state, answer) {
  return acp.client({ name: "sbx-tests" })
    .onNotification("session/update", ({ params }) => { record(state, params); state.onUpdate?.(params.update); })
    .onRequest("session/request_permission", async ({ params }) => {
      state.permissions.push(params);
      if (answer === "cancelled") return { outcome: { outcome: "cancelled" } };
      if (state.holdPermission) await state.holdPermission;
      return { outcome: { outcome: "selected", optionId: answer } };
    });
}

// initialize, then authenticate with --token-file when the server asks for a token.
async function initialize(ctx, caps) {
  const init = await ctx.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: caps ?? { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "sbx-tests", version: "1.0" },
  });
  if (opt.tokenFile && init.authMethods?.length) {
    const token = fs.readFileSync(opt.tokenFile, "utf8").trim();
    await ctx.request("authenticate", { methodId: init.authMethods[0].id, _meta: { token } });
  }
  return init;
}

async function errorOf(p) {
  try { await p; return null; } catch (e) { return { code: e.code, message: e.message, data: e.data }; }
}

function finish(v, result) {
  if (v.errors.length) return fail("schema violations", { violations: v.errors, result });
  emit(result, 0);
}

async function turnScenario() {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const out = await makeClient(state, opt.answer).connectWith(stream, async (ctx) => {
    const init = await initialize(ctx);
    const s = await ctx.request("session/new", { cwd: CWD, mcpServers: [] });
    const stops = [];
    for (let i = 0; i < opt.prompts; i++) {
      try {
        const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: opt.prompt }] });
        stops.push(r.stopReason);
      } catch (e) {
        stops.push({ code: e.code, message: e.message });
      }
    }
    return { init, newResult: s, sessionId: s.sessionId, stops };
  });
  transport.close();
  finish(v, { ...out, updates: state.updates, permissions: state.permissions, log: v.log });
}

async function loadScenario() {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const out = await makeClient(state, opt.answer).connectWith(stream, async (ctx) => {
    await initialize(ctx);
    const err = await errorOf(ctx.request("session/load", { sessionId: "acpffffffffffffffff", cwd: CWD, mcpServers: [] }));
    const bad = await errorOf(ctx.request("session/load", { sessionId: "../etc", cwd: CWD, mcpServers: [] }));
    const res = await ctx.request("session/load", { sessionId: opt.session, cwd: CWD, mcpServers: [] });
    const replayed = state.updates.length;
    const r = await ctx.request("session/prompt", { sessionId: opt.session, prompt: [{ type: "text", text: opt.loadPrompt ?? "hello again" }] });
    return { unknown: err, invalid: bad, load: res, replayed, stop: r.stopReason };
  });
  transport.close();
  // Order on the wire: every replayed update precedes the session/load answer.
  const loadAt = v.log.findIndex((m) => m.result && v.sentMethods.get(JSON.stringify(m.id)) === "session/load");
  finish(v, { ...out, updates: state.updates, loadAt, log: v.log });
}

async function cancelScenario() {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const out = await makeClient(state, "allow-once").connectWith(stream, async (ctx) => {
    await initialize(ctx);
    const mcpServers = opt.mcpServers ? JSON.parse(fs.readFileSync(opt.mcpServers, "utf8")) : [];
    const s = await ctx.request("session/new", { cwd: CWD, mcpServers });
    let cancelled = false;
    const cancel = () => {
      if (cancelled) return;
      cancelled = true;
      ctx.notify("session/cancel", { sessionId: s.sessionId });
    };
    if (opt.cancelOn === "tool") {
      state.onUpdate = (u) => { if (u.sessionUpdate === "tool_call_update" && u.status === "in_progress") cancel(); };
    }
    const p = ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: opt.prompt }] });
    let busy = null;
    if (opt.cancelOn.startsWith("file:")) {
      const f = opt.cancelOn.slice(5);
      for (let i = 0; i < 300 && !fs.existsSync(f); i++) await new Promise((r) => setTimeout(r, 50));
      if (!fs.existsSync(f)) throw new Error(`${f} never appeared`);
      busy = await errorOf(ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "second" }] }));
      cancel();
    }
    const r = await p;
    // The session is usable again after the cancelled turn.
    const again = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "after" }] });
    return { stop: r.stopReason, busy, again: again.stopReason };
  });
  transport.close();
  finish(v, { ...out, updates: state.updates, log: v.log });
}

async function authScenario() {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const out = await makeClient(state, "allow-once").connectWith(stream, async (ctx) => {
    const init = await initialize(ctx);
    const before = await errorOf(ctx.request("session/new", { cwd: CWD, mcpServers: [] }));
    const params = { methodId: opt.method ?? "bearer-token" };
    if (opt.token !== undefined) params._meta = { token: opt.token };
    const auth = await errorOf(ctx.request("authenticate", params));
    const after = await errorOf(ctx.request("session/new", { cwd: CWD, mcpServers: [] }));
    return { init, before, auth, after };
  });
  transport.close();
  finish(v, out);
}

async function oneClient(i) {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const out = await makeClient(state, "allow-once").connectWith(stream, async (ctx) => {
    await initialize(ctx);
    const s = await ctx.request("session/new", { cwd: CWD, mcpServers: [] });
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: `run: echo client-${i}` }] });
    return { sessionId: s.sessionId, stop: r.stopReason };
  });
  transport.close();
  const done = state.updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  const text = done?.content?.[0]?.content?.text ?? "";
  return { ...out, echoed: text.includes(`client-${i}\n`), violations: v.errors };
}

async function concurrentScenario() {
  const res = await Promise.all(Array.from({ length: opt.clients }, (_, i) => oneClient(i)));
  const violations = res.flatMap((r) => r.violations);
  if (violations.length) return fail("schema violations", { violations });
  emit({
    clients: res.length,
    end_turn: res.filter((r) => r.stop === "end_turn").length,
    echoed: res.filter((r) => r.echoed).length,
    distinct_sessions: new Set(res.map((r) => r.sessionId)).size,
  }, 0);
}

// Raw lines: no SDK, so malformed input reaches the server as it is.
async function rawScenario() {
  const v = new Validator();
  const t = openTransport();
  const lines = fs.readFileSync(opt.lines, "utf8").split("\n").filter((l) => l !== "");
  const expect = Number(opt.expect);
  const got = [];
  await new Promise((resolve, reject) => {
    let buf = "";
    t.input.on("data", (d) => {
      v.feed(d.toString());
      buf += d.toString();
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const m = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (m.params?.update?.sessionUpdate === "available_commands_update") { commandUpdates.push(m.params); continue; }
        got.push(m);
        if (got.length >= expect) resolve();
      }
    });
    t.input.on("end", resolve);
    t.input.on("error", reject);
    for (const l of lines) {
      const text = l.replace(/\\r/g, "\r").replace(/^BIG:(\d+)$/, (_, n) => "x".repeat(Number(n)));
      for (const line of text.split("\n")) v.sent(line);
      t.output.write(text + "\n");
    }
  });
  t.close();
  finish(v, { answers: got });
}

// A client drops its connection while its tool runs; a second connection finds the session,
// loads it and prompts it (the turn was cancelled, the session kept). With --hang-first, a
// prompt on another session is answered while the first hangs (needs the stub).
async function disconnectScenario() {
  const v = new Validator();
  const state = { updates: [], permissions: [] };
  const first = openStream(v);
  let sessionId;
  const dropped = new Promise((resolve) => {
    state.onUpdate = (u) => {
      if (u.sessionUpdate === "tool_call_update" && u.status === "in_progress") resolve();
    };
  });
  const conn = makeClient(state, "allow-once").connect(first.stream);
  await initialize(conn.agent);
  sessionId = (await conn.agent.request("session/new", { cwd: CWD, mcpServers: [] })).sessionId;
  conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: opt.prompt }] }).catch(() => {});
  await dropped;
  first.transport.input.destroy();
  const v2 = new Validator();
  const state2 = { updates: [], permissions: [] };
  const second = openStream(v2);
  const out = await makeClient(state2, "allow-once").connectWith(second.stream, async (ctx) => {
    await initialize(ctx);
    // The load waits for the cancelled turn to unwind, then drives the session from here.
    const notOpen = await errorOf(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "not loaded" }] }));
    await ctx.request("session/load", { sessionId, cwd: CWD, mcpServers: [] });
    state2.updates.length = 0;
    const r = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still there?" }] });
    return { sessionId, notOpen, stop: r?.stopReason };
  });
  second.transport.close();
  finish(v2, { ...out, updates: state2.updates });
}

// Two sessions on two connections: the second is answered while the first waits on the model.
async function parallelScenario() {
  const v = new Validator();
  const a = { updates: [], permissions: [] };
  const b = { updates: [], permissions: [] };
  const sa = openStream(v), sb = openStream(v);
  const ca = makeClient(a, "allow-once").connect(sa.stream);
  const cb = makeClient(b, "allow-once").connect(sb.stream);
  await initialize(ca.agent);
  await initialize(cb.agent);
  const ida = (await ca.agent.request("session/new", { cwd: CWD, mcpServers: [] })).sessionId;
  const idb = (await cb.agent.request("session/new", { cwd: CWD, mcpServers: [] })).sessionId;
  const pa = ca.agent.request("session/prompt", { sessionId: ida, prompt: [{ type: "text", text: "slow" }] });
  const f = opt.waitFile;
  for (let i = 0; i < 300 && !fs.existsSync(f); i++) await new Promise((r) => setTimeout(r, 50));
  const rb = await cb.agent.request("session/prompt", { sessionId: idb, prompt: [{ type: "text", text: "fast" }] });
  // a can only end after the cancel below (its model call hangs): b was served meanwhile.
  await ca.agent.notify("session/cancel", { sessionId: ida });
  const ra = await pa;
  sa.transport.close();
  sb.transport.close();
  finish(v, { b: rb.stopReason, a: ra.stopReason, textB: b.updates.map((u) => u.content?.text).join("") });
}

// Opens a connection that authenticates with token (no token: none); its messages go through v.
async function openAs(v, token, answer = "allow-once") {
  const state = { updates: [], permissions: [] };
  const { stream, transport } = openStream(v);
  const conn = makeClient(state, answer).connect(stream);
  const init = await conn.agent.request("initialize", {
    protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "sbx-tests", version: "1.0" },
  });
  if (token) await conn.agent.request("authenticate", { methodId: init.authMethods[0].id, _meta: { token } });
  return { agent: conn.agent, state, transport };
}

const prompt = (agent, sessionId, text) => agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
const load = (agent, sessionId) => agent.request("session/load", { sessionId, cwd: CWD, mcpServers: [] });
// An error with the session id in it replaced, so two errors can be compared.
const masked = (err, id) => err && JSON.parse(JSON.stringify(err).split(id).join("<id>"));

// Two principals (--alice TOKEN --bob TOKEN): bob's prompt, load and cancel of alice's session
// are answered exactly as for a session that does not exist, and do nothing to it.
async function principalsScenario() {
  const v = new Validator();
  const a = await openAs(v, opt.alice), b = await openAs(v, opt.bob);
  if (opt.load) {
    // After a restart: the issued-sessions file still says the session is alice's.
    const out = { bobLoad: await errorOf(load(b.agent, opt.load)), aliceLoad: await errorOf(load(a.agent, opt.load)) };
    a.transport.close();
    b.transport.close();
    return finish(v, out);
  }
  const sid = (await a.agent.request("session/new", { cwd: CWD, mcpServers: [] })).sessionId;
  const none = "acp" + "0".repeat(32);
  const out = {
    sid,
    bobPrompt: masked(await errorOf(prompt(b.agent, sid, "hi")), sid),
    unknownPrompt: masked(await errorOf(prompt(b.agent, none, "hi")), none),
    bobLoad: masked(await errorOf(load(b.agent, sid)), sid),
    unknownLoad: masked(await errorOf(load(b.agent, none)), none),
  };
  // bob cancels while alice's turn waits for her permission answer: it must not stop it.
  let release;
  a.state.holdPermission = new Promise((r) => { release = r; });
  const asked = new Promise((r) => { a.state.onUpdate = (u) => { if (u.sessionUpdate === "tool_call") r(); }; });
  const turn = prompt(a.agent, sid, "run: echo mine");
  await asked;
  await b.agent.notify("session/cancel", { sessionId: sid });
  await errorOf(prompt(b.agent, none, "after cancel"));	// the cancel was handled before this
  release();
  out.alice = (await turn).stopReason;
  out.aliceOutput = a.state.updates.find((u) => u.status === "completed")?.content?.[0]?.content?.text;
  // bob's list does not show it, his close does not close it
  out.bobList = (await b.agent.request("session/list", {})).sessions.map((x) => x.sessionId);
  out.aliceList = (await a.agent.request("session/list", {})).sessions.map((x) => x.sessionId);
  out.bobClose = await errorOf(b.agent.request("session/close", { sessionId: sid }));
  out.aliceAfter = (await prompt(a.agent, sid, "still mine")).stopReason;
  out.bobUpdates = b.state.updates.length;
  a.transport.close();
  b.transport.close();
  finish(v, out);
}

// A second connection loads a session whose turn runs on the first: that turn is cancelled,
// the first connection is told and can no longer drive the session; the second replays it and
// prompts it. Nothing of one connection's turn reaches the other.
async function takeoverScenario() {
  const va = new Validator(), vb = new Validator();
  const tok = opt.tokenFile ? fs.readFileSync(opt.tokenFile, "utf8").trim() : null;
  const a = await openAs(va, tok);
  const sid = (await a.agent.request("session/new", { cwd: CWD, mcpServers: [] })).sessionId;
  await prompt(a.agent, sid, "first words");
  const running = new Promise((r) => { a.state.onUpdate = (u) => { if (u.status === "in_progress") r(); }; });
  const turn = prompt(a.agent, sid, opt.prompt);
  await running;
  const b = await openAs(vb, tok);
  const loaded = await load(b.agent, sid);
  const replay = b.state.updates.map((u) => u.sessionUpdate);
  const aStop = (await turn).stopReason;
  // The notification may trail the prompt's answer by a moment.
  for (let i = 0; i < 100 && !va.log.some((m) => m.method === "_sbx/session_taken_over"); i++)
    await new Promise((r) => setTimeout(r, 20));
  const told = va.log.filter((m) => m.method === "_sbx/session_taken_over").map((m) => m.params);
  const aAfter = await errorOf(prompt(a.agent, sid, "still mine?"));
  b.state.updates.length = 0;
  const bStop = (await prompt(b.agent, sid, "now mine")).stopReason;
  const bText = b.state.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  a.transport.close();
  b.transport.close();
  const v = new Validator();
  v.errors = [...va.errors, ...vb.errors];
  finish(v, { sid, loaded, replay, aStop, told, aAfter: masked(aAfter, sid), bStop, bText });
}

// steps: --steps FILE, a JSON array of steps run in order, each recorded with its result (or
// error) and the session updates that came while it ran:
//   {"connect": CAPS}   a new connection (clientCapabilities CAPS; fs.readTextFile serves
//                       "files"), authenticated with --token-file; later steps use it
//   {"files": {PATH: TEXT}}            what fs/read_text_file serves (others: -32002)
//   {"answer": OPTION}                 how permission requests are answered from now on
//   {"new": PARAMS} {"load": PARAMS} {"resume": PARAMS}   cwd/mcpServers defaulted; the
//                       session id (of the last new/load) filled in
//   {"prompt": BLOCKS | TEXT} {"mode": ID} {"config": [ID, VALUE]} {"list": PARAMS}
//   {"close": {}} {"raw": [METHOD, PARAMS]}
//   {"commands": N}     waits until N available_commands_update have come (they are kept in
//                       the result's "commands", not in a step's updates)
async function stepsScenario() {
  const v = new Validator();
  const steps = JSON.parse(fs.readFileSync(opt.steps, "utf8"));
  const shared = { files: {}, answer: "allow-once", reads: [] };
  const tok = opt.tokenFile ? fs.readFileSync(opt.tokenFile, "utf8").trim() : null;
  let conn = null, sid = null;
  const out = [];
  const open = async (caps) => {
    const state = { updates: [], permissions: [] };
    const { stream, transport } = openStream(v);
    const app = acp.client({ name: "sbx-tests" })
      .onNotification("session/update", ({ params }) => record(state, params))
      .onRequest("session/request_permission", async ({ params }) => {
        state.permissions.push(params.toolCall);
        if (shared.answer === "cancelled") return { outcome: { outcome: "cancelled" } };
        return { outcome: { outcome: "selected", optionId: shared.answer } };
      })
      .onRequest("fs/read_text_file", async ({ params }) => {
        shared.reads.push(params);
        if (!(params.path in shared.files)) throw acp.RequestError.resourceNotFound(params.path);
        return { content: shared.files[params.path] };
      });
    const c = app.connect(stream);
    const init = await c.agent.request("initialize", {
      protocolVersion: 1, clientCapabilities: caps ?? {}, clientInfo: { name: "sbx-tests", version: "1.0" },
    });
    if (tok && init.authMethods?.length)
      await c.agent.request("authenticate", { methodId: init.authMethods[0].id, _meta: { token: tok } });
    return { agent: c.agent, state, transport, init };
  };
  for (const st of steps) {
    const [kind, arg] = Object.entries(st)[0];
    if (kind === "files" || kind === "answer") {
      if (kind === "files") Object.assign(shared.files, arg);
      else shared.answer = arg;
      out.push({ step: kind });
      continue;
    }
    if (kind === "commands") {
      // Waits (bounded) until this many available_commands_update have arrived in all.
      for (let i = 0; i < 1000 && commandUpdates.length < arg; i++) await new Promise((r) => setTimeout(r, 10));
      out.push({ step: kind, result: commandUpdates.length });
      continue;
    }
    if (kind === "connect") {
      conn?.transport.close();
      conn = await open(arg);
      out.push({ step: kind, result: conn.init });
      continue;
    }
    conn ??= await open({});
    conn.state.updates.length = 0;
    conn.state.permissions.length = 0;
    const setup = (p) => ({ cwd: CWD, mcpServers: [], ...p, sessionId: p?.sessionId ?? sid });
    let call;
    switch (kind) {
    case "new": call = conn.agent.request("session/new", { cwd: CWD, mcpServers: [], ...arg }); break;
    case "load": call = conn.agent.request("session/load", setup(arg)); break;
    case "resume": call = conn.agent.request("session/resume", setup(arg)); break;
    case "prompt":
      call = conn.agent.request("session/prompt", { sessionId: sid, prompt: typeof arg === "string" ? [{ type: "text", text: arg }] : arg });
      break;
    case "mode": call = conn.agent.request("session/set_mode", { sessionId: sid, modeId: arg }); break;
    case "config": call = conn.agent.request("session/set_config_option", { sessionId: sid, configId: arg[0], value: arg[1] }); break;
    case "list": call = conn.agent.request("session/list", arg ?? {}); break;
    case "close": call = conn.agent.request("session/close", { sessionId: arg?.sessionId ?? sid }); break;
    case "raw": call = conn.agent.request(arg[0], arg[1]); break;
    default: throw new Error(`unknown step ${kind}`);
    }
    const rec = { step: kind };
    try { rec.result = await call; } catch (e) { rec.error = { code: e.code, message: e.message, data: e.data }; }
    if (kind === "new" && rec.result) sid = rec.result.sessionId;
    if ((kind === "load" || kind === "resume") && arg?.sessionId && rec.result) sid = arg.sessionId;
    rec.updates = [...conn.state.updates];
    rec.permissions = [...conn.state.permissions];
    out.push(rec);
  }
  conn?.transport.close();
  finish(v, { sid, steps: out, reads: shared.reads, commands: commandUpdates });
}

// The validator must be able to fail: known-wrong shapes (acp.md §12) are each reported.
async function selftestScenario() {
  const v = new Validator();
  v.sent('{"jsonrpc":"2.0","id":1,"method":"session/prompt"}');
  v.sent('{"jsonrpc":"2.0","id":2,"method":"initialize"}');
  const bad = [
    { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "tool_call_update", toolCallId: "c", content: [{ type: "text", text: "bare" }] } } },
    { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "c" } } },
    { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "current_mode_update", modeId: "x" } } },
    { jsonrpc: "2.0", id: 0, method: "session/request_permission", params: { sessionId: "s", toolCall: { toolCallId: "c", status: "cancelled" }, options: [] } },
    { jsonrpc: "2.0", id: 1, result: { stopReason: "error" } },
    { jsonrpc: "2.0", id: 2, result: { protocolVersion: "2025-01-01" } },
    { jsonrpc: "2.0", id: "1", result: { stopReason: "end_turn" } },
  ];
  for (const m of bad) v.feed(JSON.stringify(m) + "\n");
  emit({ messages: bad.length, violations: v.errors.length }, 0);
}

const scenarios = {
  selftest: selftestScenario, steps: stepsScenario, principals: principalsScenario, takeover: takeoverScenario,
  disconnect: disconnectScenario,
  parallel: parallelScenario, turn: turnScenario, load: loadScenario, cancel: cancelScenario, auth: authScenario, concurrent: concurrentScenario, raw: rawScenario };
if (!scenarios[scenario]) fail(`unknown scenario ${scenario}`);
else scenarios[scenario]().catch((e) => fail(String(e?.stack ?? e)));
