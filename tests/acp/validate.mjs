// validate.mjs — checks every message an ACP agent sends against the ACP v1 JSON schema shipped
// in @agentclientprotocol/sdk (schema/v1/schema.json): requests and notifications by method,
// responses by the method of the request they answer (ids echoed with their JSON type).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

// The packages live in the test cache ($ACP_SDK_DIR/node_modules), not in the source tree.
export const require = createRequire(path.join(process.env.ACP_SDK_DIR ?? ".", "noop.js"));
const Ajv2020 = require("ajv/dist/2020.js").default ?? require("ajv/dist/2020.js");

const sdkDir = path.join(process.env.ACP_SDK_DIR ?? ".", "node_modules/@agentclientprotocol/sdk");
const schema = JSON.parse(fs.readFileSync(path.join(sdkDir, "schema/v1/schema.json"), "utf8"));
// x-* annotations and "discriminator" are not validation keywords; formats such as int32 or
// uint16 are not ajv formats, the integer type is still checked.
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");
const def = (name) => {
  const v = ajv.getSchema(`acp#/$defs/${name}`);
  if (!v) throw new Error(`schema has no ${name}`);
  return v;
};

const requestParams = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
};
const notificationParams = { "session/update": "SessionNotification" };
const responseResults = {
  initialize: "InitializeResponse",
  authenticate: "AuthenticateResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/prompt": "PromptResponse",
  "session/resume": "ResumeSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/list": "ListSessionsResponse",
  "session/set_mode": "SetSessionModeResponse",
  "session/set_config_option": "SetSessionConfigOptionResponse",
};

// A line splitter that validates each complete line; sent() records our own requests.
export class Validator {
  constructor() {
    this.sentMethods = new Map(); // JSON text of an id → method
    this.errors = [];
    this.log = []; // every received message, in order
    this.buf = "";
  }

  sent(line) {
    let m;
    try { m = JSON.parse(line); } catch { return; }
    if (m && m.method && m.id !== undefined) this.sentMethods.set(JSON.stringify(m.id), m.method);
  }

  feed(chunk) {
    this.buf += chunk;
    let i;
    while ((i = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (line.trim() !== "") this.check(line);
    }
  }

  fail(what, line, errs) {
    this.errors.push({ what, line: line.slice(0, 500), errors: errs && ajv.errorsText(errs) });
  }

  check(line) {
    let m;
    try { m = JSON.parse(line); } catch (e) { return this.fail("not JSON", line); }
    this.log.push(m);
    if (m.jsonrpc !== "2.0") this.fail("jsonrpc is not 2.0", line);
    if (typeof m.method === "string") {
      const isReq = m.id !== undefined;
      // Extension methods (ACP: names starting with "_") have no schema beyond the envelope.
      if (m.method.startsWith("_")) {
        if (isReq) return this.fail(`unexpected extension request ${m.method}`, line);
        return;
      }
      const name = isReq ? requestParams[m.method] : notificationParams[m.method];
      if (!name) return this.fail(`unexpected ${isReq ? "request" : "notification"} ${m.method}`, line);
      const v = def(name);
      if (!v(m.params)) this.fail(`${m.method} params`, line, v.errors);
      const w = def(isReq ? "AgentRequest" : "AgentNotification");
      if (!w(m)) this.fail(`${m.method} envelope`, line, w.errors);
      return;
    }
    if (!("id" in m)) return this.fail("neither request nor response", line);
    const keys = ["result", "error"].filter((k) => k in m);
    if (keys.length !== 1) return this.fail("response needs exactly one of result and error", line);
    if ("error" in m) {
      const v = def("Error");
      if (!v(m.error)) this.fail("error object", line, v.errors);
      if (m.id !== null) this.matchId(m, line);
      return;
    }
    const method = this.matchId(m, line);
    if (method && responseResults[method]) {
      const v = def(responseResults[method]);
      if (!v(m.result)) this.fail(`${method} result`, line, v.errors);
    }
  }

  matchId(m, line) {
    const method = this.sentMethods.get(JSON.stringify(m.id));
    if (!method) this.fail("response id matches no request (value and JSON type)", line);
    return method;
  }
}
