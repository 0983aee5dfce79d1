#!/usr/bin/env bash
# kube-claim.sh — the first command in a new kubernetes sandbox, two ways on one
# kube-test-server, interleaved: `sbx-create NAME` + `sbx-exec NAME -- true` (a Sandbox made,
# its pod started) against `sbx-create -warm-pool sbx NAME` + the same exec (a ready Sandbox of
# images/sbx-warm-pool's pool claimed). Deletes and the pool's refill are not timed. Prints
# the medians and their ratio.
# Env: SBX_BIN (programs), BENCH_RUNS (sandboxes per way, default 11), BENCH_READY_DELAY
# (the server's pod start, a Go duration, default 1s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export SBX_BIN=${SBX_BIN:-$top/bin}
export PATH="$SBX_BIN:$PATH"
runs=${BENCH_RUNS:-11}
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-claim-bench.XXXXXX")
server_pid= kubectl=

cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

. "$here/lib.bash"	# now_ns, median, bench_kts_start
bench_kts_start "$top" "$work" "${BENCH_READY_DELAY:-1s}"
"$kubectl" apply -f "$top/images/sbx-warm-pool/sbx-warm-pool.yaml" >/dev/null
pool_full() {
	[ "$("$kubectl" get sandboxwarmpool sbx -o jsonpath='{.status.readyReplicas}')" = 2 ]
}

: >"$work/cold.t"
: >"$work/claim.t"
for i in $(seq 1 "$runs"); do
	wait_until -t 60 pool_full
	t0=$(now_ns)
	sbx-create "cold$i" >/dev/null
	sbx-exec -raw "cold$i" -- true </dev/null
	t1=$(now_ns)
	echo $(( (t1 - t0) / 1000 )) >>"$work/cold.t"
	t0=$(now_ns)
	sbx-create -warm-pool sbx "warm$i" >/dev/null
	sbx-exec -raw "warm$i" -- true </dev/null
	t1=$(now_ns)
	echo $(( (t1 - t0) / 1000 )) >>"$work/claim.t"
	sbx-delete "cold$i" "warm$i" >/dev/null
done
c=$(median <"$work/cold.t")
w=$(median <"$work/claim.t")
printf '| first exec in a new sandbox (median of %d) | Sandbox create + exec | claim + exec | ratio |\n' "$runs"
printf '|---|---|---|---|\n'
printf '| ready delay %s | %d.%01d ms | %d.%01d ms | %s× |\n' "${BENCH_READY_DELAY:-1s}" \
	$((c / 1000)) $((c % 1000 / 100)) $((w / 1000)) $((w % 1000 / 100)) \
	"$(awk -v a="$w" -v b="$c" 'BEGIN { printf "%.2f", a / b }')"
