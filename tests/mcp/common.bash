# common.bash — for tests/sbx-mcp.bats: the official MCP client library and the MCP Inspector
# from npm (installed once into tests/.cache/mcp-sdk, bounded and locked), the client driver,
# and sbx-mcp over Streamable HTTP on a free loopback port.
# shellcheck shell=bash

MCP_SDK_VERSION=1.32.2
MCP_INSPECTOR_VERSION=2.12.0

# Installs @modelcontextprotocol/sdk and @modelcontextprotocol/inspector unless already there.
mcp_sdk() {
	export MCP_SDK_DIR="$SBX_TOP/tests/.cache/mcp-sdk"
	# The Inspector keeps secrets (none here) in memory rather than asking for a keychain.
	export MCP_INSPECTOR_SECRET_STORE=memory
	local sdk="$MCP_SDK_DIR/node_modules/@modelcontextprotocol/sdk/package.json"
	local insp="$MCP_SDK_DIR/node_modules/@modelcontextprotocol/inspector/package.json"
	mkdir -p "$MCP_SDK_DIR"
	(
		flock 9
		if [ -f "$sdk" ] && grep -q "\"version\": \"$MCP_SDK_VERSION\"" "$sdk" &&
			[ -f "$insp" ] && grep -q "\"version\": \"$MCP_INSPECTOR_VERSION\"" "$insp"; then
			exit 0
		fi
		printf '{"private":true,"dependencies":{"@modelcontextprotocol/sdk":"%s","@modelcontextprotocol/inspector":"%s"}}\n' \
			"$MCP_SDK_VERSION" "$MCP_INSPECTOR_VERSION" >"$MCP_SDK_DIR/package.json"
		timeout 300 npm install --prefix "$MCP_SDK_DIR" --no-audit --no-fund --loglevel=error \
			>"$MCP_SDK_DIR/install.log" 2>&1 || { cat "$MCP_SDK_DIR/install.log" >&2; exit 1; }
	) 9>"$MCP_SDK_DIR.lock"
}

# mcpc STEPS (--stdio CMD… | --url URL [--token T]): tests/mcp/client.mjs; its document in
# $output, sbx-mcp's stderr (stdio) in $BATS_TEST_TMPDIR/stderr.
mcpc() {
	local steps=$1
	shift
	run --separate-stderr timeout 120 node "$SBX_TOP/tests/mcp/client.mjs" --steps "$steps" "$@"
	printf '%s\n' "$stderr" >>"$BATS_TEST_TMPDIR/stderr"
}

# inspector ARGS…: the MCP Inspector's CLI mode.
inspector() {
	run --separate-stderr timeout 120 "$MCP_SDK_DIR/node_modules/.bin/mcp-inspector" --cli "$@"
}

# start_http ARGS…: sbx-mcp -listen on 127.0.0.1 at a free port; sets MCP_URL, MCP_PID,
# MCP_LOG and, when the token was generated, MCP_TOKEN_FILE.
start_http() {
	MCP_LOG="$BATS_TEST_TMPDIR/sbx-mcp.log"
	: >"$MCP_LOG"
	sbx-mcp -listen 127.0.0.1:0 -backend local "$@" 2>"$MCP_LOG" 3>&- &
	MCP_PID=$!
	wait_until -p "$MCP_PID" grep -q 'serving MCP url="[^"]*"' "$MCP_LOG" || { cat "$MCP_LOG" >&2; return 1; }
	MCP_URL=$(sed -n 's/.*serving MCP url="\([^"]*\)".*/\1/p' "$MCP_LOG")
	MCP_TOKEN_FILE=$(sed -n 's/.*auth token written to \(.*\) (send.*/\1/p' "$MCP_LOG")
}

# stop_http: SIGTERM, then waits for the exit (bounded); its status in MCP_STATUS.
stop_http() {
	MCP_STATUS=
	[ -n "${MCP_PID:-}" ] || return 0
	MCP_STATUS=0
	terminate "$MCP_PID" || MCP_STATUS=$?
	MCP_PID=
}

# hcurl ARGS…: curl against the server with the token; status line and headers kept.
hcurl() {
	run curl -sS -i --max-time 30 -H "Authorization: Bearer $(cat "$MCP_TOKEN")" "$@"
}
