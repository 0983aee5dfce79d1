#!/usr/bin/env bash
# limits.sh — what resource limits cost (issue 14): sbx-create and `sbx-exec -raw -- true`
# with the default limits (cgroup, capped home) side by side with the same build under
# -limits none, and /bin/true on the host (the floor). Medians.
set -eu
runs=${RUNS:-300}
cruns=${CREATE_RUNS:-40}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'for n in lon loff con coff; do sbx-delete $n >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
uptime
sbx-create lon >/dev/null
sbx-create -limits none loff >/dev/null
hyperfine -N -w 30 -r "$runs" --export-json "$tmp/exec.json" \
	-n "exec, limits on" "sbx-exec -raw lon -- true" \
	-n "exec, -limits none" "sbx-exec -raw loff -- true" \
	-n "/bin/true (floor)" "/bin/true" >/dev/null 2>&1
hyperfine -N -w 3 -r "$cruns" --export-json "$tmp/create.json" \
	-p "sbx-delete con" -n "create, limits on" "sbx-create -ttl 2m con" \
	-p "sbx-delete coff" -n "create, -limits none" "sbx-create -limits none -ttl 2m coff" \
	>/dev/null 2>&1
uptime
python3 - "$tmp/exec.json" "$tmp/create.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["results"]
c = json.load(open(sys.argv[2]))["results"]
floor = e[2]["median"]
print(f"{'command':24} {'median ms':>10} {'x floor':>8}")
for x in e + c:
    print(f"{x['command']:24} {x['median']*1000:10.3f} {x['median']/floor:8.2f}")
print(f"exec cost of limits:   {(e[0]['median'] - e[1]['median'])*1000:+.3f} ms (target <= +0.3 ms)")
print(f"create cost of limits: {(c[0]['median'] - c[1]['median'])*1000:+.3f} ms (target <= +5 ms)")
print(f"sbx-exec -raw -- true with limits: {e[0]['median']/floor:.2f}x the floor (target <= 3x)")
PY
