# common.bash — shared by the ACP bats files: the ACP client library from npm (installed once
# into tests/.cache, bounded and locked), an acp-server on a free loopback port, and the
# OpenAI-compatible stub (tests/stub.bash) answering as model stub-model.
# shellcheck shell=bash

# shellcheck source=../stub.bash
. "$(dirname "${BASH_SOURCE[0]}")/../stub.bash"
STUB_MODEL=stub-model

ACP_SDK_VERSION=2.4.0
AJV_VERSION=8.20.0

# Installs @agentclientprotocol/sdk and ajv into tests/.cache/acp-sdk unless already there.
acp_sdk() {
	export ACP_SDK_DIR="$SBX_TOP/tests/.cache/acp-sdk"
	local want="$ACP_SDK_DIR/node_modules/@agentclientprotocol/sdk/package.json"
	mkdir -p "$ACP_SDK_DIR"
	(
		flock 9
		if [ -f "$want" ] && grep -q "\"version\": \"$ACP_SDK_VERSION\"" "$want" &&
			[ -f "$ACP_SDK_DIR/node_modules/ajv/package.json" ]; then
			exit 0
		fi
		printf '{"private":true,"dependencies":{"@agentclientprotocol/sdk":"%s","ajv":"%s"}}\n' \
			"$ACP_SDK_VERSION" "$AJV_VERSION" >"$ACP_SDK_DIR/package.json"
		timeout 300 npm install --prefix "$ACP_SDK_DIR" --no-audit --no-fund --loglevel=error \
			>"$ACP_SDK_DIR/install.log" 2>&1 || { cat "$ACP_SDK_DIR/install.log" >&2; exit 1; }
	) 9>"$ACP_SDK_DIR.lock"
}

# drive SCENARIO ARGS...: runs tests/acp/drive.mjs against the server started by start_server,
# authenticating with the token it generated (if it did).
drive() {
	local s=$1
	shift
	run timeout 120 node "$SBX_TOP/tests/acp/drive.mjs" "$s" --addr "$ACP_ADDR" \
		${ACP_TOKEN_FILE:+--token-file "$ACP_TOKEN_FILE"} "$@"
}

# start_server ARGS...: acp-server -backend local ARGS on 127.0.0.1 at a free port (the kernel
# picks it); sets ACP_ADDR, ACP_PID, ACP_LOG and ACP_TOKEN_FILE (the token it generated, when
# it did). start_acp_server ARGS...: the same with no -backend but what ARGS say.
start_server() { start_acp_server -backend local "$@"; }
start_acp_server() {
	# A new log per start: a restarted server must not be found at the old address.
	ACP_STARTS=$((${ACP_STARTS:-0} + 1))
	ACP_LOG="$BATS_TEST_TMPDIR/acp-server.$ACP_STARTS.log"
	: >"$ACP_LOG"
	acp-server -listen 127.0.0.1:0 "$@" 2>"$ACP_LOG" 3>&- &
	ACP_PID=$!
	wait_until -p "$ACP_PID" grep -q 'serving ACP address="[^"]*"' "$ACP_LOG" || { cat "$ACP_LOG" >&2; return 1; }
	ACP_ADDR=$(sed -n 's/.*serving ACP address="\([^"]*\)".*/\1/p' "$ACP_LOG")
	ACP_TOKEN_FILE=$(sed -n 's/.*clients send the token in \([^ ]*\) .*/\1/p' "$ACP_LOG")
}

# stop_server: SIGTERM, then waits for the exit (bounded); its status in ACP_STATUS.
stop_server() {
	ACP_STATUS=
	[ -n "${ACP_PID:-}" ] || return 0
	ACP_STATUS=0
	terminate "$ACP_PID" || ACP_STATUS=$?
	ACP_PID=
}

# steps JSON...: drive's steps scenario with these steps (a JSON array).
steps() {
	printf '%s' "$1" >"$BATS_TEST_TMPDIR/steps.json"
	shift
	drive steps --steps "$BATS_TEST_TMPDIR/steps.json" "$@"
}
