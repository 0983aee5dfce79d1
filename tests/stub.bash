# stub.bash — the scripted OpenAI-compatible server (tests/openai-stub.py) for bats files:
# start_stub starts the stub on 127.0.0.1 and points OPENAI_BASE_URL and OPENAI_API_KEY (and
# OPENAI_MODEL, when STUB_MODEL is set) at it; stop_stub ends it. The caller's teardown calls
# stop_stub. STUB_DIR holds script.jsonl, requests.jsonl and the stub's log.
# shellcheck shell=bash

STUB_KEY=sk-test-SECRET-0123456789

# start_stub [ANSWER…]: the answers (JSON lines, see tests/openai-stub.py) as arguments, or
# on stdin when none are given.
start_stub() {
	STUB_DIR=${STUB_DIR:-$BATS_TEST_TMPDIR/stub}
	mkdir -p "$STUB_DIR"
	if [ $# -gt 0 ]; then printf '%s\n' "$@"; else cat; fi >"$STUB_DIR/script.jsonl"
	python3 "$SBX_TOP/tests/openai-stub.py" "$STUB_DIR" >"$STUB_DIR/stub.log" 2>&1 3>&- &
	STUB_PID=$!
	wait_until -p "$STUB_PID" test -s "$STUB_DIR/port" || { cat "$STUB_DIR/stub.log" >&2; return 1; }
	export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$STUB_DIR/port")/v1"
	export OPENAI_API_KEY=$STUB_KEY
	if [ -n "${STUB_MODEL:-}" ]; then export OPENAI_MODEL=$STUB_MODEL; fi
}

stop_stub() {
	if [ -n "${STUB_PID:-}" ]; then
		kill "$STUB_PID" 2>/dev/null || true
		wait "$STUB_PID" 2>/dev/null || true
		STUB_PID=
	fi
}

# The requests the stub received, one JSON line each; request N (1-based).
requests() { cat "$STUB_DIR/requests.jsonl" 2>/dev/null; }
request_count() { requests | wc -l | tr -d ' '; }
request() { requests | sed -n "${1}p"; }

# Waits (bounded) until the stub has received n requests.
have_requests() { [ "$(request_count)" -ge "$1" ]; }
wait_requests() { wait_until have_requests "$1"; }

# Answers for the script. stub_text TEXT: a chat completion answering TEXT.
stub_text() {
	jq -cn --arg t "$1" '{json:{id:"stub",choices:[{index:0,message:{role:"assistant",content:$t},finish_reason:"stop"}]}}'
}

# stub_call ID NAME ARGUMENTS-JSON: a chat completion calling one tool.
stub_call() {
	jq -cn --arg id "$1" --arg n "$2" --arg a "$3" \
		'{json:{id:"stub",choices:[{index:0,message:{role:"assistant",tool_calls:[{id:$id,type:"function",function:{name:$n,arguments:$a}}]},finish_reason:"tool_calls"}]}}'
}

# stub_finish TEXT REASON: a text answer with this finish_reason.
stub_finish() {
	jq -cn --arg t "$1" --arg f "$2" '{json:{id:"stub",choices:[{index:0,message:{role:"assistant",content:$t},finish_reason:$f}]}}'
}
