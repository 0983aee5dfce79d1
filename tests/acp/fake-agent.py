#!/usr/bin/env python3
"""fake-agent.py — a scripted ACP agent on standard input and output, for tests/acp-client.bats:
it answers initialize and session/new (with modes), and on each prompt sends one of every kind
of update acp-client renders (a thought, a plan, an edit with its diff, a command with a long
output, usage, a mode change, a title), asks the client for lines 2-3 of notes.txt in its cwd
with fs/read_text_file and says what it got, then ends the turn. session/set_mode is answered
with a current_mode_update. Stops at the end of its input.
"""
import json
import sys

cwd = "/"


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def update(sid, u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})


def read_msg():
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def prompt(mid, sid):
    update(sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Planning the edit."}})
    update(sid, {"sessionUpdate": "plan", "entries": [
        {"content": "read notes", "priority": "high", "status": "completed"},
        {"content": "edit notes", "priority": "medium", "status": "in_progress"},
        {"content": "run tests", "priority": "low", "status": "pending"}]})
    update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit notes.txt", "kind": "edit",
                 "status": "completed", "content": [
                     {"type": "diff", "path": cwd + "/notes.txt", "oldText": "old line", "newText": "new line\nsecond"},
                     {"type": "content", "content": {"type": "text", "text": "edited"}}]})
    update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Run `seq 10`", "kind": "execute",
                 "status": "pending"})
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "completed", "content": [
        {"type": "content", "content": {"type": "text", "text": "\n".join(str(i) for i in range(1, 11))}}]})
    update(sid, {"sessionUpdate": "usage_update", "used": 1234, "size": 128000,
                 "cost": {"amount": 0.0123, "currency": "USD"}})
    update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "never-ask"})
    update(sid, {"sessionUpdate": "session_info_update", "title": "Editing notes"})
    send({"jsonrpc": "2.0", "id": 100, "method": "fs/read_text_file",
          "params": {"sessionId": sid, "path": cwd + "/notes.txt", "line": 2, "limit": 2}})
    while True:
        m = read_msg()
        if m is None:
            return False
        if m.get("id") == 100 and "method" not in m:
            break
    got = m.get("result", {}).get("content", m.get("error"))
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lines: %r" % got}})
    send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
    return True


def main():
    global cwd
    modes = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "never-ask", "name": "Never ask"}]}
    while True:
        m = read_msg()
        if m is None:
            return
        method, mid, p = m.get("method"), m.get("id"), m.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            cwd = p["cwd"]
            send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "s1", "modes": modes}})
        elif method == "session/set_mode":
            update(p["sessionId"], {"sessionUpdate": "current_mode_update", "currentModeId": p["modeId"]})
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "session/prompt":
            if not prompt(mid, p["sessionId"]):
                return
        elif mid is not None and method:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    main()
