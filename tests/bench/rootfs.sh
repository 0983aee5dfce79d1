#!/usr/bin/env bash
# rootfs.sh — what the writable root costs (issue 31): sbx-create plus the first
# `sbx-exec -raw -- true` with the default writable root (overlays over idmapped clones, a tmpfs
# for the upper layers) side by side with -readonly-root, and `sbx-exec -raw -- true` on a
# reused sandbox of each, with /bin/true on the host (the floor). ROUNDS rounds alternate the
# two, so a change of load on a shared machine falls on both; each figure is the median over
# rounds of the per-round medians. Targets: create + first exec <= +10 %, exec unchanged.
set -eu
rounds=${ROUNDS:-5}
runs=${RUNS:-100}
cruns=${CREATE_RUNS:-12}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'for n in rw ro crw cro; do sbx-delete $n >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
sbx-create rw >/dev/null
sbx-create -readonly-root ro >/dev/null
for r in $(seq "$rounds"); do
	hyperfine -N -w 20 -r "$runs" --export-json "$tmp/exec.$r.json" \
		-n "exec, writable root" "sbx-exec -raw rw -- true" \
		-n "exec, -readonly-root" "sbx-exec -raw ro -- true" \
		-n "/bin/true (floor)" "/bin/true" >/dev/null 2>&1
	hyperfine -N -w 2 -r "$cruns" --export-json "$tmp/create.$r.json" \
		-p "sbx-delete cro" -n "create+exec, -readonly-root" \
		"sh -c 'sbx-create -readonly-root -ttl 2m cro >/dev/null && sbx-exec -raw cro -- true'" \
		-p "sbx-delete crw" -n "create+exec, writable root" \
		"sh -c 'sbx-create -ttl 2m crw >/dev/null && sbx-exec -raw crw -- true'" >/dev/null 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/medians.py" "$tmp" "$rounds" exec create --floor "/bin/true (floor)" \
	--diff "exec cost of the writable root (target: none)" "exec, writable root" "exec, -readonly-root" \
	--diff "create+exec cost of the writable root" "create+exec, writable root" "create+exec, -readonly-root" \
	--ratio "create+exec, writable root / -readonly-root (target <= 1.10x)" "create+exec, writable root" "create+exec, -readonly-root"
