#!/usr/bin/env bash
# local-exec.sh — median wall time of `sbx-exec NAME -- true` on a reused local sandbox,
# side by side with (a) a fresh bwrap sandbox per call, (b) nsenter into the same sandbox's
# namespaces, (c) /bin/true on the host (the floor: one process start). A second run with
# hyperfine's output through a pipe measures the relayed path (sbx-exec copying a pipe of
# its own to its caller's), against /bin/true writing to the same kind of pipe.
set -eu
runs=${RUNS:-300}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'sbx-delete benchexec >/dev/null 2>&1; rm -rf "$tmp"' EXIT
sbx-create benchexec >/dev/null
sup=$(cat "$XDG_STATE_HOME/sbx/default/benchexec/supervisor.pid")
serve=$(pgrep -f -P "$(pgrep -P "$(pgrep -P "$sup")")" "sbx-init serve" | head -1)
hyperfine -N -w 30 -r "$runs" --export-json "$tmp/r.json" \
	-n "sbx-exec (reused sandbox)" "sbx-exec -raw benchexec -- true" \
	-n "sbx-exec JSON mode" "sbx-exec benchexec -- true" \
	-n "(a) fresh bwrap per call" "bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev /bin/true" \
	-n "(b) nsenter into the sandbox" "nsenter -t $serve -U -m -p -i -u -n --preserve-credentials /bin/true" \
	-n "(c) /bin/true on the host" "/bin/true" >/dev/null 2>&1
hyperfine -N -w 30 -r "$runs" --output=pipe --export-json "$tmp/p.json" \
	-n "sbx-exec -raw, output relayed" "sbx-exec -raw benchexec -- true" \
	-n "/bin/true, output a pipe" "/bin/true" >/dev/null 2>&1
python3 - "$tmp/r.json" "$tmp/p.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
p = json.load(open(sys.argv[2]))["results"]
floor = r[-1]["median"]
print(f"{'command':34} {'median ms':>10} {'x floor':>8}")
for x in r:
    print(f"{x['command']:34} {x['median']*1000:10.2f} {x['median']/floor:8.2f}")
for x in p:
    print(f"{x['command']:34} {x['median']*1000:10.2f} {x['median']/p[-1]['median']:8.2f}")
print(f"sbx-exec is {r[2]['median']/r[0]['median']:.1f}x faster than a fresh bwrap per call")
PY
