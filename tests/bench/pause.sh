#!/usr/bin/env bash
# pause.sh — -idle pause's two figures on the local backend (issue 34). 1: the next call on a
# paused sandbox (resume + first exec) side by side with what the same call costs when the
# sandbox was deleted instead (create + restore of the same ~200 MB home from its backup +
# first exec). 2: the memory 50 paused idle sandboxes hold: charged to their cgroups, held by
# their supervisors on the host, and the machine's MemAvailable before and after (noisy on a
# shared machine: said as measured).
set -eu
runs=${RUNS:-5}
count=${COUNT:-50}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
cleanup() {
	sbx-list 2>/dev/null | jq -r .name | while read -r n; do sbx-delete "$n" >/dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.bash"

bench_home "$tmp/src"
size=$(du -sm "$tmp/src" | cut -f1)
sbx-create -idle pause -ttl 2h benchpause >/dev/null
tar -cf - -C "$tmp/src" . | sbx-exec -raw benchpause -- tar -xf - -C /home/clawtainer
sbx-exec -raw benchpause -- sh -c 'setsid sleep 86400 >/dev/null 2>&1 </dev/null &'
backup=$(sbx-snapshot benchpause | jq -r .path)
hyperfine -N -w 1 -r "$runs" --export-json "$tmp/r.json" \
	-n "paused: resume + first exec" -p "sbx-pause benchpause" \
	"sbx-exec -raw benchpause -- true" \
	-n "deleted: create + restore + first exec" -p "sbx-delete benchnew" \
	"sh -c 'sbx-create -ttl 2h benchnew >/dev/null && sbx-restore -from $backup benchnew >/dev/null && sbx-exec -raw benchnew -- true'" \
	>/dev/null 2>"$tmp/hyperfine.err" || { cat "$tmp/hyperfine.err" >&2; exit 1; }
echo "home: ${size} MB, backup $(du -m "$backup" | cut -f1) MB (gzip, the default)"
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
res, new = r["paused: resume + first exec"], r["deleted: create + restore + first exec"]
for name, x in (("paused: resume + first exec", res), ("deleted: create + restore + first exec", new)):
    print(f"{name:40} median {x['median'] * 1000:9.1f} ms  (min {x['min'] * 1000:.1f}, max {x['max'] * 1000:.1f})")
print(f"resume is {new['median'] / res['median']:.0f}x faster")
PY
sbx-delete benchpause >/dev/null
sbx-delete benchnew >/dev/null

# 50 paused idle sandboxes, each with one idle process (a sleep) besides its service.
avail() { awk '/^MemAvailable:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo; }
sync
before=$(avail)
for i in $(seq 1 "$count"); do
	sbx-create -idle pause -ttl 2h "idle$i" >/dev/null
	sbx-exec -raw "idle$i" -- sh -c 'setsid sleep 86400 >/dev/null 2>&1 </dev/null &'
	sbx-pause "idle$i" >/dev/null
done
sleep 2
after=$(avail)
cg=0 sup=0
for i in $(seq 1 "$count"); do
	d=$XDG_STATE_HOME/sbx/default/idle$i
	for c in $(sed -n 's/^dir //p' "$d/cgroups"); do
		for f in memory.current memory.usage_in_bytes; do
			[ -r "$c/$f" ] && cg=$((cg + $(cat "$c/$f")))
		done
	done
	pid=$(cat "$d/supervisor.pid")
	sup=$((sup + $(awk '/^Pss:/ { printf "%.0f\n", $2 * 1024 }' "/proc/$pid/smaps_rollup")))
done
paused=$(sbx-list | jq -s 'map(select(.state == "paused")) | length')
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "$count sandboxes, $paused paused: charged to their cgroups $(mib "$cg") MiB ($(mib $((cg / count))) MiB each); supervisors' PSS $(mib "$sup") MiB ($(mib $((sup / count))) MiB each); MemAvailable fell by $(mib $((before - after))) MiB ($(mib $(((before - after) / count))) MiB each; other work on the machine moves this)"
