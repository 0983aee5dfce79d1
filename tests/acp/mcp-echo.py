# mcp-echo.py — a stdio MCP server for tests/acp-server.bats, run inside a sandbox as
# /usr/bin/python3 -c "<this text>" (the repository is not visible in there). Tools: where
# (hostname, HOME, cwd, $ECHO_FOO, its pid namespace: shows where it runs), shout (its text upper-cased), fail (an
# isError result), hang (never answered), cancels (the ids of the hang calls and every
# notifications/cancelled received, as JSON). Answers initialize with the revision asked for, and ping.
import json, os, socket, sys

TOOLS = [
    {"name": "where", "description": "Where this server runs", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "shout", "description": "Upper-cases text", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "hang", "description": "Never answers", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "cancels", "description": "What was cancelled", "inputSchema": {"type": "object", "properties": {}}},
]
hung, cancelled = [], []

def answer(i, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\n")
    sys.stdout.flush()

def text(t, err=False):
    return {"content": [{"type": "text", "text": t}], "isError": err}

for line in sys.stdin:
    m = json.loads(line)
    method, i, p = m.get("method"), m.get("id"), m.get("params") or {}
    if i is None:
        if method == "notifications/cancelled":
            cancelled.append(p)
        continue
    if method == "initialize":
        answer(i, {"protocolVersion": p.get("protocolVersion"), "capabilities": {"tools": {}},
                   "serverInfo": {"name": "echo", "version": "1"}})
    elif method == "tools/list":
        answer(i, {"tools": TOOLS})
    elif method == "ping":
        answer(i, {})
    elif method == "tools/call":
        name, args = p.get("name"), p.get("arguments") or {}
        if name == "where":
            answer(i, text("host=%s home=%s cwd=%s foo=%s pidns=%s" % (
                socket.gethostname(), os.environ.get("HOME"), os.getcwd(), os.environ.get("ECHO_FOO"),
                os.readlink("/proc/self/ns/pid"))))
        elif name == "hang":
            hung.append(i)
        elif name == "cancels":
            answer(i, text(json.dumps({"hung": hung, "cancelled": cancelled})))
        elif name == "shout":
            answer(i, text(args.get("text", "").upper()))
        else:
            answer(i, text("it failed", True))
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "no"}}) + "\n")
        sys.stdout.flush()
