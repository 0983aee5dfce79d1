#!/usr/bin/env python3
"""abuse.py SCENARIO HOST:PORT [ARGS] — acp-server misused over raw sockets (no ACP library),
for tests/acp-server.bats. Prints one JSON document; every wait is bounded.

  idle TOKEN        a silent connection (how long until the server closes it) and, alongside,
                    an authenticated one that stays open past that deadline
  conncap N         N silent connections, then one more: is each of them still open?
  authfail TOKEN    wrong tokens over fresh connections until the source is blocked; then a
                    new connection with the right token
  flood TOKEN N     N silent connections, each from its own address of 127.0.0.0/8, held; then
                    the token holder logs in from 127.0.0.1 and opens a session: how long it took
  guess SECONDS     wrong tokens from 8 threads over fresh connections (each from its own
                    127.x address) for SECONDS: how many were compared (answered "wrong token")
  login TOKEN       one login and session/new from 127.0.0.1: how long it took
  sessions TOKEN N  N+1 session/new on one connection, then session/close of the first and one
                    more session/new; then one on a new connection (the first one's detached)
"""
import json
import resource
import select
import socket
import sys
import threading
import time

WAIT = 20  # seconds any single read may take


def conn(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=WAIT)
    s.settimeout(WAIT)
    return s


def send(s, i, method, params):
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())


LEFT = {}  # socket -> bytes read past the last line returned


def answer(s):
    """The next answer (a line with an id; notifications such as available_commands_update
    are skipped), or None when the server closed the connection."""
    buf = LEFT.pop(s, b"")
    while True:
        while b"\n" not in buf:
            try:
                d = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                return None
            if not d:
                return None
            buf += d
        line, buf = buf.split(b"\n", 1)
        m = json.loads(line)
        if "id" in m:
            LEFT[s] = buf
            return m


def closed_soon(s, within):
    """Whether the server closes s (EOF or reset) within `within` seconds without sending."""
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    finally:
        s.settimeout(WAIT)


def login(s, token):
    send(s, 0, "initialize", {"protocolVersion": 1})
    answer(s)
    send(s, 1, "authenticate", {"methodId": "bearer-token", "_meta": {"token": token}})
    return answer(s)


def idle(addr, token):
    quiet, ok = conn(addr), conn(addr)
    good = login(ok, token)
    t0 = time.monotonic()
    gone = closed_soon(quiet, WAIT)
    after = time.monotonic() - t0
    time.sleep(0.5)
    send(ok, 2, "session/new", {"cwd": "/tmp", "mcpServers": []})
    late = answer(ok)
    return {"closed": gone, "after": round(after, 1), "login": good,
            "authenticated_still_served": bool(late and "result" in late)}


def conncap(addr, n):
    held = [conn(addr) for _ in range(n)]
    extra = conn(addr)
    refused = closed_soon(extra, 3)
    still = [not closed_soon(s, 0.2) for s in held]
    return {"extra_closed": refused, "held_open": sum(still)}


def authfail(addr, token):
    failures, blocked_msg = 0, None
    for _ in range(50):
        s = conn(addr)
        send(s, 0, "initialize", {"protocolVersion": 1})
        if answer(s) is None:
            break  # refused at once: blocked
        for i in range(1, 4):
            send(s, i, "authenticate", {"methodId": "bearer-token", "_meta": {"token": "wrong-%d" % failures}})
            a = answer(s)
            if a is None:
                break
            failures += 1
            if "try again in" in a.get("error", {}).get("message", ""):
                blocked_msg = a["error"]["message"]
        s.close()
    s = conn(addr)
    send(s, 0, "initialize", {"protocolVersion": 1})
    first = answer(s)
    right = None
    if first is not None:
        send(s, 1, "authenticate", {"methodId": "bearer-token", "_meta": {"token": token}})
        right = answer(s)
    return {"failures": failures, "blocked_msg": blocked_msg, "right_token_served": right is not None,
            "refused_at_once": first is None}


def src_addr(i):
    """The i-th loopback address other than 127.0.0.1."""
    return "127.%d.%d.%d" % (1 + i // 62500, i // 250 % 250, i % 250 + 2)


def conn_from(addr, src):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    s.bind((src, 0))
    s.connect((host, int(port)))
    return s


def served(addr, token):
    """Login and session/new from 127.0.0.1: the answers and the seconds they took."""
    t0 = time.monotonic()
    good = new = None
    try:
        s = conn(addr)
        good = login(s, token)
        send(s, 2, "session/new", {"cwd": "/tmp", "mcpServers": []})
        new = answer(s)
        s.close()
    except OSError:
        pass  # refused or reset: not served
    took = time.monotonic() - t0
    return {"login": good, "session": bool(new and "result" in new), "seconds": round(took, 3)}


def flood(addr, token, n):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    held = []
    try:
        for i in range(n):
            try:
                held.append(conn_from(addr, src_addr(i)))
            except OSError:
                pass  # refused or reset: the server is full, which is the point
        time.sleep(0.5)  # let the server take in what it accepted
        out = served(addr, token)
        # Held still: not closed (a closed one reads as EOF or reset at once).
        pl = select.poll()
        for h in held:
            pl.register(h, select.POLLIN)
        gone = len(pl.poll(200))
        out.update({"flood_opened": len(held), "flood_open": len(held) - gone})
        return out
    finally:
        for h in held:
            h.close()


def guess(addr, seconds):
    counts = {"compared": 0, "refused": 0}
    lock = threading.Lock()
    t0 = time.monotonic()
    stop = t0 + seconds

    def run(k):
        i = k
        while time.monotonic() < stop:
            try:
                s = conn_from(addr, src_addr(i % 60000))
            except OSError:
                continue
            i += 8
            try:
                for j in range(3):
                    send(s, j, "authenticate", {"methodId": "bearer-token", "_meta": {"token": "guess-%d-%d" % (i, j)}})
                    a = answer(s)
                    if a is None:
                        break
                    msg = a.get("error", {}).get("message", "")
                    with lock:
                        counts["compared" if msg.endswith("wrong token") else "refused"] += 1
            except OSError:
                pass
            finally:
                s.close()

    ts = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # The time the guessing really took: a loaded machine stretches the last answers past
    # SECONDS, and the server's budget refills all the while.
    counts["seconds"] = round(time.monotonic() - t0, 3)
    return counts


def sessions(addr, token, n):
    s = conn(addr)
    login(s, token)
    got = []
    for i in range(n + 1):
        send(s, 10 + i, "session/new", {"cwd": "/tmp", "mcpServers": []})
        got.append(answer(s))
    send(s, 100, "session/close", {"sessionId": got[0]["result"]["sessionId"]})
    closed = answer(s)
    send(s, 101, "session/new", {"cwd": "/tmp", "mcpServers": []})
    after = answer(s)
    s.close()
    # Its sessions are detached and idle once the server has seen the connection end (it may
    # not have yet when the next one arrives): a new connection's session/new retires one.
    s = conn(addr)
    login(s, token)
    for i in range(50):
        send(s, 102 + i, "session/new", {"cwd": "/tmp", "mcpServers": []})
        again = answer(s)
        if not (again and "error" in again and "all in use" in again["error"].get("message", "")):
            break
        time.sleep(0.1)
    s.close()
    return {"made": sum(1 for g in got if g and "result" in g),
            "refused": [g["error"] for g in got if g and "error" in g],
            "closed": bool(closed and "result" in closed), "after_close": bool(after and "result" in after),
            "after_reconnect": bool(again and "result" in again)}


def main():
    sc, addr = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if sc == "idle":
        out = idle(addr, rest[0])
    elif sc == "conncap":
        out = conncap(addr, int(rest[0]))
    elif sc == "authfail":
        out = authfail(addr, rest[0])
    elif sc == "flood":
        out = flood(addr, rest[0], int(rest[1]))
    elif sc == "guess":
        out = guess(addr, float(rest[0]))
    elif sc == "login":
        out = served(addr, rest[0])
    elif sc == "sessions":
        out = sessions(addr, rest[0], int(rest[1]))
    else:
        sys.exit("unknown scenario " + sc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
