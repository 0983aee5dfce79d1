#!/usr/bin/env python3
"""openai-stub.py DIR — a scripted OpenAI-compatible chat completions server for the tests.

Listens on 127.0.0.1 at a free port and writes the port to DIR/port once it is listening.
Every request is appended to DIR/requests.jsonl as {"method","path","headers","body"} (headers
lower-cased; body the parsed JSON, or {"raw": text} when it is not JSON). Answers come from
DIR/script.jsonl, one JSON object per line, used in order; when they run out the stub answers
500 "stub: no scripted answer left". An answer may hold:

  status      HTTP status (default 200)
  headers     extra response headers {name: value}
  json        a JSON body
  body        a raw text body
  file        a file whose bytes are the body, verbatim (a recorded answer); a name ending in
              .sse is sent as text/event-stream, others as application/json
  sse         a list of events: an object is sent as "data: <json>\\n\\n", a string verbatim
  split       with sse or file: send the body in pieces of this many bytes (awkward
              boundaries), each its own HTTP chunk
  chunks      with sse or file: a list of byte counts to send, one piece each (the rest after)
  random      with sse or file: [seed, max]: pieces of 1..max bytes, sizes drawn from seed
  gap_ms      pause between pieces (default 5 for sse, 0 for file)
  limit       with sse or file: send only the body's first this many bytes
  cut         with sse or file: drop the connection after the body, with no final chunk
  hang        never answer (the connection stays open until the client gives up)
  delay_ms    wait before answering
  repeat      on the last answer: use it again for every later request

The stub exits by itself after IDLE_EXIT seconds without a request, so a test that dies
before its teardown cannot leave it running for long.
"""
import json
import os
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IDLE_EXIT = 120     # seconds without a request before the stub exits on its own
PIECE_GAP = 0.005   # seconds between pieces of a split stream, so they arrive apart

lock = threading.Lock()
state = {"next": 0, "last": time.monotonic()}
stopping = threading.Event()


def load_script(d):
    with open(os.path.join(d, "script.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read requests.jsonl instead
        pass

    def do_GET(self):
        self.do_POST()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        with lock:
            state["last"] = time.monotonic()
            with open(os.path.join(self.server.dir, "requests.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            script = load_script(self.server.dir)
            i = state["next"]
            state["next"] += 1
        if i >= len(script) and script and script[-1].get("repeat"):
            i = len(script) - 1
        if i >= len(script):
            return self.send_body(500, {}, b'{"error":"stub: no scripted answer left"}')
        a = script[i]
        if a.get("delay_ms"):
            time.sleep(a["delay_ms"] / 1000)
        if a.get("hang"):
            while not stopping.wait(0.1):
                pass
            self.close_connection = True
            return None
        status = a.get("status", 200)
        headers = a.get("headers", {})
        if "sse" in a:
            text = "".join(e if isinstance(e, str) else "data: " + json.dumps(e) + "\n\n"
                           for e in a["sse"])
            return self.send_pieces(status, headers, text.encode(), a, "text/event-stream", 0.005)
        if "file" in a:
            with open(a["file"], "rb") as f:
                data = f.read()
            ctype = "text/event-stream" if a["file"].endswith(".sse") else "application/json"
            return self.send_pieces(status, headers, data, a, ctype, 0)
        if "json" in a:
            data = json.dumps(a["json"]).encode()
        else:
            data = a.get("body", "").encode()
        return self.send_body(status, headers, data)

    def send_body(self, status, headers, data):
        self.send_response(status)
        if not any(k.lower() == "content-type" for k in headers):
            self.send_header("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_pieces(self, status, headers, data, a, ctype, gap):
        """Sends data chunked, in the pieces the answer asks for (see the module text)."""
        self.send_response(status)
        if not any(k.lower() == "content-type" for k in headers):
            self.send_header("Content-Type", ctype)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if "limit" in a:
            data = data[:a["limit"]]
        pieces = []
        if a.get("chunks"):
            at = 0
            for size in a["chunks"]:
                pieces.append(data[at:at + size])
                at += size
            pieces.append(data[at:])
        elif a.get("split"):
            k = a["split"]
            pieces = [data[j:j + k] for j in range(0, len(data), k)]
        elif a.get("random"):
            rnd, at = random.Random(a["random"][0]), 0
            while at < len(data):
                k = rnd.randint(1, a["random"][1])
                pieces.append(data[at:at + k])
                at += k
        else:
            pieces = [data]
        gap = a.get("gap_ms", gap * 1000) / 1000
        for p in pieces:
            if not p:
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
            self.wfile.flush()
            if len(pieces) > 1 and gap > 0:
                time.sleep(gap)
        if a.get("cut"):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    d = sys.argv[1]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.dir = d
    tmp = os.path.join(d, "port.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(d, "port"))

    def idle_watch():
        while time.monotonic() - state["last"] < IDLE_EXIT:
            time.sleep(1)
        stopping.set()
        srv.shutdown()

    threading.Thread(target=idle_watch, daemon=True).start()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    stopping.set()


if __name__ == "__main__":
    main()
