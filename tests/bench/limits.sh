#!/usr/bin/env bash
# limits.sh — what resource limits cost (issue 14): sbx-create and `sbx-exec -raw -- true`
# with the default limits (cgroup, capped home) side by side with the same build under
# -limits none, and /bin/true on the host (the floor). ROUNDS rounds alternate the two, so
# a change of load on a shared machine falls on both; each figure is the median over rounds
# of the per-round medians.
set -eu
rounds=${ROUNDS:-5}
runs=${RUNS:-100}
cruns=${CREATE_RUNS:-12}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'for n in lon loff con coff; do sbx-delete $n >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
sbx-create lon >/dev/null
sbx-create -limits none loff >/dev/null
for r in $(seq "$rounds"); do
	hyperfine -N -w 20 -r "$runs" --export-json "$tmp/exec.$r.json" \
		-n "exec, limits on" "sbx-exec -raw lon -- true" \
		-n "exec, -limits none" "sbx-exec -raw loff -- true" \
		-n "/bin/true (floor)" "/bin/true" >/dev/null 2>&1
	hyperfine -N -w 2 -r "$cruns" --export-json "$tmp/create.$r.json" \
		-p "sbx-delete coff" -n "create, -limits none" "sbx-create -limits none -ttl 2m coff" \
		-p "sbx-delete con" -n "create, limits on" "sbx-create -ttl 2m con" \
		>/dev/null 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics as st, sys
d, n = sys.argv[1], int(sys.argv[2])
med = {}
for r in range(1, n + 1):
    for kind in ("exec", "create"):
        for x in json.load(open(f"{d}/{kind}.{r}.json"))["results"]:
            med.setdefault(x["command"], []).append(x["median"] * 1000)
m = {k: st.median(v) for k, v in med.items()}
floor = m["/bin/true (floor)"]
print(f"{'command':24} {'median ms':>10} {'x floor':>8}")
for k, v in m.items():
    print(f"{k:24} {v:10.3f} {v / floor:8.2f}")
def diff(a, b):
    return st.median(x - y for x, y in zip(med[a], med[b]))
print(f"exec cost of limits:   {diff('exec, limits on', 'exec, -limits none'):+.3f} ms (target <= +0.3 ms)")
print(f"create cost of limits: {diff('create, limits on', 'create, -limits none'):+.3f} ms (target <= +5 ms)")
print(f"sbx-exec -raw -- true with limits: {m['exec, limits on'] / floor:.2f}x the floor (target <= 3x)")
PY
