#!/usr/bin/env bats
# acp-client against acp-server, end to end (TCP, TLS, spawned over stdio, auth, resume).

bats_require_minimum_version 1.5.0
load helpers
load acp/common

setup() {
	setup_sbx_env
	export OPENAI_MODEL=fake-eliza
	ACP_PID=
	STUB_PID=
}

teardown() {
	stop_server
	stop_stub
	teardown_sbx_env
}

make_cert() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$BATS_TEST_TMPDIR/key.pem" -out "$BATS_TEST_TMPDIR/cert.pem" 2>/dev/null
}

# (-h and the usage errors: tests/usage-errors.txt)

@test "nothing listening: a clear connection error" {
	local port
	port=$(closed_port)
	run acp-client -addr "127.0.0.1:$port" -prompt hi
	assert_status 111
	assert_contains "cannot connect to 127.0.0.1:$port"
}

@test "one-shot -yolo turn over TCP (man page example)" {
	grep -qF 'acp-client -addr localhost:8090 -yolo -prompt "run: uname -a"' "$SBX_TOP/man/man1/acp-client.1"
	start_server
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "run: uname -a"
	assert_status 0
	assert_contains "Connected to ACP agent (protocol v1)"
	assert_contains '[tool: execute] Run `uname -a` (pending)'
	assert_contains '[tool] Run `uname -a` → in_progress'
	assert_contains '[tool] Run `uname -a` → completed'
	assert_contains "The tool told me:"
	assert_contains "Linux"
	assert_contains "[turn ended: end_turn]"
}

@test "a tool's own failure is shown failed, its success completed (basic toolset)" {
	{
		stub_call c1 read '{"path":"/nope"}'
		stub_call c2 ls '{"path":"/nope"}'
		stub_call c3 write '{"path":"/proc/x/y","content":"z"}'
		stub_call c4 run_command '{"command":"exit 3"}'
		stub_call c5 ls '{}'
		stub_text "failures seen"
	} >"$BATS_TEST_TMPDIR/script"
	STUB_MODEL=stub-model start_stub <"$BATS_TEST_TMPDIR/script"
	run acp-client -cmd "acp-server -stdio" -yolo -prompt "fail"
	assert_status 0
	assert_contains '[tool] Read /nope → failed'
	assert_contains '[tool] List /nope → failed'
	assert_contains '[tool] Run `exit 3` → failed'
	assert_contains '[tool] List . → completed'
	[ "$(grep -c ' → failed$' <<<"$output")" -eq 4 ]
	assert_contains "failures seen"
}

@test "open_port (acp-server -toolset basic+open_port): the URL shown as a link; a port nothing listens on failed" {
	serve='mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html && (setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &) && curl -s --retry 30 --retry-connrefused --retry-delay 1 -o /dev/null http://127.0.0.1:8000/'  # (port: in the sandbox's own network namespace)
	{
		stub_call c1 open_port '{"port":8000}'
		stub_call c2 run_command "$(jq -cn --arg c "$serve" '{command: $c}')"
		stub_call c3 open_port '{"port":8000}'
		stub_text "opened"
	} >"$BATS_TEST_TMPDIR/script"
	STUB_MODEL=stub-model start_stub <"$BATS_TEST_TMPDIR/script"
	run acp-client -cmd "acp-server -stdio -toolset basic+open_port" -yolo -prompt "serve"
	assert_status 0
	[ "$(grep -c '^\[tool\] open_port → failed$' <<<"$output")" -eq 1 ]
	[ "$(grep -c '^\[tool\] open_port → completed$' <<<"$output")" -eq 1 ]
	grep -q '^    link http://127\.0\.0\.1:[0-9]*/$' <<<"$output"
	assert_contains "Nothing listens on port 8000 in the sandbox"
	assert_contains "opened"
}

@test "interactive: the permission menu, a rejection, then an approval by Enter" {
	grep -qF "printf 'run: echo first\\\\n3\\\\n' | acp-client -addr localhost:8090" "$SBX_TOP/man/man1/acp-client.1"
	start_server
	run acp-client -addr "$ACP_ADDR" <<'EOF'
run: echo first
3
run: echo second

/exit
EOF
	assert_status 0
	assert_contains "  1) Allow [allow_once]"
	assert_contains "  2) Always allow [allow_always]"
	assert_contains "  3) Reject [reject_once]"
	assert_contains "  4) Always reject [reject_always]"
	assert_contains "Choose 1-4 (Enter = 1): "
	assert_contains '[tool] Run `echo first` → failed'
	assert_contains 'The tool told me:
The user denied permission to run tool "run_command".'
	assert_contains "second"
	[ "$(printf '%s' "$output" | grep -c '\[turn ended: end_turn\]')" -eq 2 ]
}

@test "interactive: a bad answer is told the choices; input ending at the prompt cancels and fails" {
	start_server
	run acp-client -addr "$ACP_ADDR" <<'EOF'
run: echo first
9
yes
2
EOF
	assert_status 0
	[ "$(grep -c 'Not one of the choices: choose 1-4.' <<<"$output")" -eq 2 ]
	assert_contains '[tool] Run `echo first` → completed'
	run --separate-stderr acp-client -addr "$ACP_ADDR" <<<'run: echo never'
	assert_status 111
	assert_contains "No answer (end of input): the tool call is cancelled."
	[ "$stderr" = "acp-client: input ended at a permission prompt: the tool call was cancelled" ]
	assert_contains '  command: echo never'
	run ! grep -qF 'Run `echo never` → completed' <<<"$output"
}

@test "-session-id resumes: the history is replayed" {
	start_server
	run acp-client -addr "$ACP_ADDR" -prompt "remember me"
	assert_status 0
	sid=$(printf '%s\n' "$output" | sed -n 's/^Session: //p')
	[ -n "$sid" ]
	grep -qF 'acp-client -addr localhost:8090 -session-id acp0123456789abcdef0123456789abcdef' "$SBX_TOP/man/man1/acp-client.1"
	run acp-client -addr "$ACP_ADDR" -session-id "$sid" -prompt "and now"
	assert_status 0
	assert_contains "remember me"
	assert_contains "What do you think it means when you say 'and now'?"
	run acp-client -addr "$ACP_ADDR" -session-id acp0000000000000000 -prompt x
	assert_status 111
	assert_contains 'unknown sessionId "acp0000000000000000"'
	# a name agent-loop made is not acp-server's to open
	run acp-client -addr "$ACP_ADDR" -session-id default -prompt x
	assert_status 111
	assert_contains 'unknown sessionId "default"'
}

@test "-cmd spawns the agent and speaks over its standard input/output" {
	grep -qF 'acp-client -cmd "acp-server -stdio" -yolo -prompt "run: echo spawned"' "$SBX_TOP/man/man1/acp-client.1"
	run acp-client -cmd "acp-server -stdio" -yolo -prompt "run: echo spawned"
	assert_status 0
	assert_contains "Connected to ACP agent (protocol v1)"
	assert_contains "spawned"
	assert_contains "[turn ended: end_turn]"
	run -127 acp-client -cmd "no-such-agent-program" -prompt x
	assert_contains "cannot start agent no-such-agent-program"
}

@test "auth by default: the server's generated token is found for a loopback -addr, or given with -auth-token-file" {
	start_server
	run acp-client -addr "$ACP_ADDR" -prompt hi
	assert_status 0
	assert_contains "[turn ended: end_turn]"
	# another user (another state directory) has no token: refused, with the way out
	XDG_STATE_HOME="$BATS_TEST_TMPDIR/other" run acp-client -addr "$ACP_ADDR" -prompt hi
	assert_status 111
	assert_contains "authentication failed (no token given: use -auth-token-file; acp-server names its token file on standard error)"
	cp "$ACP_TOKEN_FILE" "$BATS_TEST_TMPDIR/mine"
	XDG_STATE_HOME="$BATS_TEST_TMPDIR/other" run acp-client -addr "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/mine" -prompt hi
	assert_status 0
	# a file naming several principals is the server's, not a client's
	printf 'a x\nb y\n' >"$BATS_TEST_TMPDIR/two"
	run acp-client -addr "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/two" -prompt hi
	assert_status 100
	assert_contains "holds 2 tokens: a client's holds one"
}

@test "auth: the token file logs in; without it the agent refuses" {
	printf 'tok-123\n' >"$BATS_TEST_TMPDIR/token"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/token"
	run acp-client -addr "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/token" -prompt hi
	assert_status 0
	assert_contains "[turn ended: end_turn]"
	run acp-client -addr "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/token" -debug -prompt hi
	assert_status 0
	assert_contains '"token":"[REDACTED]"'
	[[ "$output" != *tok-123* ]]
	run acp-client -addr "$ACP_ADDR" -prompt hi
	assert_status 111
	assert_contains "authentication failed"
	printf 'nope\n' >"$BATS_TEST_TMPDIR/wrong"
	run acp-client -addr "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/wrong" -prompt hi
	assert_status 111
	assert_contains "wrong token"
}

@test "TLS: trusted CA works, an unknown certificate is refused, -tls-insecure skips checks" {
	make_cert
	start_server -tls-cert "$BATS_TEST_TMPDIR/cert.pem" -tls-key "$BATS_TEST_TMPDIR/key.pem"
	port=${ACP_ADDR##*:}
	run acp-client -addr "localhost:$port" -tls -tls-ca "$BATS_TEST_TMPDIR/cert.pem" -prompt hi
	assert_status 0
	assert_contains "[turn ended: end_turn]"
	run acp-client -addr "127.0.0.1:$port" -tls -prompt hi
	assert_status 111
	assert_contains "certificate verification failed"
	run acp-client -addr "127.0.0.1:$port" -tls -tls-insecure -prompt hi
	assert_status 0
	# a plain client against the TLS port gets no ACP answer within the setup limit
	run acp-client -addr "127.0.0.1:$port" -setup-timeout 2s -prompt hi
	assert_status 111
}

@test "renders what the agent sends: thoughts, plans, diffs, collapsed tool output, usage, modes, titles; fs/read_text_file honours line and limit" {
	mkdir -p "$BATS_TEST_TMPDIR/w"
	printf 'one\ntwo\nthree\nfour\n' >"$BATS_TEST_TMPDIR/w/notes.txt"
	run acp-client -cwd "$BATS_TEST_TMPDIR/w" -cmd "python3 $SBX_TOP/tests/acp/fake-agent.py" <<'EOF'
/mode never-ask
show me
EOF
	assert_status 0
	assert_contains "Mode: ask (available: ask, never-ask; /mode ID switches)"
	assert_contains "[mode: never-ask]"
	assert_contains "[thinking] Planning the edit."
	assert_contains "[plan]
  [x] read notes
  [~] edit notes
  [ ] run tests"
	assert_contains "[tool: edit] Edit notes.txt (completed)
    diff $BATS_TEST_TMPDIR/w/notes.txt
    - old line
    + new line
    + second
    │ edited"
	assert_contains "[tool] Run \`seq 10\` → completed
    │ 1
    │ 2
    │ 3
    │ 4
    │ 5
    │ 6
    … 4 more lines"
	assert_contains "[usage: 1234 of 128000 tokens, 0.0123 USD]"
	assert_contains "[title: Editing notes]"
	# line 2, two lines
	assert_contains "lines: 'two\\nthree\\n'"
	assert_contains "[turn ended: end_turn]"
}

@test "-cmd: the agent's messages go to its log, not the screen; -agent-log - keeps them here" {
	run --separate-stderr acp-client -cmd "acp-server -stdio" -yolo -prompt "run: echo quiet"
	assert_status 0
	assert_contains "quiet"
	[[ "$stderr" != *"acp-server:"* ]]
	log=$XDG_STATE_HOME/sbx/acp-client/agent.log
	grep -q 'acp-server: serving ACP address="stdio"' "$log"
	[ "$(stat -c %a "$log")" = 600 ]
	run --separate-stderr acp-client -cmd "acp-server -stdio" -agent-log - -yolo -prompt "run: true"
	assert_status 0
	[[ "$stderr" == *'acp-server: serving ACP address="stdio"'* ]]
	run acp-client -cmd "acp-server -stdio" -agent-log "$BATS_TEST_TMPDIR/mine.log" -prompt "hi"
	assert_status 0
	grep -q "acp-server: serving ACP" "$BATS_TEST_TMPDIR/mine.log"
	run acp-client -addr "127.0.0.1:$(closed_port)" -agent-log x
	assert_status 100
	# an agent that fails: its last messages (this run's only) are shown, and where they are
	run acp-client -cmd "acp-server -stdio -bogus" -prompt hi
	assert_status 111
	assert_contains "the agent's last messages ($log):"
	assert_contains "acp-client: agent: acp-server: flag provided but not defined: -bogus"
	run ! grep -q 'agent: acp-server: serving ACP' <<<"$output"
	grep -q -- "-bogus" "$log"
	# one that dies mid-session: why, from its log; control characters never reach the screen
	printf '#!/bin/sh\nread -r line\nprintf "dying: out of \\033[31mluck\\n" >&2\nexit 3\n' >"$BATS_TEST_TMPDIR/dies"
	chmod +x "$BATS_TEST_TMPDIR/dies"
	run acp-client -cmd "$BATS_TEST_TMPDIR/dies" -prompt hi
	assert_status 111
	assert_contains 'acp-client: agent: dying: out of \x1b[31mluck'
	run ! grep -q $'\033' <<<"$output"
}

@test "-cmd: Ctrl-C (SIGINT to the terminal's process group) cancels the turn and leaves the agent running" {
	start_stub <<<'{"hang": true}'
	# its own process group, as a shell gives a foreground job: the group is what Ctrl-C hits
	# (setsid execs acp-client: not a group leader, it needs no fork)
	fed setsid acp-client -cmd "acp-server -stdio" -yolo
	pid=$FED_PID
	echo "hello" >&4
	wait_until test -s "$STUB_DIR/requests.jsonl"
	agent=$(pgrep -P "$pid" -f "acp-server -stdio")
	[ -n "$agent" ]
	kill -INT -- "-$pid"
	wait_until grep -q "turn ended: cancelled" "$BATS_TEST_TMPDIR/out"
	run ! gone "$agent"
	echo "/exit" >&4
	fed_end
	wait_until gone "$agent"
}

@test "renders the plan acp-server sends for the model's write_todos (-toolset geminicli)" {
	{
		stub_call c1 write_todos '{"todos":[{"description":"Read the code","status":"completed"},{"description":"Fix the bug","status":"in_progress"},{"description":"Update the docs","status":"cancelled"},{"description":"Run the tests","status":"pending"}]}'
		stub_text "planned"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	run acp-client -cmd "acp-server -stdio -toolset geminicli" -prompt "plan it"
	assert_status 0
	assert_contains "[plan]
  [x] Read the code
  [~] Fix the bug
  [x] Update the docs (cancelled)
  [ ] Run the tests"
	assert_contains "[tool: think] Plan 4 steps"
	assert_contains "planned"
}
