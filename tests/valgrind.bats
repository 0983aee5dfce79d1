#!/usr/bin/env bats
# Every tool under valgrind's memcheck, on its happy path and an error path: no definite leak,
# no invalid read or write, no use of uninitialised memory. The test fails when any log holds
# an error. The programs a tool execs (bwrap, the sandbox's commands) are not traced, and
# forked children are silent (--child-silent-after-fork): they leave by _exit with the
# parent's heap still mapped, which memcheck would count as lost (the work they do, archive
# packing and unpacking, is fuzzed under ASan by tests/fuzz/fuzz_archive.c).

load helpers
load stub
bats_require_minimum_version 1.5.0

STUB_MODEL=stub-model

setup() {
	setup_sbx_env
	VG_LOGS=$BATS_TEST_TMPDIR/vg
	# memcheck cannot run ASan builds: under `make asan` it checks the plain build (which
	# `make asan` builds too) and finds each program's siblings there.
	VG_BIN=$SBX_BIN
	[ -n "${SBX_SANITIZED:-}" ] && VG_BIN=$SBX_TOP/bin
	export PATH="$VG_BIN:$PATH"
	mkdir -p "$VG_LOGS"
	STUB_PID=
}

teardown() {
	stop_stub
	teardown_sbx_env
}

# vg PROG ARGS…: PROG (from the build) under memcheck; exit 99 means valgrind found errors.
# A static program (geminicli-toolbox) keeps its own malloc, which memcheck cannot replace: it
# sees glibc's heap as one uninitialised brk area, so undefined-value checks are off there and
# only accesses outside mapped memory are caught (tests/fuzz/fuzz_toolbox.c runs the same
# sources under ASan for the heap).
vg() {
	local prog=$1 extra=
	shift
	[ "$prog" = geminicli-toolbox ] && extra=--undef-value-errors=no
	valgrind -q $extra --child-silent-after-fork=yes --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
		--error-exitcode=99 --suppressions="$SBX_TOP/tests/valgrind.supp" \
		--log-file="$VG_LOGS/$prog.%p.log" "$VG_BIN/$prog" "$@"
}

# Fails, showing them, when valgrind reported an error ("==pid==" lines; "--pid--" lines are
# valgrind's own notes, such as a syscall it does not know, which the programs handle; so is
# its note on the loop device ioctls LOOP_CONFIGURE (0x4c0a) and LOOP_CTL_GET_FREE (0x4c82),
# which it has no wrappers for; the first only reads our struct, the second takes none; and
# NS_GET_USERNS (0xb701, sbx-port), which takes no argument either).
vg_errors() {
	grep '^==[0-9]*==' "$1" | grep -v -E -e 'Warning: noted but unhandled ioctl 0x(4c0a|4c82|b701) ' \
		-e 'This could cause spurious value errors to appear' -e 'README_MISSING_SYSCALL_OR_IOCTL'
}
vg_clean() {
	local f bad=0
	for f in "$VG_LOGS"/*.log; do
		[ -e "$f" ] || continue
		if vg_errors "$f" >/dev/null; then
			echo "== $f" >&2
			vg_errors "$f" | head -60 >&2
			bad=1
		fi
	done
	return $bad
}


@test "sbx-create, sbx-list, sbx-touch, sbx-delete: happy and error paths" {
	run vg sbx-create vg1
	assert_status 0
	assert_json '.name == "vg1"'
	# the same spec is reused (its shutdown time moved); another one is refused
	run vg sbx-create vg1
	assert_status 0
	assert_json '.reused == true'
	run vg sbx-create -pids 100 vg1
	assert_status 100
	assert_contains "exists with pids 1024"
	run vg sbx-create 'Bad Name'
	assert_status 100
	run vg sbx-list
	assert_status 0
	assert_contains '"vg1"'
	run vg sbx-list -bogus
	assert_status 100
	run vg sbx-touch vg1
	assert_status 0
	run vg sbx-touch nosuch
	assert_status 101
	run vg sbx-delete vg1
	assert_status 0
	run vg sbx-delete vg1
	[ "$status" -ne 99 ]
	vg_clean
}

@test "sbx-pool: a fill, a take by sbx-create, the pool listed, emptied" {
	run vg sbx-pool -size 2 -once
	assert_status 0
	assert_json '.made == 2'
	run vg sbx-create vgp
	assert_status 0
	assert_json '.pooled == true'
	run vg sbx-list
	assert_status 0
	assert_contains '"pooled"'
	run vg sbx-pool -size 0 -once
	assert_status 0
	run vg sbx-pool -size 0
	assert_status 100
	sbx-delete vgp >/dev/null
	vg_clean
}

@test "sbx-exec: JSON and -raw, success, failure and timeout" {
	sbx-create vg2 >/dev/null
	run vg sbx-exec vg2 -- sh -c 'echo out; echo err >&2; exit 3'
	assert_status 3
	assert_json '.stdout == "out\n" and .exit_code == 3'
	run vg sbx-exec -raw vg2 -- cat <<<'raw bytes'
	assert_status 0
	assert_contains 'raw bytes'
	run vg sbx-exec vg2 <<<'{"command":["sleep","5"],"timeout":"200ms"}'
	assert_status 124
	run vg sbx-exec vg2 <<<'{"command":'
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	run vg sbx-exec nosuch -- true
	assert_status 101
	vg_clean
}

@test "sbx-tool: a tool call, a bad call, an unknown tool" {
	sbx-create vg3 >/dev/null
	run vg sbx-tool vg3 <<<'{"id":"c1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"echo hi\"}"}}'
	assert_status 0
	assert_contains 'hi'
	run vg sbx-tool vg3 <<<'{"id":"c1","type":"function","function":{"name":"run_command","arguments":"{bad"}}'
	[ "$status" -ne 99 ]
	run vg sbx-tool vg3 <<<'{"id":"c1","type":"function","function":{"name":"nope","arguments":"{}"}}'
	[ "$status" -ne 99 ]
	run vg sbx-tool vg3 <<<'not json'
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	vg_clean
}

@test "llm-chat: fake-eliza, the OpenAI stub, vendors' streams, and a server error" {
	run vg llm-chat -model fake-eliza <<<'{"messages":[{"role":"user","content":"hello"}]}'
	assert_status 0
	run vg llm-chat -model fake-eliza <<<'{"messages":'
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	start_stub '{"sse":[{"id":"r","choices":[{"index":0,"delta":{"role":"assistant","content":"hi "}}]},{"id":"r","choices":[{"index":0,"delta":{"content":"there"},"finish_reason":"stop"}]},"data: [DONE]\n\n"]}' \
		"{\"file\":\"$SBX_TOP/tests/llm/mistral/reasoning.sse\",\"split\":3}" \
		"{\"file\":\"$SBX_TOP/tests/llm/dashscope/tool-call.sse\",\"random\":[5,9]}" \
		'{"status":500,"json":{"error":{"message":"boom"}}}'
	run vg llm-chat <<<'{"messages":[{"role":"user","content":"hello"}]}'
	assert_status 0
	assert_contains 'there'
	# content parts, reasoning deltas, "id":"" repeats, a vendor's request policy
	run vg llm-chat -stream -vendor mistral <<<'{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","index":0,"reasoning_content":"r"},{"role":"user","content":"q"}]}'
	assert_status 0
	assert_contains '"reasoning_content":"Count the files first."'
	run vg llm-chat -stream -vendor dashscope <<<'{"messages":[{"role":"user","content":"hello"}]}'
	assert_status 0
	assert_contains '"id":"call_sbxreplaydashscope0016"'
	# (the retries run; SBX_TEST_TIME_SCALE keeps their waits short)
	SBX_TEST_TIME_SCALE=0.01 run vg llm-chat <<<'{"messages":[{"role":"user","content":"hello"}]}'
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	assert_contains 'status 500'
	vg_clean
}

@test "sbx-snapshot and sbx-restore: round trip, a bad flag, a missing sandbox" {
	sbx-create vg4 >/dev/null
	sbx-exec vg4 -- sh -c 'echo kept >~/f' >/dev/null
	run vg sbx-snapshot vg4
	assert_status 0
	sbx-delete vg4 >/dev/null
	sbx-create vg4 >/dev/null
	run vg sbx-restore vg4
	assert_status 0
	run sbx-exec vg4 -- sh -c 'cat ~/f'
	assert_json '.stdout == "kept\n"'
	run vg sbx-restore -max-size lots vg4
	assert_status 100
	run vg sbx-snapshot nosuch
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	vg_clean
}

@test "sbx-cp (in, out, a stream out, a missing path) and sbx-sessions (list, delete)" {
	sbx-create vg5 >/dev/null
	mkdir -p "$BATS_TEST_TMPDIR/src/d"
	echo a >"$BATS_TEST_TMPDIR/src/d/a"
	ln -s /etc "$BATS_TEST_TMPDIR/src/out"
	run vg sbx-cp "$BATS_TEST_TMPDIR/src" vg5:.
	assert_status 0
	run vg sbx-cp vg5:src "$BATS_TEST_TMPDIR/back"
	assert_status 0
	[ "$(cat "$BATS_TEST_TMPDIR/back/d/a")" = a ]
	vg sbx-cp vg5:src - >/dev/null 2>&1
	run vg sbx-cp vg5:nothere "$BATS_TEST_TMPDIR/x"
	assert_status 101
	printf 'hi\n' | OPENAI_MODEL=fake-eliza agent-loop -session vgsess >/dev/null 2>&1
	run vg sbx-sessions
	assert_status 0
	run vg sbx-sessions -delete vgsess
	assert_status 0
	vg_clean
}

@test "agent-loop: one fake-eliza run: turn, and a bad flag" {
	printf 'run: echo vg-turn\n' >"$BATS_TEST_TMPDIR/in"
	OPENAI_MODEL=fake-eliza run vg agent-loop -session vgs <"$BATS_TEST_TMPDIR/in"
	assert_status 0
	assert_contains 'vg-turn'
	run vg agent-loop -max-tool-rounds 0
	assert_status 100
	vg_clean
}

@test "geminicli-toolbox (static): a read, a bad parameter document" {
	mkdir -p "$BATS_TEST_TMPDIR/w"
	echo hello >"$BATS_TEST_TMPDIR/w/a.txt"
	run vg geminicli-toolbox --workdir="$BATS_TEST_TMPDIR/w" read_file <<<'{"file_path":"a.txt"}'
	assert_status 0
	assert_contains hello
	run vg geminicli-toolbox --workdir="$BATS_TEST_TMPDIR/w" read_file <<<'{"file_path":3}'
	assert_status 1
	vg_clean
}

@test "acp-server and acp-client (stdio, a fake-eliza tool turn and an unknown session) under memcheck" {
	export OPENAI_MODEL=fake-eliza
	# the server, spawned by a plain client
	run acp-client -yolo -prompt 'run: echo hi' -cmd "valgrind -q --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --error-exitcode=99 --suppressions=$SBX_TOP/tests/valgrind.supp --log-file=$VG_LOGS/acp-server.%p.log $VG_BIN/acp-server -stdio"
	assert_status 0
	assert_contains "[turn ended: end_turn]"
	# the client, spawning a plain server; then an error path (a session that does not exist)
	run vg acp-client -yolo -prompt 'hello' -cmd "$VG_BIN/acp-server -stdio"
	assert_status 0
	assert_contains "What do you think it means when you say 'hello'?"
	run vg acp-client -session-id acp0000000000000000 -prompt 'x' -cmd "$VG_BIN/acp-server -stdio"
	[ "$status" -ne 0 ]
	[ "$status" -ne 99 ]
	vg_clean
}

@test "sbx-mcp (stdio: calls, a bad line, an unknown tool; HTTP: a call, a refused request) under memcheck" {
	printf '%s\n' 'not json' \
		'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
		'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","arguments":{"path":"a","content":"b"}}}' \
		'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"cat a; exit 2"}}}' \
		'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}' >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr vg sbx-mcp -session vgmcp <"$BATS_TEST_TMPDIR/in"
	assert_status 0
	printf '%s\n' "$output" | jq -e -s 'map(select(.id == 4))[0].result.structuredContent.exit_code == 2'
	printf 'vg-token\n' >"$BATS_TEST_TMPDIR/tok"
	# valgrind itself in the background (not the vg function's subshell), so the signal reaches it
	valgrind -q --child-silent-after-fork=yes --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --error-exitcode=99 --suppressions="$SBX_TOP/tests/valgrind.supp" \
		--log-file="$VG_LOGS/sbx-mcp.%p.log" "$VG_BIN/sbx-mcp" -listen 127.0.0.1:0 \
		-auth-token-file "$BATS_TEST_TMPDIR/tok" 2>"$BATS_TEST_TMPDIR/log" 3>&- &
	pid=$!
	wait_until grep -q 'serving MCP url' "$BATS_TEST_TMPDIR/log"
	url=$(sed -n 's/.*url="\([^"]*\)".*/\1/p' "$BATS_TEST_TMPDIR/log")
	H=(-H 'Authorization: Bearer vg-token' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
	run curl -sS -i --max-time 60 "${H[@]}" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' "$url"
	sid=$(printf '%s\n' "$output" | sed -n 's/^Mcp-Session-Id: \([a-z0-9]*\).*/\1/p')
	run curl -sS --max-time 60 "${H[@]}" -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"echo vg"}}}' "$url"
	assert_contains '"stdout":"vg\n"'
	run curl -sS -i --max-time 60 -d '{}' "$url"
	assert_contains 'HTTP/1.1 401'
	kill -TERM "$pid"
	finish "$pid"
	vg_clean
}

@test "sbx-port: a forward served until its sandbox is deleted, -d, -list, -close, a missing sandbox" {
	sbx-create vg6 >/dev/null
	sbx-exec vg6 -- sh -c 'mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html &&
		setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &' >/dev/null
	vg sbx-port vg6 8000 >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err" &
	pid=$!
	wait_until -p "$pid" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r .url "$BATS_TEST_TMPDIR/port.out")
	wait_until curl -sf -o /dev/null "${url}index.html"
	run vg sbx-port -d vg6 8000
	assert_status 0
	run vg sbx-port -list vg6
	assert_status 0
	run vg sbx-port -close vg6 8000
	assert_status 0
	run vg sbx-port nosuch 8000
	assert_status 101
	sbx-delete vg6 >/dev/null
	status=0
	finish "$pid" || status=$?
	assert_status 101
	vg_clean
}
