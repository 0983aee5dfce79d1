# server.bash — for bats files: start and stop scripts/kube-test-server, talk to it.
# shellcheck shell=bash
# kts_start [OPTIONS...]: starts the server (local-backend pods when $SBX_BIN/sbx-exec exists,
# else plain subprocesses), waits for its kubeconfig, exports KUBECONFIG, KTS_URL, KTS_CA,
# KTS_TOKEN, KTS_PID, KTS_STATE (the XDG_STATE_HOME of the local sandboxes backing its pods).
# kts_stop: SIGTERM and wait (bounded).

# Startup takes well under a second; this is the bound, in tenths of seconds.
KTS_START_TENTHS=150

kts_exec_mode() {
	if [ -x "$SBX_BIN/sbx-exec" ]; then echo sbx; else echo subprocess; fi
}

# kts_hide_shared CMD...: execs CMD (same pid) with a directory named shared beside the
# checkout (the team's reference files, which nothing in the repository may read) hidden
# under an empty tmpfs in a mount namespace of its own, so every kube test proves the server
# needs nothing there. Where there is no such directory (a clone elsewhere) or no root to
# make the mount, CMD runs as it is.
kts_hide_shared() {
	local shared
	shared=$(cd "$SBX_TOP/.." && pwd -P)/shared
	if [ -d "$shared" ] && [ "$(id -u)" = 0 ]; then
		exec unshare --mount --propagation private -- \
			sh -c 'mount -t tmpfs -o ro,mode=0 kts-hidden "$0" && exec "$@"' "$shared" "$@"
	fi
	exec "$@"
}

kts_start() {
	local kc="$BATS_TEST_TMPDIR/kubeconfig" i
	rm -f "$kc"
	(kts_hide_shared "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$kc" -exec-mode "$(kts_exec_mode)" "$@") \
		>"$BATS_TEST_TMPDIR/kts.out" 2>"$BATS_TEST_TMPDIR/kts.err" 3>&- &
	KTS_PID=$!
	for ((i = 0; i < KTS_START_TENTHS; i++)); do
		[ -s "$kc" ] && break
		if ! kill -0 "$KTS_PID" 2>/dev/null; then
			echo "kube-test-server exited:" >&2; cat "$BATS_TEST_TMPDIR/kts.err" >&2; return 1
		fi
		sleep 0.1
	done
	[ -s "$kc" ] || { echo "kube-test-server did not start" >&2; return 1; }
	export KUBECONFIG=$kc KTS_PID
	KTS_URL=$(jq -r .server "$BATS_TEST_TMPDIR/kts.out")
	KTS_STATE=$(jq -r .state_home "$BATS_TEST_TMPDIR/kts.out")
	KTS_CA="$BATS_TEST_TMPDIR/kts-ca.crt"
	/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["clusters"][0]["cluster"]["certificate-authority-data"])' "$kc" |
		base64 -d >"$KTS_CA"
	KTS_TOKEN=$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["users"][0]["user"].get("token", ""))' "$kc")
	export KTS_URL KTS_CA KTS_TOKEN KTS_STATE
}

# kts_local ARGS...: an sbx tool on the local sandboxes that back the server's pods.
kts_local() {
	XDG_STATE_HOME=$KTS_STATE SANDBOX_BACKEND=local "$@"
}

kts_stop() {
	local i
	[ -n "${KTS_PID:-}" ] || return 0
	kill "$KTS_PID" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$KTS_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$KTS_PID" 2>/dev/null || true
	wait "$KTS_PID" 2>/dev/null || true
	KTS_PID=
}

# kts_ctl ARGS...: the -ctl client (faults JSON | reset | requests | clear-requests | expire NS/NAME).
kts_ctl() {
	"$SBX_TOP/scripts/kube-test-server" -kubeconfig "$KUBECONFIG" -ctl "$@"
}

# kts_curl ARGS...: curl with the server's CA and token; prints the body then the HTTP status
# on a last line of its own.
kts_curl() {
	curl -sS --max-time 30 --cacert "$KTS_CA" -H "Authorization: Bearer $KTS_TOKEN" \
		-w '\n%{http_code}\n' "$@"
}

# kts_kubectl: KUBECTL = kubectl v1.35 (fetched once, see get-kubectl). k ARGS: that kubectl,
# each request bounded.
kts_kubectl() {
	KUBECTL=$("$SBX_TOP/tests/kube/get-kubectl")
}

k() { "$KUBECTL" --request-timeout=30s "$@"; }
