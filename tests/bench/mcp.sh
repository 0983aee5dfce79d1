#!/usr/bin/env bash
# mcp.sh — one MCP tools/call round trip of run_command `true` over stdio (sbx-mcp running,
# warm sandbox: a request line in, the result line out), side by side with the same call done
# by hand: `sbx-tool NAME < call.json` started for each call. Both are timed by the same driver
# (each sbx-tool started as a shell would: fork and exec, stdin from the file); /bin/true
# started the same way is the floor. Target: sbx-mcp within 1.2x of sbx-tool by hand. Medians;
# the baseline runs before and after, so drift shows.
set -eu
runs=${RUNS:-300}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'sbx-delete benchtool >/dev/null 2>&1; rm -rf "$tmp"' EXIT
sbx-create benchtool >/dev/null
printf '%s' '{"id":"1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"true\"}"}}' >"$tmp/call.json"
python3 - "$runs" "$tmp/call.json" <<'PY'
import json, os, statistics, subprocess, sys, time
runs, callfile = int(sys.argv[1]), sys.argv[2]

def by_hand(argv, n):
    t = []
    for _ in range(n):
        with open(callfile, "rb") as f:
            s = time.perf_counter()
            r = subprocess.run(argv, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            t.append(time.perf_counter() - s)
        assert r.returncode == 0, r
    return statistics.median(t)

def mcp(n):
    p = subprocess.Popen(["sbx-mcp", "-session", "benchmcp"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    def rpc(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        p.stdin.flush()
        r = json.loads(p.stdout.readline())
        assert "result" in r, r
        return r["result"]
    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    call = {"name": "run_command", "arguments": {"command": "true"}}
    for i in range(20):		# the first call makes the sandbox; the rest warm up
        rpc(1 + i, "tools/call", call)
    t = []
    for i in range(n):
        s = time.perf_counter()
        r = rpc(100 + i, "tools/call", call)
        t.append(time.perf_counter() - s)
        assert r["structuredContent"]["exit_code"] == 0
    p.stdin.close()
    p.wait()
    return statistics.median(t)

tool = ["sbx-tool", "benchtool"]
by_hand(tool, 20)
b1 = by_hand(tool, runs)
m = mcp(runs)
b2 = by_hand(tool, runs)
floor = by_hand(["/bin/true"], runs)
b = (b1 + b2) / 2
print(f"{'run_command true, one call (%d runs)' % runs:44} {'median ms':>10} {'x by hand':>10}")
for name, v in [("sbx-tool by hand (before)", b1), ("sbx-mcp tools/call over stdio", m),
                ("sbx-tool by hand (after)", b2), ("/bin/true started the same way", floor)]:
    print(f"{name:44} {v*1000:10.2f} {v/b:10.2f}")
print(f"sbx-mcp: {m/b:.2f}x sbx-tool by hand (target: within 1.2x)")
PY
