# stub.bash — the scripted OpenAI-compatible server (tests/openai-stub.py) for bats files:
# start_stub reads the answers (JSON lines) on stdin, starts the stub on 127.0.0.1 and points
# OPENAI_BASE_URL and OPENAI_API_KEY at it; stop_stub ends it. The caller's teardown calls
# stop_stub. STUB_DIR holds script.jsonl and requests.jsonl.
# shellcheck shell=bash

STUB_KEY=sk-test-SECRET-0123456789

start_stub() {
	STUB_DIR=${STUB_DIR:-$BATS_TEST_TMPDIR/stub}
	mkdir -p "$STUB_DIR"
	cat >"$STUB_DIR/script.jsonl"
	python3 "$SBX_TOP/tests/openai-stub.py" "$STUB_DIR" >"$STUB_DIR/stub.log" 2>&1 3>&- &
	STUB_PID=$!
	wait_until test -s "$STUB_DIR/port" || { cat "$STUB_DIR/stub.log" >&2; return 1; }
	export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$STUB_DIR/port")/v1"
	export OPENAI_API_KEY=$STUB_KEY
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
