#!/usr/bin/env bash
# secrets.sh — HTTPS download throughput of one file from a test host (a network namespace on
# this machine, tests/netns.bash), side by side: through sbx-proxy as a plain CONNECT tunnel
# (-allow-host, the baseline) and through its TLS interception for a -secret host (TLS
# terminated and made again, the placeholder replaced in the request). Each figure is the
# median of RUNS (5) downloads, the two taken in turn. Needs root (ip netns).
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "secrets.sh: not run: making the test host's network namespace needs root"
	exit 0
fi
runs=${RUNS:-5}
size_mb=${SIZE_MB:-256}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
export BATS_FILE_TMPDIR=$tmp XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
# shellcheck source=../helpers.bash
. "$here/../helpers.bash"	# wait_until
# shellcheck source=../netns.bash
. "$here/../netns.bash"
cleanup() {
	sbx-delete benchtunnel >/dev/null 2>&1 || true
	sbx-delete benchtls >/dev/null 2>&1 || true
	[ -f "$tmp/netns/sserver.pid" ] && kill "$(cat "$tmp/netns/sserver.pid")" 2>/dev/null
	netns_down
	rm -rf "$tmp"
}
trap cleanup EXIT
netns_up
head -c "$((size_mb << 20))" /dev/zero >"$tmp/netns/www/big.bin"
# OpenSSL's own server (-WWW: files of its directory), so the server is not the bottleneck
# (Python's ssl module sends about 20 MiB/s here).
(cd "$tmp/netns/www" && exec ip netns exec "$NETNS" openssl s_server -quiet -WWW -accept "$WEB:8444" \
	-cert "$tmp/netns/web.pem" -key "$tmp/netns/web.key" >/dev/null 2>&1 3>&-) &
echo $! >"$tmp/netns/sserver.pid"
wait_until ip netns exec "$NETNS" sh -c "ss -ltn | grep -q ':8444 '"
url="https://web.sbx.test:8444/big.bin"
export BENCH_TOKEN=bench-token-value
sbx-create -allow-host web.sbx.test:8444 benchtunnel >/dev/null
sbx-create -secret BENCH_TOKEN@web.sbx.test:8444 -upstream-ca "$NETNS_CA" benchtls >/dev/null
cp "$NETNS_CA" "$XDG_STATE_HOME/sbx/default/benchtunnel/home/ca.pem"
get='curl -sS -o /dev/null -w %{speed_download}'
for ((i = 0; i < runs; i++)); do
	sbx-exec -raw benchtunnel -- sh -c "$get --cacert \$HOME/ca.pem $url" >>"$tmp/tunnel"
	echo >>"$tmp/tunnel"
	sbx-exec -raw benchtls -- sh -c "$get -H \"Authorization: Bearer \$BENCH_TOKEN\" $url" >>"$tmp/tls"
	echo >>"$tmp/tls"
done
python3 - "$tmp" "$size_mb" "$runs" <<'PY'
import statistics, sys
d, size, runs = sys.argv[1], sys.argv[2], sys.argv[3]
med = {k: statistics.median(float(x) for x in open(f"{d}/{k}").read().split()) for k in ("tunnel", "tls")}
print(f"{size} MiB HTTPS download, median of {runs}")
print(f"{'path':44} {'MiB/s':>8} {'x tunnel':>8}")
for k, name in (("tunnel", "CONNECT tunnel through sbx-proxy (baseline)"),
                ("tls", "-secret host: TLS intercepted by sbx-proxy")):
    print(f"{name:44} {med[k] / 2**20:8.0f} {med[k] / med['tunnel']:8.2f}")
PY
