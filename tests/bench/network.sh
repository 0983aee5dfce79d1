#!/usr/bin/env bash
# network.sh — bulk download throughput of one file from a test host (a network namespace
# on this machine, tests/netns.bash), side by side: from the host itself (the baseline), from a
# -network sandbox (pasta's NAT) and from a -allow-host sandbox (through sbx-proxy). Each
# figure is the median of RUNS (7) downloads, the three taken in turn. Needs root (ip netns).
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "network.sh: not run: making the test host's network namespace needs root"
	exit 0
fi
runs=${RUNS:-7}
size_mb=${SIZE_MB:-512}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
export BATS_FILE_TMPDIR=$tmp XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
# shellcheck source=../helpers.bash
. "$here/../helpers.bash"	# wait_until
# shellcheck source=../netns.bash
. "$here/../netns.bash"
cleanup() {
	sbx-delete benchnat >/dev/null 2>&1 || true
	sbx-delete benchproxy >/dev/null 2>&1 || true
	netns_down
	rm -rf "$tmp"
}
trap cleanup EXIT
netns_up
head -c "$((size_mb << 20))" /dev/zero >"$tmp/netns/www/big.bin"
url="http://web.sbx.test:8080/big.bin"
sbx-create -network benchnat >/dev/null
sbx-create -allow-host web.sbx.test:8080 benchproxy >/dev/null
get='curl -sS -o /dev/null -w %{speed_download}'
for ((i = 0; i < runs; i++)); do
	# the host has no name for the test host: its address, as the name resolves
	$get "http://$WEB:8080/big.bin" >>"$tmp/host"; echo >>"$tmp/host"
	sbx-exec -raw benchnat -- $get "$url" >>"$tmp/nat"; echo >>"$tmp/nat"
	sbx-exec -raw benchproxy -- $get "$url" >>"$tmp/proxy"; echo >>"$tmp/proxy"
done
python3 - "$tmp" "$size_mb" "$runs" <<'PY'
import statistics, sys
d, size, runs = sys.argv[1], sys.argv[2], sys.argv[3]
med = {k: statistics.median(float(x) for x in open(f"{d}/{k}").read().split()) for k in ("host", "nat", "proxy")}
print(f"{size} MiB download, median of {runs}")
print(f"{'path':38} {'MiB/s':>8} {'x host':>7}")
for k, name in (("host", "from the host (baseline)"), ("nat", "-network sandbox (pasta NAT)"),
                ("proxy", "-allow-host sandbox (sbx-proxy)")):
    print(f"{name:38} {med[k] / 2**20:8.0f} {med[k] / med['host']:7.2f}")
PY
