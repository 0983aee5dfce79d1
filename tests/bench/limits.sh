#!/usr/bin/env bash
# limits.sh — what resource limits cost (issue 14): sbx-create and `sbx-exec -raw -- true`
# with the default limits (cgroup, capped home) side by side with the same build under
# -limits none, and /bin/true on the host (the floor). ROUNDS rounds alternate the two, so
# a change of load on a shared machine falls on both; each figure is the median over rounds
# of the per-round medians.
set -eu
. "$(dirname "$0")/lib.bash"
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
	creates_side_by_side "$tmp/create.$r.json" "$cruns" \
		"create, -limits none" "sbx-delete coff" "sbx-create -limits none -ttl 2m coff" \
		"create, limits on" "sbx-delete con" "sbx-create -ttl 2m con"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/medians.py" "$tmp" "$rounds" exec create --floor "/bin/true (floor)" \
	--diff "exec cost of limits (target <= +0.3 ms)" "exec, limits on" "exec, -limits none" \
	--diff "create cost of limits (target <= +5 ms)" "create, limits on" "create, -limits none" \
	--ratio "sbx-exec -raw -- true with limits, the floor's (target <= 3x)" "exec, limits on" "/bin/true (floor)"
