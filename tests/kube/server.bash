# server.bash — for bats files: start and stop scripts/kube-test-server, talk to it.
# shellcheck shell=bash
# kts_start [OPTIONS...]: starts the server (local-backend pods when $SBX_BIN/sbx-exec exists,
# else plain subprocesses), waits for its kubeconfig, exports KUBECONFIG, KTS_URL, KTS_CA,
# KTS_TOKEN, KTS_PID, KTS_STATE (the XDG_STATE_HOME of the local sandboxes backing its pods).
# kts_stop: SIGTERM and wait (bounded). kts_setup / kts_teardown: the usual setup and
# teardown of a file whose every test has its own server. kts_launch DIR / kts_halt DIR: a
# server of its own in DIR (one per file from setup_file, or a second one in a test).

# Startup takes well under a second; this is the bound, in seconds.
KTS_START_SECONDS=15

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

# kts_launch DIR [OPTIONS...]: starts a server whose files are DIR/kubeconfig, kts.out,
# kts.err and kts.pid; waits (bounded) for its kubeconfig.
kts_launch() {
	local d=$1 pid
	shift
	mkdir -p "$d"
	rm -f "$d/kubeconfig"
	(kts_hide_shared "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$d/kubeconfig" \
		-exec-mode "$(kts_exec_mode)" "$@") >"$d/kts.out" 2>"$d/kts.err" 3>&- &
	pid=$!
	echo "$pid" >"$d/kts.pid"
	wait_until -t "$KTS_START_SECONDS" -p "$pid" test -s "$d/kubeconfig" || {
		echo "kube-test-server did not start:" >&2
		cat "$d/kts.err" >&2
		return 1
	}
}

# kts_halt DIR: stops the server kts_launch started in DIR (SIGTERM, then bounded wait).
kts_halt() {
	local pid
	pid=$(cat "$1/kts.pid" 2>/dev/null) || return 0
	terminate "$pid" || true
	rm -f "$1/kts.pid"
}

# A file whose tests share one server, in $BATS_FILE_TMPDIR/ks ($KS): kts_file_start OPTIONS...
# from setup_file (HOME: setup_file runs before any test's private one is made), kts_file_stop
# from teardown_file, kts_file_test from setup (the private environment, KUBECONFIG and the
# kubernetes backend, the server's faults reset). ctl ARGS...: -ctl on that server, output dropped.
kts_file_start() {
	export KS="$BATS_FILE_TMPDIR/ks"
	HOME="$KS/home" kts_launch "$KS" "$@"
}
kts_file_stop() {
	kts_halt "$KS"
}
kts_file_test() {
	setup_sbx_env
	export KUBECONFIG="$KS/kubeconfig" SANDBOX_BACKEND=kubernetes
	ctl reset
}
ctl() { "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$KS/kubeconfig" -ctl "$@" >/dev/null; }

kts_start() {
	kts_launch "$BATS_TEST_TMPDIR" "$@" || return 1
	KTS_PID=$(cat "$BATS_TEST_TMPDIR/kts.pid")
	export KUBECONFIG=$BATS_TEST_TMPDIR/kubeconfig KTS_PID
	KTS_URL=$(jq -r .server "$BATS_TEST_TMPDIR/kts.out")
	KTS_STATE=$(jq -r .state_home "$BATS_TEST_TMPDIR/kts.out")
	KTS_CA="$BATS_TEST_TMPDIR/kts-ca.crt"
	/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["clusters"][0]["cluster"]["certificate-authority-data"])' "$KUBECONFIG" |
		base64 -d >"$KTS_CA"
	KTS_TOKEN=$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["users"][0]["user"].get("token", ""))' "$KUBECONFIG")
	export KTS_URL KTS_CA KTS_TOKEN KTS_STATE
}

# kts_local ARGS...: an sbx tool on the local sandboxes that back the server's pods.
kts_local() {
	XDG_STATE_HOME=$KTS_STATE SANDBOX_BACKEND=local "$@"
}

kts_stop() {
	[ -n "${KTS_PID:-}" ] || return 0
	terminate "$KTS_PID" || true
	rm -f "$BATS_TEST_TMPDIR/kts.pid"
	KTS_PID=
}

# kts_setup [OPTIONS...]: a test's setup when each test has its own server: the private
# environment, the server, the kubernetes backend. kts_teardown undoes it.
kts_setup() {
	setup_sbx_env
	kts_start "$@"
	export SANDBOX_BACKEND=kubernetes
}
kts_teardown() {
	kts_stop
	teardown_sbx_env
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
