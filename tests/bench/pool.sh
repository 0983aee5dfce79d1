#!/usr/bin/env bash
# pool.sh — a session's first tool call on the local backend (issue 32), side by side with a
# bare `bwrap --unshare-all … true` (the baseline): sbx-create + the first sbx-exec on a spec
# sbx-pool keeps warm (the pooled sandbox made before each run, not timed), and, without a
# pool, sbx-create + first sbx-exec + sbx-delete. Each sbx pair runs under one `sh -c` (a
# process start more than the baseline, counted against sbx). ROUNDS rounds alternate them;
# each figure is the median over rounds of the per-round medians.
set -eu
. "$(dirname "$0")/lib.bash"
rounds=${ROUNDS:-3}
runs=${RUNS:-15}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'sbx-delete pw >/dev/null 2>&1; sbx-delete pc >/dev/null 2>&1; sbx-pool -size 0 -once >/dev/null 2>&1; rm -rf "$tmp"' EXIT
bwrap_true="bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev /bin/true"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	hyperfine -N -w 2 -r "$runs" --export-json "$tmp/first.$r.json" \
		-p true -n "bwrap --unshare-all true" "$bwrap_true" \
		-p true -n "sh -c true (the wrapper alone)" "sh -c true" \
		-p "sh -c 'sbx-delete pw >/dev/null; sbx-pool -size 1 -once >/dev/null'" \
		-n "pooled: create + first exec" "sh -c 'sbx-create pw >/dev/null && sbx-exec -raw pw -- true'" \
		-p "sh -c 'sbx-delete pc >/dev/null'" \
		-n "cold: create + exec + delete" "sh -c 'sbx-create pc >/dev/null && sbx-exec -raw pc -- true && sbx-delete pc >/dev/null'" \
		>/dev/null 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/medians.py" "$tmp" "$rounds" first --floor "bwrap --unshare-all true" \
	--ratio "pooled create + first exec, bwrap's (target <= 1x)" "pooled: create + first exec" "bwrap --unshare-all true" \
	--ratio "cold create + first exec + delete, bwrap's (target <= 3x)" "cold: create + exec + delete" "bwrap --unshare-all true"
