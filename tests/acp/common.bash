# common.bash — shared by tests/acp-server.bats and tests/acp-client.bats: the ACP client
# library from npm (installed once into tests/.cache, bounded and locked), an acp-server on a
# free loopback port, and the OpenAI-compatible stub.
# shellcheck shell=bash

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

# start_server ARGS...: acp-server on 127.0.0.1 at a free port (the kernel picks it); sets
# ACP_ADDR, ACP_PID, ACP_LOG and ACP_TOKEN_FILE (the token it generated, when it did).
start_server() {
	local i
	# A new log per start: a restarted server must not be found at the old address.
	ACP_STARTS=$((${ACP_STARTS:-0} + 1))
	ACP_LOG="$BATS_TEST_TMPDIR/acp-server.$ACP_STARTS.log"
	: >"$ACP_LOG"
	acp-server -listen 127.0.0.1:0 -backend local "$@" 2>"$ACP_LOG" &
	ACP_PID=$!
	for i in $(seq 200); do
		ACP_ADDR=$(sed -n 's/.*serving ACP address="\([^"]*\)".*/\1/p' "$ACP_LOG")
		if [ -n "$ACP_ADDR" ]; then
			ACP_TOKEN_FILE=$(sed -n 's/.*clients send the token in \([^ ]*\) .*/\1/p' "$ACP_LOG")
			return 0
		fi
		kill -0 "$ACP_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$ACP_LOG" >&2
	return 1
}

# stop_server: SIGTERM, then waits for the exit (bounded); its status in ACP_STATUS.
stop_server() {
	local i
	ACP_STATUS=
	[ -n "${ACP_PID:-}" ] || return 0
	kill -TERM "$ACP_PID" 2>/dev/null || true
	for i in $(seq 400); do
		kill -0 "$ACP_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$ACP_PID" 2>/dev/null || true
	wait "$ACP_PID" 2>/dev/null
	ACP_STATUS=$?
	ACP_PID=
}

# start_stub: the stub's answers (JSON lines) on stdin; points the model at it.
start_stub() {
	local i
	STUB_DIR="$BATS_TEST_TMPDIR/stub"
	mkdir -p "$STUB_DIR"
	cat >"$STUB_DIR/script.jsonl"
	python3 "$SBX_TOP/tests/openai-stub.py" "$STUB_DIR" >"$STUB_DIR/stub.log" 2>&1 3>&- &
	STUB_PID=$!
	for i in $(seq 200); do
		[ -s "$STUB_DIR/port" ] && break
		sleep 0.05
	done
	[ -s "$STUB_DIR/port" ] || { cat "$STUB_DIR/stub.log" >&2; return 1; }
	export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$STUB_DIR/port")/v1"
	export OPENAI_API_KEY=test-key-not-secret
	export OPENAI_MODEL=stub-model
}

stop_stub() {
	if [ -n "${STUB_PID:-}" ]; then
		kill "$STUB_PID" 2>/dev/null || true
		wait "$STUB_PID" 2>/dev/null || true
		STUB_PID=
	fi
}

# A chat completion answer for the stub's script with this text.
stub_text() {
	printf '{"json":{"id":"stub","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}}\n' "$1"
}

# A chat completion answer calling one tool: stub_call ID NAME ARGUMENTS-JSON.
stub_call() {
	jq -cn --arg id "$1" --arg n "$2" --arg a "$3" \
		'{json:{id:"stub",choices:[{index:0,message:{role:"assistant",tool_calls:[{id:$id,type:"function",function:{name:$n,arguments:$a}}]},finish_reason:"tool_calls"}]}}'
}

# A text answer with this finish_reason: stub_finish TEXT REASON.
stub_finish() {
	jq -cn --arg t "$1" --arg f "$2" '{json:{id:"stub",choices:[{index:0,message:{role:"assistant",content:$t},finish_reason:$f}]}}'
}

# steps JSON...: drive's steps scenario with these steps (a JSON array).
steps() {
	printf '%s' "$1" >"$BATS_TEST_TMPDIR/steps.json"
	shift
	drive steps --steps "$BATS_TEST_TMPDIR/steps.json" "$@"
}
