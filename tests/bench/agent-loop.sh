#!/usr/bin/env bash
# agent-loop.sh — composition overhead of agent-loop per tool round trip: the median time of
# one `run: true` turn (fake-eliza, local backend, warm sandbox: llm-chat, sbx-touch, sbx-tool,
# sbx-touch, llm-chat, sbx-snapshot), side by side with the same programs run by hand with the
# same inputs. The difference is what agent-loop adds (history appends, JSON, spawning, logs).
set -eu
runs=${RUNS:-40}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home OPENAI_MODEL=fake-eliza
mkdir -p "$HOME"
trap 'sbx-delete benchhand >/dev/null 2>&1; sbx-delete benchloop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
python3 - "$runs" <<'PY'
import json, os, statistics, subprocess, sys, time

runs = int(sys.argv[1])
common = ["-backend", "local", "-namespace", "default"]

def run(argv, data=None):
    p = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return p.stdout

class Loop:
    """agent-loop driven through its pipes: a turn ends when the next prompt appears."""
    def __init__(self):
        self.p = subprocess.Popen(["agent-loop", "-session", "benchloop"] + common[:2],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.wait_prompt()

    def wait_prompt(self):
        buf = b""
        while not buf.endswith(b"User> "):
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("agent-loop ended early")
            buf += chunk

    def turn(self):
        t0 = time.perf_counter()
        self.p.stdin.write(b"run: true\n")
        self.p.stdin.flush()
        self.wait_prompt()
        return time.perf_counter() - t0

    def close(self):
        self.p.stdin.write(b"/exit\n")
        self.p.stdin.close()
        self.p.wait()

class Hand:
    """The same steps, one program after the other."""
    def __init__(self):
        run(["sbx-create"] + common + ["benchhand"])
        self.tools = json.loads(run(["sbx-tool", "-list"]))
        self.msgs = [{"role": "system", "content": "You are a helpful assistant."}]

    def llm(self):
        req = json.dumps({"model": "fake-eliza", "messages": self.msgs, "tools": self.tools})
        out = run(["llm-chat", "-stream"], req.encode()).decode().strip().splitlines()
        msg = json.loads(out[-1])["message"]
        self.msgs.append(msg)
        return msg

    def turn(self):
        t0 = time.perf_counter()
        self.msgs.append({"role": "user", "content": "run: true"})
        msg = self.llm()
        for call in msg.get("tool_calls", []):
            run(["sbx-touch"] + common + ["benchhand"])
            out = run(["sbx-tool"] + common + ["-toolset", "basic", "-tool-timeout", "2m0s",
                       "-homedir", "/home/clawtainer", "benchhand"], json.dumps(call).encode())
            self.msgs.append(json.loads(out))
            run(["sbx-touch"] + common + ["benchhand"])
        self.llm()
        run(["sbx-snapshot"] + common + ["benchhand"])
        return time.perf_counter() - t0

loop, hand = Loop(), Hand()
for _ in range(3):          # warm-up: the first turn creates the sandbox
    loop.turn(); hand.turn()
a, b = [], []
for _ in range(runs):       # interleaved, so both see the same machine load
    a.append(loop.turn()); b.append(hand.turn())
loop.close()
ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
print(f"{'one run: true turn (1 tool round trip)':42} {'median ms':>10}")
print(f"{'agent-loop':42} {ma:10.2f}")
print(f"{'same steps by hand (baseline)':42} {mb:10.2f}")
print(f"{'composition overhead per tool round trip':42} {ma - mb:10.2f}")
print(f"{'ratio agent-loop / by hand':42} {ma / mb:10.2f}")
PY
