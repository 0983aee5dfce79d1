#!/usr/bin/env python3
"""The geminicli toolset against gemini-cli-core 0.61.0, case by case (tests/geminicli-parity.bats).

usage: parity.py CORE WORK SANDBOX|- [ID-PREFIX...]

Every case of cases.py runs three ways on the same generated workspace: through gemini-cli's
real tool classes (gemini-run.mjs, one node process for all cases), through geminicli-toolbox
directly (not run_shell_command, which has no helper), and through `sbx-tool -toolset
geminicli` in the local sandbox SANDBOX (its home is the workspace). What the model would see
is compared after the normalisations below; for write_file and replace the files left on disk
are compared too. Prints each difference, then one line per way with the exact count, and
writes the figures to WORK/summary.json. Exit 0 when every case matches or is listed in
KNOWN with its reason, and both ways reach 98 %.

A case's parameters may name the workspace as <WS> (absolute paths, as models mostly send
them); each way fills in its own.

Normalisations (nothing else is touched):
  * the workspace's path becomes <WS> (gemini-cli and the toolbox run in WORK/<way>/<id>,
    sbx-tool in the sandbox home);
  * process ids become <N> (`PID: n`, `Process Group PGID: n`, `Background PIDs: n, m`);
  * a cut result ("Output too large. …") is compared as the whole text in the file it names
    (each side's own temp dir), normalised as below, after checking that the cut shown is
    exactly formatTruncatedToolOutput of that text (the process ids inside change the
    lengths, so the cut texts themselves cannot be compared);
  * failures compare as `ERROR <message>`: gemini-cli's error.message, the toolbox's stderr
    (exit 1, newline added), sbx-tool's upstream wrapping `Error: tool "<name>" failed (exit
    code 1): <message>` or the registry's `Error calling tool "<name>": failed to run tool:
    <message>` (upstream-behaviour.md §6.4-6.5, kept on purpose).
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as casegen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SANDBOX_HOME = "/home/clawtainer"
MUTATING = ("write_file", "replace")
TARGET = 0.98

# Cases whose difference is deliberate (README, "The geminicli toolset"): tool:name → reason.
KNOWN = {
    "read_file:outside-workspace": "no workspace confinement: the sandbox is the boundary",
    "read_file:cut-in-a-pair": "a line cut inside a UTF-16 surrogate pair ends in U+FFFD, "
                                   "not a lone surrogate (JSON text must be valid UTF-8)",
    "grep_search:pcre2-backreference": "PCRE2, not ripgrep's Rust regex: backreferences work",
}

# Lists a workspace's regular files and symbolic links with a digest of each, the same way
# on the host and in the sandbox.
TREE = ("find . -mindepth 1 \\( -type f -o -type l \\) -not -path './.git/*' -print0 | sort -z | "
        "while IFS= read -r -d '' f; do if [ -L \"$f\" ]; then echo \"$f -> $(readlink \"$f\")\"; "
        "else echo \"$f $(sha256sum <\"$f\" | cut -c1-16)\"; fi; done")
RESET = "cd && find . -mindepth 1 -delete && "  # the sandbox home, emptied


def sort_grep_files(text):
    """grep_search's file blocks in path order: gemini-cli gives them in the order rg's four
    threads finish, which changes from run to run."""
    if not text.startswith("Found ") or "\n---\nFile: " not in text:
        return text
    head, *blocks = text.split("\n---\nFile: ")
    blocks[-1] = blocks[-1].removesuffix("\n---")
    return head + "".join("\n---\nFile: " + b for b in sorted(blocks)) + "\n---"


def js_units(text):
    return text.encode("utf-16-le", "surrogatepass")


def js_slice(units, a, b):
    """String#slice on UTF-16 units; a lone surrogate becomes U+FFFD, as in JSON output."""
    return units[2 * a:2 * b].decode("utf-16-le", "surrogatepass").encode("utf-8", "replace").decode()


def format_cut(full, path, threshold=40000):
    """gemini-cli's formatTruncatedToolOutput."""
    units = js_units(full)
    n, head = len(units) // 2, threshold // 5
    tail = threshold - head
    return (f"Output too large. Showing first {head:,} and last {tail:,} characters. For full output see: {path}\n"
            f"{js_slice(units, 0, head)}\n\n... [{n - head - tail:,} characters omitted] ...\n\n"
            f"{js_slice(units, n - tail, n)}")


def uncut(text, read):
    """(whole text, whether the cut shown is exactly gemini-cli's) for a cut result."""
    m = re.match(r"Output too large\. .*? For full output see: (\S+)\n", text)
    if not m:
        return text, True
    full = read(m.group(1))
    return "CUT " + full, text == format_cut(full, m.group(1))


def norm(text, ws, tool):
    if tool == "grep_search":
        text = sort_grep_files(text)
    text = text.replace(ws, "<WS>")
    text = re.sub(r"(PID: |Process Group PGID: )\d+", r"\1<N>", text)
    text = re.sub(r"Background PIDs: \d+(, \d+)*", "Background PIDs: <N>", text)
    text = re.sub(r"For full output see: \S+", "For full output see: <FILE>", text)
    return text


def parts_text(parts):
    """A Parts list as gemini-run.mjs writes llmContent: text parts as they are, an inline
    part as JSON.stringify gives {inlineData: {data, mimeType}}, joined by newlines."""
    out = []
    for p in parts:
        if "inlineData" in p:
            d = p["inlineData"]
            out.append('{"inlineData":{"data":%s,"mimeType":%s}}' % (json.dumps(d["data"]), json.dumps(d["mimeType"])))
        else:
            out.append(p["text"])
    return "\n".join(out)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, timeout=kw.pop("timeout", 120), **kw)


def params_in(c, ws):
    """The case's parameters with <WS> (an absolute path into the workspace) filled in."""
    return json.loads(json.dumps(c["params"]).replace("<WS>", ws))


def host_file(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def sandbox_file(sandbox):
    return lambda path: run(["sbx-exec", "-raw", sandbox, "--", "cat", path]).stdout.decode(errors="replace")


def whole(text, read):
    full, ok = uncut(text, read)
    return full if ok else "BAD CUT " + text


def tree(d, tool):
    if tool not in MUTATING:
        return ""
    return run(["bash", "-c", TREE], cwd=d).stdout.decode(errors="replace")


def gemini_side(core, work, todo):
    root = os.path.join(work, "g")
    for c in todo:
        casegen.build(os.path.join(root, c["id"]), c["setup"])
    with open(os.path.join(work, "cases.jsonl"), "w") as f:
        for c in todo:
            f.write(json.dumps({"id": c["id"], "tool": c["tool"],
                                "params": params_in(c, os.path.join(root, c["id"]))}) + "\n")
    out = os.path.join(work, "gemini.jsonl")
    r = run(["node", os.path.join(HERE, "gemini-run.mjs"), core, os.path.join(work, "cases.jsonl"),
             root, out], timeout=600)
    if r.returncode != 0:
        sys.exit("gemini-run.mjs failed: " + r.stderr.decode(errors="replace"))
    res, tools = {}, {c["id"]: c["tool"] for c in todo}
    for line in open(out):
        o = json.loads(line)
        d = os.path.join(root, o["id"])
        res[o["id"]] = {
            "text": norm(whole("ERROR " + o["error"] if "error" in o else o["output"], host_file), d, tools[o["id"]]),
            "tree": tree(d, tools[o["id"]]),
        }
    return res


def toolbox_side(work, todo):
    root, res = os.path.join(work, "t"), {}
    for c in todo:
        if c["tool"] == "run_shell_command":
            continue
        d = os.path.join(root, c["id"])
        casegen.build(d, c["setup"])
        r = run(["geminicli-toolbox", "--workdir=" + d, "--parts", c["tool"]],
                input=json.dumps(params_in(c, d)).encode())
        if r.returncode == 0:
            text = parts_text(json.loads(r.stdout)["parts"])
        else:
            text = "ERROR " + r.stderr.decode(errors="replace").removesuffix("\n")
        res[c["id"]] = {"text": norm(text, d, c["tool"]), "tree": tree(d, c["tool"])}
    return res


def sandbox_side(sandbox, work, todo):
    res = {}
    for c in todo:
        # the workspace built on the host, carried into the emptied home as a tar stream
        d = os.path.join(work, "s", c["id"])
        casegen.build(d, c["setup"])
        tar = run(["tar", "-C", d, "-cf", "-", "."]).stdout
        r = run(["sbx-exec", "-raw", sandbox, "--", "sh", "-c", RESET + "tar -xpf - --no-same-owner"],
                input=tar)
        if r.returncode != 0:
            sys.exit(f"sandbox setup of {c['id']} failed: {r.stderr.decode(errors='replace')}")
        call = {"id": c["id"], "type": "function",
                "function": {"name": c["tool"], "arguments": json.dumps(params_in(c, SANDBOX_HOME))}}
        r = run(["sbx-tool", "-toolset", "geminicli", sandbox], input=json.dumps(call).encode())
        try:
            doc = json.loads(r.stdout)
            content = parts_text(doc["parts"]) if "parts" in doc else doc["content"]
        except (ValueError, KeyError):
            content = "SBX-TOOL FAILED %d: %s" % (r.returncode, r.stderr.decode(errors="replace"))
        m = re.match(r'Error: tool "[a-z_]+" failed \(exit code 1\): (.*)\Z', content, re.S) or \
            re.match(r'Error calling tool "[a-z_]+": failed to run tool: (.*)\Z', content, re.S)
        if m:
            content = "ERROR " + m.group(1)
        tree = ""
        if c["tool"] in MUTATING:
            t = run(["sbx-exec", "-raw", sandbox, "--", "bash", "-c", "cd && " + TREE])
            tree = t.stdout.decode(errors="replace")
        res[c["id"]] = {"text": norm(whole(content, sandbox_file(sandbox)), SANDBOX_HOME, c["tool"]),
                        "tree": tree}
    return res


def known(cid):
    return KNOWN.get(re.sub(r"-\d{3}-", ":", cid, count=1))


def differs(c, g, o):
    if g["text"] != o["text"]:
        return True
    return c["tool"] in MUTATING and g["tree"] != o["tree"]


def show(way, c, g, o):
    print(f"--- {way} {c['id']} ({c['tool']} {json.dumps(c['params'])[:300]})")
    if g["text"] != o["text"]:
        print("gemini-cli: " + json.dumps(g["text"])[:1500])
        print("sbx:        " + json.dumps(o["text"])[:1500])
    else:
        print("files differ:\ngemini-cli:\n" + g["tree"] + "sbx:\n" + o["tree"])


def main():
    core, work, sandbox = sys.argv[1:4]
    prefixes = sys.argv[4:]
    todo = [c for c in casegen.cases() if not prefixes or any(c["id"].startswith(p) for p in prefixes)]
    ids = [c["id"] for c in todo]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    g = gemini_side(core, work, todo)
    t1 = time.time()
    ways = {"toolbox": toolbox_side(work, todo)}
    t2 = time.time()
    if sandbox != "-":
        ways["sbx-tool"] = sandbox_side(sandbox, work, todo)
    print("time: gemini-cli %.1fs, toolbox %.1fs, sbx-tool %.1fs" % (t1 - t0, t2 - t1, time.time() - t2),
          file=sys.stderr)
    summary, ok = {"cases": len(todo), "tools": sorted({c["tool"] for c in todo})}, True
    for way, res in ways.items():
        n = exact = 0
        for c in todo:
            if c["id"] not in res:
                continue
            n += 1
            if not differs(c, g[c["id"]], res[c["id"]]):
                exact += 1
            elif known(c["id"]):
                print(f"--- {way} {c['id']}: deliberate difference: {known(c['id'])}")
            else:
                show(way, c, g[c["id"]], res[c["id"]])
                ok = False
        summary[way] = {"cases": n, "exact": exact, "ratio": round(exact / n, 4) if n else 0}
        print(f"{way}: {exact} of {n} cases exact ({100 * exact / max(n, 1):.1f}%)")
        ok = ok and n > 0 and exact / n >= TARGET
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({"gemini-cli": g, **ways}, f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
