#!/usr/bin/env python3
"""lockout.py SCENARIO URL TOKEN [N] — sbx-mcp's HTTP transport misused over raw sockets, for
tests/sbx-mcp.bats. Prints one JSON document; every wait is bounded; every connection it opens
is closed before it exits.

  trickle TOKEN N   N connections, each from its own address of 127.0.0.0/8, that send a request
                    line and then one header line a second and never finish; 1.5 s in, the token
                    holder initializes a session: how long it took, and how many trickling
                    connections the server had closed 6 s in
  guess TOKEN S     wrong tokens from 8 threads for S seconds, each request on a fresh
                    connection from its own 127.x address: how many were compared (401) and how
                    many refused unchecked (429); then the right token from 127.0.0.1
"""
import json
import resource
import socket
import sys
import threading
import time
from urllib.parse import urlparse

WAIT = 20  # seconds any single read may take
INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "lockout", "version": "1"}}})


def src_addr(i):
    """The i-th loopback address other than 127.0.0.1."""
    return "127.%d.%d.%d" % (1 + i // 62500, i // 250 % 250, i % 250 + 2)


def dial(host, port, src=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    if src:
        s.bind((src, 0))
    s.connect((host, port))
    return s


def post(host, port, token, src=None):
    """One initialize POST; the status code (None: no answer)."""
    try:
        s = dial(host, port, src)
        req = ("POST /mcp HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
               "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (host, port, token, len(INIT), INIT))
        s.sendall(req.encode())
        head = b""
        while b"\r\n" not in head:
            d = s.recv(4096)
            if not d:
                break
            head += d
        s.close()
        return int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None
    except (OSError, ValueError, IndexError):
        return None


def served(host, port, token):
    t0 = time.monotonic()
    status = post(host, port, token)
    return {"status": status, "seconds": round(time.monotonic() - t0, 3)}


def is_closed(s):
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def trickle(host, port, token, n):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    held = []
    try:
        for i in range(n):
            try:
                s = dial(host, port, src_addr(i))
                s.sendall(b"POST /mcp HTTP/1.1\r\n")
                held.append(s)
            except OSError:
                pass
        out = {"opened": len(held)}
        t0 = time.monotonic()
        k = 0
        while time.monotonic() - t0 < 6:
            if k == 1:
                out.update(served(host, port, token))
            for s in held:
                try:
                    s.sendall(b"X-Trickle-%d: a\r\n" % k)
                except OSError:
                    pass
            k += 1
            time.sleep(0.5 if k == 1 else 1)
        out["closed_by_server"] = sum(1 for s in held if is_closed(s))
        return out
    finally:
        for s in held:
            s.close()


def guess(host, port, token, seconds):
    counts = {"compared": 0, "refused": 0}
    lock = threading.Lock()
    t0 = time.monotonic()
    stop = t0 + seconds

    def run(k):
        i = k
        while time.monotonic() < stop:
            st = post(host, port, "guess-%d" % i, src_addr(i % 60000))
            i += 8
            with lock:
                if st == 401:
                    counts["compared"] += 1
                elif st == 429:
                    counts["refused"] += 1

    ts = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # The time the guessing really took: a loaded machine stretches the last answers past
    # SECONDS, and the server's budget refills all the while.
    counts["seconds"] = round(time.monotonic() - t0, 3)
    return counts


def main():
    sc, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
    u = urlparse(url)
    if sc == "trickle":
        out = trickle(u.hostname, u.port, token, int(sys.argv[4]))
    elif sc == "guess":
        out = guess(u.hostname, u.port, token, float(sys.argv[4]))
    elif sc == "login":
        out = served(u.hostname, u.port, token)
    else:
        sys.exit("unknown scenario " + sc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
