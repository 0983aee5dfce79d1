#!/usr/bin/env bash
# acp.sh — acp-server under load on the local backend with fake-eliza: 50 and 200 concurrent
# clients, each one session with one approved tool turn (run: echo), driven by the official
# ACP client library. Baseline, same run: one client alone (p50 ratio = cost of concurrency).
# Also the server's resident memory per idle session (200 sessions, their connections open,
# then closed). Usage: tests/bench/acp.sh   Env: SBX_BIN (default: ./bin).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export SBX_TOP=$(cd "$here/../.." && pwd)
bin=${SBX_BIN:-$SBX_TOP/bin}
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/acp-bench.XXXXXX")
export HOME="$work/home" XDG_STATE_HOME="$work/state" OPENAI_MODEL=fake-eliza
unset SANDBOX_BACKEND KUBECONFIG GEMINI_API_KEY OPENAI_API_KEY
mkdir -p "$HOME" "$XDG_STATE_HOME"
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=../helpers.bash
. "$SBX_TOP/tests/helpers.bash"	# wait_until
# shellcheck source=../acp/common.bash
. "$SBX_TOP/tests/acp/common.bash"
acp_sdk

start() {
	# 200 clients from one address, none authenticating: a loopback-only benchmark setting.
	acp-server -listen 127.0.0.1:0 -backend local -no-auth -max-conns-per-source 0 -max-sessions 10000 2>"$work/server.log" &
	pid=$!
	wait_until -p "$pid" grep -q 'serving ACP address="[^"]*"' "$work/server.log" ||
		{ echo "acp.sh: acp-server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
	addr=$(sed -n 's/.*serving ACP address="\([^"]*\)".*/\1/p' "$work/server.log")
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

start
node "$here/acp-load.mjs" turns "$addr" 1 >"$work/r1"
node "$here/acp-load.mjs" turns "$addr" 50 >"$work/r50"
stop
start
node "$here/acp-load.mjs" turns "$addr" 200 >"$work/r200"
stop

start
base=$(rss_kib)
mkfifo "$work/hold"
node "$here/acp-load.mjs" sessions "$addr" 200 <"$work/hold" >"$work/sess" &
load=$!
exec 9>"$work/hold"
wait_until -t 60 -p "$load" grep -q ready "$work/sess"
open_kib=$(rss_kib)
exec 9>&-
wait "$load"
sleep 1	# let the connection threads exit before reading the figure
closed_kib=$(rss_kib)
stop

date=$(date -u +%F)
printf '%-40s %8s %8s %8s %9s %7s\n' "acp-server bench $date" "clients" "failed" "p50 ms" "p99 ms" "turns/s"
for f in r1 r50 r200; do
	jq -r '[.clients, .failed, .p50_ms, .p99_ms, .turns_per_s] | @tsv' "$work/$f"
done | awk -v b="$(jq .p50_ms "$work/r1")" '{
	name = ($1 == 1) ? "one client (baseline)" : $1 " concurrent clients"
	printf "%-40s %8d %8d %8.1f %9.1f %7.1f   p50 x%.2f, p99/p50 %.1f\n", name, $1, $2, $3, $4, $5, $3 / b, $4 / $3
}'
awk -v b="$base" -v o="$open_kib" -v c="$closed_kib" 'BEGIN {
	printf "server RSS: %d KiB empty; +%.1f KiB per idle session (connections open), +%.1f KiB (closed)\n",
		b, (o - b) / 200, (c - b) / 200
}'
