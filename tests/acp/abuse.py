#!/usr/bin/env python3
"""abuse.py SCENARIO HOST:PORT [ARGS] — acp-server misused over raw sockets (no ACP library),
for tests/acp-server.bats. Prints one JSON document; every wait is bounded.

  idle TOKEN        a silent connection (how long until the server closes it) and, alongside,
                    an authenticated one that stays open past that deadline
  conncap N         N silent connections, then one more: is each of them still open?
  authfail TOKEN    wrong tokens over fresh connections until the source is blocked; then a
                    new connection with the right token
"""
import json
import socket
import sys
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


def main():
    sc, addr = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if sc == "idle":
        out = idle(addr, rest[0])
    elif sc == "conncap":
        out = conncap(addr, int(rest[0]))
    elif sc == "authfail":
        out = authfail(addr, rest[0])
    else:
        sys.exit("unknown scenario " + sc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
