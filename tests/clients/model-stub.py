#!/usr/bin/env python3
"""model-stub.py DIR — a model for real agent CLIs (Codex, Claude Code, gemini-cli) in
tests/clients.bats.

Listens on 127.0.0.1 at a free port and writes the port to DIR/port once it is listening.
Speaks the three APIs those clients use: OpenAI's Responses API (POST .../responses, Codex)
and Anthropic's Messages API (POST .../messages, Claude Code) as server-sent events, and the
Gemini API (POST ...:streamGenerateContent as events, ...:generateContent whole; gemini-cli). Every request is appended to DIR/requests.jsonl as {"method","path","body"}.

Unlike tests/openai-stub.py (answers in a fixed order) the answer depends on the request, since
a client may send requests of its own (titles, probes) in between: DIR/calls.json holds a list
of tool arguments. A request that offers the tool named in DIR/tool (default
"mcp__sbx__run_command"; a tool in a Responses API namespace is named NAMESPACE__TOOL) and
carries fewer tool results than the list is long is answered with a call of that tool with
the next arguments; any other request with the text "stub: done".
Anything else (GET /models and the like) gets an empty JSON list.

The stub exits by itself after IDLE_EXIT seconds without a request, so a test that dies before
its teardown cannot leave it running for long.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IDLE_EXIT = 120         # seconds without a request before the stub exits on its own
MAX_BODY = 16 << 20     # a request body larger than this is refused (413)

lock = threading.Lock()
state = {"ids": 0}


def next_id(prefix):
    with lock:
        state["ids"] += 1
        return "%s_stub%d" % (prefix, state["ids"])


def sse(events):
    """Server-sent events, each (name, object) as an event: line and a data: line."""
    return "".join("event: %s\ndata: %s\n\n" % (n, json.dumps(o)) for n, o in events).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read requests.jsonl instead
        pass

    def do_GET(self):
        self.answer(b'{"object":"list","data":[],"models":[]}', "application/json")

    def do_HEAD(self):
        self.answer(b"", "application/json")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            return self.answer(b'{"error":"too large"}', "application/json", 413)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        d = self.server.dir
        with lock:
            with open(os.path.join(d, "requests.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps({"method": "POST", "path": self.path, "body": body}) + "\n")
        path = self.path.split("?")[0]
        if path.endswith("/responses"):
            return self.answer(self.openai_responses(body), "text/event-stream")
        if path.endswith("/messages"):
            return self.answer(self.anthropic_messages(body), "text/event-stream")
        if path.endswith(":streamGenerateContent"):
            return self.answer(self.gemini_generate(body, True), "text/event-stream")
        if path.endswith(":generateContent"):
            return self.answer(self.gemini_generate(body, False), "application/json")
        if path.endswith(":countTokens"):
            return self.answer(b'{"totalTokens":10}', "application/json")
        if path.endswith("/count_tokens"):
            return self.answer(b'{"input_tokens":10}', "application/json")
        return self.answer(b'{}', "application/json")

    def plan(self, tool_names, results):
        """The tool to call ((namespace or None, name)) and its arguments, or None for text."""
        d = self.server.dir
        try:
            with open(os.path.join(d, "tool"), encoding="utf-8") as f:
                want = f.read().strip()
        except OSError:
            want = "mcp__sbx__run_command"
        with open(os.path.join(d, "calls.json"), encoding="utf-8") as f:
            calls = json.load(f)
        tool = next((t for t in tool_names if (t[0] + "__" if t[0] else "") + t[1] == want), None)
        if tool is None or results >= len(calls):
            return None
        return tool, calls[results]

    def openai_responses(self, body):
        """OpenAI Responses API: one function call or one message, then response.completed."""
        names = []
        for t in body.get("tools") or []:
            if isinstance(t, dict) and t.get("type") == "namespace":
                names += [(t.get("name"), s.get("name", "")) for s in t.get("tools") or []]
            elif isinstance(t, dict):
                names.append((None, t.get("name", "")))
        items = body.get("input") or []
        results = sum(1 for i in items if isinstance(i, dict)
                      and i.get("type") == "function_call_output")
        rid = next_id("resp")
        p = self.plan(names, results)
        if p:
            item = {"type": "function_call", "id": next_id("fc"), "call_id": next_id("call"),
                    "name": p[0][1], "arguments": json.dumps(p[1])}
            if p[0][0]:
                item["namespace"] = p[0][0]
        else:
            item = {"type": "message", "id": next_id("msg"), "role": "assistant",
                    "content": [{"type": "output_text", "text": "stub: done", "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        return sse([
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "usage": usage}}),
        ])

    def anthropic_messages(self, body):
        """Anthropic Messages API, streamed: one tool_use block or one text block."""
        names = [(None, t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
        results = 0
        for m in body.get("messages") or []:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                results += sum(1 for c in m["content"] if isinstance(c, dict)
                               and c.get("type") == "tool_result")
        p = self.plan(names, results)
        start = {"type": "message_start", "message": {
            "id": next_id("msg"), "type": "message", "role": "assistant",
            "model": body.get("model", "stub"), "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
        if p:
            block = {"type": "tool_use", "id": next_id("toolu"), "name": p[0][1], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(p[1])}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": "stub: done"}
            stop = "end_turn"
        return sse([
            ("message_start", start),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def gemini_generate(self, body, stream):
        """Gemini API: one functionCall part or one text part, streamed or whole."""
        names = [(None, f.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)
                 for f in t.get("functionDeclarations") or [] if isinstance(f, dict)]
        results = sum(1 for c in body.get("contents") or [] if isinstance(c, dict)
                      for part in c.get("parts") or [] if isinstance(part, dict)
                      and "functionResponse" in part)
        p = self.plan(names, results)
        part = {"functionCall": {"name": p[0][1], "args": p[1]}} if p else {"text": "stub: done"}
        doc = {"candidates": [{"content": {"role": "model", "parts": [part]},
                               "finishReason": "STOP", "index": 0}],
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                 "totalTokenCount": 15}}
        if stream:
            return ("data: %s\r\n\r\n" % json.dumps(doc)).encode()
        return json.dumps(doc).encode()

    def answer(self, data, ctype, status=200):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.dir = sys.argv[1]
    port = os.path.join(srv.dir, "port")
    with open(port + ".tmp", "w", encoding="utf-8") as f:
        f.write("%d" % srv.server_address[1])
    os.replace(port + ".tmp", port)
    # One request at a time is accepted, each served on its own thread; a wait for the next
    # one that lasts IDLE_EXIT seconds ends the stub.
    srv.timeout = IDLE_EXIT
    idle = []
    srv.handle_timeout = lambda: idle.append(True)
    while not idle:
        srv.handle_request()


if __name__ == "__main__":
    main()
