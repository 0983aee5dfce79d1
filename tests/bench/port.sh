#!/usr/bin/env bash
# port.sh — sbx-port against a direct connection inside the same network namespace, side by
# side: one HTTP server in a sandbox (python3 -m http.server) serving a file of SIZE_MB (256)
# MiB and a small one; the baseline is curl run in the sandbox itself (its own loopback), the
# other curl on the host through sbx-port. Throughput: median of RUNS (7) downloads of the big
# file; latency: median of 50 requests of the small one (connect, request, answer, close), the
# two paths taken in turn. Also sbx-port's own CPU time (user + system, from /proc) per GiB
# relayed over the downloads: what the relay costs, whatever the load does to the ratios.
set -eu
runs=${RUNS:-7}
size_mb=${SIZE_MB:-256}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
export BATS_FILE_TMPDIR=$tmp XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
# shellcheck source=../helpers.bash
. "$here/../helpers.bash"	# wait_until
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	sbx-delete benchport >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sbx-create -limits none benchport >/dev/null
sbx-exec benchport -- sh -c "mkdir -p /tmp/www && cd /tmp/www && head -c $((size_mb << 20)) /dev/zero >big &&
	echo hi >small && setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &" >/dev/null
sbx-port benchport 8000 >"$tmp/port.out" &
pid=$!
wait_until -p "$pid" test -s "$tmp/port.out"
url=$(jq -r .url "$tmp/port.out")
wait_until curl -sf -o /dev/null "${url}small"
get='curl -sS -o /dev/null -w %{speed_download}\n'
lat='curl -sS -o /dev/null -w %{time_total}\n'
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
cpu0=$(cpu)
for ((i = 0; i < runs; i++)); do
	sbx-exec -raw benchport -- $get http://127.0.0.1:8000/big >>"$tmp/direct"
	$get "${url}big" >>"$tmp/port"
done
echo $(($(cpu) - cpu0)) >"$tmp/cpu"
# one curl process per path, 50 requests each: the process start is not what is measured
sbx-exec -raw benchport -- sh -c 'for i in $(seq 50); do
	curl -sS -o /dev/null -w "%{time_total}\n" http://127.0.0.1:8000/small; done' >"$tmp/direct.lat"
for i in $(seq 50); do $lat "${url}small"; done >"$tmp/port.lat"
python3 - "$tmp" "$size_mb" "$runs" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
d, size, runs, tck = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
med = lambda f: statistics.median(float(x) for x in open(f"{d}/{f}").read().split())
tp = {k: med(k) for k in ("direct", "port")}
lt = {k: med(k + ".lat") for k in ("direct", "port")}
print(f"{size} MiB download (median of {runs}) and a small request (median of 50)")
print(f"{'path':42} {'MiB/s':>8} {'x direct':>9} {'ms/req':>8}")
for k, name in (("direct", "inside the sandbox, its loopback (baseline)"), ("port", "from the host through sbx-port")):
    print(f"{name:42} {tp[k] / 2**20:8.0f} {tp[k] / tp['direct']:9.2f} {lt[k] * 1000:8.2f}")
cpu = int(open(f"{d}/cpu").read()) / tck
print(f"sbx-port's CPU time: {cpu / (int(size) * int(runs) / 1024):.2f} s per GiB relayed")
PY
