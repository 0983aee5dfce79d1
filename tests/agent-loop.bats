#!/usr/bin/env bats
# agent-loop: the chat CLI composed from llm-chat, sbx-create/touch/tool/snapshot/restore/delete.
# The LLM is fake-eliza or tests/openai-stub.py; sandboxes are local.

load helpers
load stub
load agent
bats_require_minimum_version 1.5.0

RULE=$(printf '=%.0s' {1..80})

STUB_MODEL=stub-model

setup() {
	setup_sbx_env
	STUB_PID=
	TMUX_SOCK=
}

teardown() {
	stop_stub
	[ -n "$TMUX_SOCK" ] && tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	teardown_sbx_env
}

# no_sandbox NAME: sbx-list shows no local sandbox NAME.
no_sandbox() {
	[ -z "$(sbx-list | jq -r --arg n "$1" 'select(.name == $n) | .name')" ]
}

# answer_tool NAME ARGS: a stub answer asking for one tool call.
answer_tool() { stub_call call-1 "$1" "$2"; }

# (-h and the usage errors: tests/usage-errors.txt)

@test "a new session shows the welcome banner and stores the system prompt" {
	run eliza -session fresh </dev/null
	assert_status 0
	[ "${lines[0]}" = "$RULE" ]
	[ "${lines[1]}" = "Welcome to the Sandboxed Tools example!" ]
	[ "${lines[2]}" = "Session Name: fresh" ]
	[ "${lines[3]}" = "Sandbox Backend: local (no Kubernetes configuration found)" ]
	[ "${lines[4]}" = "Type your message (or '/exit' or '/quit' to quit):" ]
	[ "${lines[5]}" = "$RULE" ]
	[ "$(wc -l <"$(hist fresh)")" -eq 1 ]
	jq -e '.role == "system" and (.content | length > 0)' "$(hist fresh)"
	[ "$(stat -c %a "$(dirname "$(hist fresh)")")" = 700 ]
	[ "$(stat -c %a "$(hist fresh)")" = 600 ]
}

@test "the upstream example session end to end: write, exit, resume, read from the backup" {
	run eliza -session demo <<'EOF'
run: sh -c 'echo Hello from Sandbox > ~/greeting.txt'
/exit
EOF
	assert_status 0
	assert_contains "Agent> The tool told me:"
	assert_contains "exit_code: 0"
	assert_contains "agent-loop: launching sandbox for tool execution..."
	assert_contains 'tool run_command({"command":"sh -c '\''echo Hello from Sandbox > ~/greeting.txt'\''"}): completed'
	assert_contains "agent-loop: saved filesystem state to new backup backup=\"$HOME/.local/sandboxed-tools/demo/fs/backup-"
	no_sandbox demo			# deleted on exit
	ls "$HOME"/.local/sandboxed-tools/demo/fs/backup-*.tar.gz
	# system, user, assistant (tool call), tool, assistant: Go encoding, one per line
	[ "$(wc -l <"$(hist demo)")" -eq 5 ]
	jq -s -e 'map(.role) == ["system","user","assistant","tool","assistant"]' "$(hist demo)"
	grep -q '"content":"run: sh -c '\''echo Hello from Sandbox \\u003e ~/greeting.txt'\''"' "$(hist demo)"
	jq -s -e '.[2].tool_calls[0].id == "eliza-run-1" and .[3].tool_call_id == "eliza-run-1"' "$(hist demo)"

	run --separate-stderr eliza -session demo <<'EOF'
run: cat ~/greeting.txt
EOF
	assert_status 0
	[[ "$stderr" == *"restoring filesystem to sandbox..."* ]]
	[[ "$stderr" == *"restoring filesystem from latest backup backup="* ]]
	[ "${lines[0]}" = "$RULE" ]
	[ "${lines[1]}" = 'Resumed session "demo" with 5 messages in history:' ]
	[ "${lines[2]}" = "$RULE" ]
	[ "${lines[3]}" = "User> run: sh -c 'echo Hello from Sandbox > ~/greeting.txt'" ]
	[ "${lines[4]}" = "Agent> The tool told me:" ]
	assert_contains "Hello from Sandbox"
	jq -s -e '.[-2].content | startswith("stdout:\nHello from Sandbox\n")' "$(hist demo)"
	no_sandbox demo
}

@test "input: empty lines prompt again, CR is dropped, /QUIT ends, EOF exits 0" {
	run eliza -session inp < <(printf '\n   \nhello there\r\n/QUIT\nnever read\n')
	assert_status 0
	assert_contains "Agent> What do you think it means when you say 'hello there'?"
	[ "$(grep -c '"role":"user"' "$(hist inp)")" -eq 1 ]
	run eliza -session inp < <(printf 'no newline at the end')
	assert_status 0
	[ "$(grep -c '"role":"user"' "$(hist inp)")" -eq 1 ]
}

# expire_between SESSION FIRST SECOND: agent-loop with a 3 s sandbox lifetime runs the tool
# call "run: FIRST", lets the sandbox expire, runs "run: SECOND" and exits; its stderr is in
# $BATS_TEST_TMPDIR/err.
expire_between() {
	agent_fed -session "$1" -ttl 3s
	echo "run: $2" >&4
	wait_snapshot
	wait_until no_sandbox "$1"		# the 3 s lifetime passes
	echo "run: $3" >&4
	echo "/exit" >&4
	fed_end
}

@test "an expired sandbox is recreated and restored on the next tool call" {
	expire_between exp "echo kept > ~/kept.txt" "cat ~/kept.txt"
	run cat "$BATS_TEST_TMPDIR/err"
	assert_contains "Active sandbox was deleted or expired, will recreate it"
	[ "$(grep -c 'launching sandbox for tool execution' "$BATS_TEST_TMPDIR/err")" -eq 2 ]
	assert_contains "restoring filesystem from latest backup"
	jq -s -e '.[-2].content == "stdout:\nkept\n\nstderr:\n\nexit_code: 0"' "$(hist exp)"
}

@test "a file written with a relative path is in the home: it survives expiry and restore" {
	expire_between rel "echo hi > greeting.txt" "cat greeting.txt; pwd"
	grep -q "restoring filesystem from latest backup" "$BATS_TEST_TMPDIR/err"
	jq -s -e '.[-2].content == "stdout:\nhi\n/home/clawtainer\n\nstderr:\n\nexit_code: 0"' "$(hist rel)"
}

@test "a sandbox deleted behind its back is recreated with the home restored" {
	agent_fed -session gone
	pid=$FED_PID
	echo "run: echo v1 > ~/f" >&4
	wait_snapshot
	sbx-delete gone
	echo "run: cat ~/f" >&4
	echo "/exit" >&4
	fed_end
	grep -q "Active sandbox was deleted or expired, will recreate it" "$BATS_TEST_TMPDIR/err"
	jq -s -e '.[-2].content | startswith("stdout:\nv1\n")' "$(hist gone)"
	no_sandbox gone
}

# state_of NAME: the local sandbox's state in sbx-list (running, paused), empty when none.
state_of() { sbx-list | jq -r --arg n "$1" 'select(.name == $n) | .state'; }
is_paused() { [ "$(state_of "$1")" = paused ]; }

@test "-idle pause: an idle-expired sandbox is resumed by the next turn with its background process, nothing restored" {
	agent_fed -session nap -ttl 2s -idle pause
	echo "run: echo kept > ~/kept.txt; setsid sleep 343.$$ >/dev/null 2>&1 </dev/null & echo \$! > ~/bg.pid" >&4
	wait_snapshot
	wait_until is_paused nap		# the 2 s lifetime passes: paused, not deleted
	echo "run: kill -0 \$(cat ~/bg.pid) && echo alive; cat ~/kept.txt" >&4
	echo "/exit" >&4
	fed_end
	jq -s -e '.[-2].content == "stdout:\nalive\nkept\n\nstderr:\n\nexit_code: 0"' "$(hist nap)"
	run cat "$BATS_TEST_TMPDIR/err"
	[ "$(grep -c 'launching sandbox for tool execution' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'restoring filesystem' <<<"$output")" -eq 1 ]	# the first turn's, only
	[[ "$output" != *"Active sandbox was deleted or expired"* ]]
	no_sandbox nap		# leaving agent-loop deletes it as always
}

@test "-idle pause: a sandbox paused past -paused-ttl is gone, and the next turn restores from the backup" {
	agent_fed -session lapse -ttl 2s -idle pause -paused-ttl 2s
	echo "run: echo kept > ~/kept.txt; setsid sleep 347.$$ >/dev/null 2>&1 </dev/null &" >&4
	wait_snapshot
	wait_until is_paused lapse
	wait_until no_sandbox lapse		# and 2 s later deleted
	run pgrep -f "^sleep 347.$$"
	assert_status 1
	echo "run: cat ~/kept.txt" >&4
	echo "/exit" >&4
	fed_end
	run cat "$BATS_TEST_TMPDIR/err"
	assert_contains "Active sandbox was deleted or expired, will recreate it"
	assert_contains "restoring filesystem from latest backup"
	jq -s -e '.[-2].content == "stdout:\nkept\n\nstderr:\n\nexit_code: 0"' "$(hist lapse)"
}

@test "a failing command is a failed tool call with its exit code" {
	run eliza -session fail <<<'run: echo oops >&2; exit 3'
	assert_status 0
	assert_contains 'tool run_command({"command":"echo oops >&2; exit 3"}): failed: exit_code: 3'
	run ! grep -q '): completed' <<<"$output"
	jq -s -e '.[3].content == "stdout:\n\nstderr:\noops\n\nexit_code: 3"' "$(hist fail)"
}

@test "a tool's own failure is logged as failed; its success as completed" {
	start_stub "$(answer_tool read '{"path":"/nope"}')" "$(answer_tool ls '{"path":"/nope"}')" \
		"$(answer_tool write '{"path":"/proc/x/y","content":"z"}')" "$(answer_tool ls '{}')" \
		"$(stub_text 'all done')"
	run agent-loop -session tf <<<'go'
	assert_status 0
	assert_contains 'tool read({"path":"/nope"}): failed: Failed to read "/nope":'
	assert_contains 'tool ls({"path":"/nope"}): failed: Failed to list "/nope":'
	assert_contains 'tool write({"path":"/proc/x/y","content":"z"}): failed: failed to write file "/proc/x/y":'
	assert_contains 'tool ls({}): completed'
	assert_contains "Agent> all done"
}

# on_tty CMD: CMD (a shell command line) with a terminal for its output, as script(1) makes
# one; the terminal's text in $output.
on_tty() {
	run script -qec "$1" /dev/null </dev/null
}

@test "on a terminal: a live running line for a tool call over 2 s, then erased; never on a pipe" {
	on_tty "printf 'run: sleep 3.5; echo slept\\n' | OPENAI_MODEL=fake-eliza agent-loop -session live"
	assert_status 0
	assert_contains 'agent-loop: running: run_command({"command":"sleep 3.5; echo slept"}) (2 s)'
	# erased before the tool's line
	assert_contains $'(2 s)\r\033[K'
	assert_contains 'tool run_command({"command":"sleep 3.5; echo slept"}): completed'
	run eliza -session live2 <<<'run: sleep 2.5'
	assert_status 0
	assert_contains 'tool run_command({"command":"sleep 2.5"}): completed'
	run ! grep -q 'running:' <<<"$output"
}

@test "on a terminal: a line per LLM retry saying when, which and why; never on a pipe" {
	local fail='{"status": 503, "json": {"error": {"message": "overloaded"}}}'
	start_stub "$fail" "$fail" "$(stub_text 'back')"
	on_tty "printf 'hi\\n' | SBX_TEST_TIME_SCALE=0.01 agent-loop -session retry"
	assert_status 0
	assert_contains 'agent-loop: retrying in '
	[[ "$output" =~ 'agent-loop: retrying in '[0-9]+' s (1/4): llm: api error (status 503): overloaded' ]]
	[[ "$output" =~ 'agent-loop: retrying in '[0-9]+' s (2/4): llm: api error (status 503): overloaded' ]]
	assert_contains "Agent> back"
	stop_stub
	rm -rf "$STUB_DIR"
	start_stub "$fail" "$(stub_text 'back')"
	run env SBX_TEST_TIME_SCALE=0.01 agent-loop -session retry2 <<<'hi'
	assert_status 0
	assert_contains "Agent> back"
	run ! grep -q 'retrying' <<<"$output"
}

@test "unknown tools and bad arguments become upstream's error texts for the model" {
	start_stub "$(answer_tool nope '{}')" "$(answer_tool run_command '{"command":')" \
		"$(answer_tool read '{"path":7}')" "$(stub_text 'all done')"
	run agent-loop -session bad <<<'go'
	assert_status 0
	assert_contains "Agent> all done"
	assert_contains "tool nope({}): failed: Error calling tool \"nope\": tool \"nope\" not found"
	jq -s -e '.[3].content == "Error calling tool \"nope\": tool \"nope\" not found"' "$(hist bad)"
	jq -s -e '.[5].content | startswith("Error calling tool \"run_command\": failed to parse arguments: ")' "$(hist bad)"
	jq -s -e '.[7].content == "Error calling tool \"read\": failed to parse arguments: json: cannot unmarshal number into Go struct field .path of type string"' "$(hist bad)"
	# each request carried the tools, sorted by name, and the whole history
	jq -s -e '.[0].body.tools | map(.function.name) == ["ls","read","run_command","write"]' "$STUB_DIR/requests.jsonl"
	jq -s -e '.[3].body.messages | length == 8' "$STUB_DIR/requests.jsonl"
	jq -s -e 'all(.[]; .body.model == "stub-model")' "$STUB_DIR/requests.jsonl"
}

@test "a tool timeout kills the command's process tree and tells the model" {
	run eliza -session slow -tool-timeout 1s <<<"run: sh -c \"sleep 7391.$$ & sleep 7391.$$; echo never\""
	assert_status 0
	assert_contains 'tool "run_command" timed out after 1s'
	jq -s -e '.[3].content == "Error calling tool \"run_command\": tool \"run_command\" timed out after 1s: context deadline exceeded"' "$(hist slow)"
	wait_until ! pgrep -f -x "sleep 7391.$$"
}

@test "an LLM error ends the CLI with upstream's text; the session stays usable" {
	start_stub '{"status": 400, "body": "{\n  \"error\": {\n    \"message\": \"bad model\"\n  }\n}\n"}' "$(stub_text 'back again')"
	run agent-loop -session llmerr <<<'hello'
	assert_status 111
	# a multi-line body: the vendor's message, on one line
	assert_contains 'agent-loop: failed to call LLM: llm: api error (status 400): bad model'
	[[ $output != *'failed to call LLM: }'* ]]
	jq -s -e 'map(.role) == ["system","user"]' "$(hist llmerr)"
	run agent-loop -session llmerr <<<'hello again'
	assert_status 0
	assert_contains 'Resumed session "llmerr" with 2 messages in history:'
	assert_contains "Agent> back again"
}

@test "a torn last line (crash mid-append) is moved aside with a warning and cut at once" {
	run eliza -session torn <<<'first'
	assert_status 0
	printf '{"role":"user","content":"half a li' >>"$(hist torn)"
	run eliza -session torn <<<'second'
	assert_status 0
	assert_contains "agent-loop: warning: moved 1 bad line of $(hist torn) aside to $(hist torn).corrupt (line 4: torn, "
	assert_contains 'Resumed session "torn" with 3 messages in history:'
	[ "$(wc -l <"$(hist torn)")" -eq 5 ]
	jq -s -e 'map(.content) | .[1] == "first" and .[3] == "second"' "$(hist torn)"
	[ "$(cat "$(hist torn).corrupt")" = '{"role":"user","content":"half a li' ]
	# a bad line in the middle goes aside too; the session goes on from the good ones
	sed -i '2s/.*/{not json/' "$(hist torn)"
	run eliza -session torn <<<'third'
	assert_status 0
	assert_contains "agent-loop: warning: moved 1 bad line of $(hist torn) aside to $(hist torn).corrupt (line 2: "
	assert_contains 'Resumed session "torn" with 4 messages in history:'
	jq -s -e 'map(.content) | .[2] == "second" and .[4] == "third"' "$(hist torn)"
	[ "$(tail -n 1 "$(hist torn).corrupt")" = '{not json' ]
}

@test "invalid session names are refused with upstream's texts, before the API key check" {
	run eliza -session Bad </dev/null
	assert_status 100
	[ "$output" = 'agent-loop: invalid sessionName "Bad": session name must be lowercase alphanumeric' ]
	run eliza -session "$(printf 'a%.0s' {1..41})" </dev/null
	assert_status 100
	assert_contains "session name must be no more than 40 characters long"
	run eliza -session "" </dev/null
	assert_status 100
	[ "$output" = "agent-loop: sessionName is required" ]
	SESSION_NAME=../x run agent-loop </dev/null
	assert_status 100
	assert_contains 'invalid sessionName "../x"'
	run eliza -homedir "" </dev/null
	assert_status 100
	[ "$output" = "agent-loop: homeDir must not be empty" ]
	[ ! -d "$HOME/.local/sandboxed-tools/Bad" ]
}

@test "a real model without an API key is fatal; SESSION_NAME picks the session" {
	OPENAI_MODEL=gemini-3.5-flash run agent-loop </dev/null
	assert_status 100
	[ "$output" = "agent-loop: GEMINI_API_KEY or OPENAI_API_KEY environment variable is required" ]
	SESSION_NAME=fromenv run eliza </dev/null
	assert_status 0
	assert_contains "Session Name: fromenv"
}

@test "backend selection: kubernetes without configuration fails like upstream; KUBECONFIG selects it" {
	SANDBOX_BACKEND=kubernetes run eliza -session k </dev/null
	assert_status 100
	assert_contains "agent-loop: failed to get kubernetes configuration: "
	run eliza -session k -backend nowhere </dev/null
	assert_status 100
	assert_contains 'unknown backend "nowhere"'
	printf 'apiVersion: v1\nkind: Config\n' >"$BATS_TEST_TMPDIR/kc"
	KUBECONFIG=$BATS_TEST_TMPDIR/kc run eliza -session k2 -backend local </dev/null
	assert_status 0
	assert_contains "Sandbox Backend: local (selected with -backend)"
	KUBECONFIG=$BATS_TEST_TMPDIR/kc run eliza -session k3 -h
	assert_status 0
}

@test "-max-tool-rounds stops a runaway turn with a clear message and a consistent history" {
	start_stub "$(answer_tool run_command '{"command":"true"}' | jq -c '. + {repeat: true}')"
	run agent-loop -session loop -max-tool-rounds 3 <<<'loop forever'
	assert_status 0
	assert_contains "agent-loop: warning: stopped after 3 tool rounds in one turn"
	[ "$(wc -l <"$STUB_DIR/requests.jsonl")" -eq 3 ]
	jq -s -e 'map(.role) == ["system","user","assistant","tool","assistant","tool","assistant","tool"]' "$(hist loop)"
	ls "$HOME"/.local/sandboxed-tools/loop/fs/backup-*.tar.gz
}

@test "-v shows the documents exchanged between the steps, never the API key" {
	start_stub "$(answer_tool run_command '{"command":"echo traced"}')" "$(stub_text done)"
	run agent-loop -v -session verb <<<'trace me'
	assert_status 0
	assert_contains 'agent-loop: llm-chat <: {"model":"stub-model","messages":[{"role":"system"'
	assert_contains 'agent-loop: llm-chat >: {"message":'
	assert_contains 'agent-loop: sbx-tool <: {"id":"call-1","type":"function"'
	assert_contains 'agent-loop: sbx-tool >: {"role":"tool"'
	assert_contains 'agent-loop: sbx-create >: {"name":"verb"'
	assert_contains 'agent-loop: $: sbx-tool -backend local -namespace default -toolset basic -tool-timeout 2m0s -homedir /home/clawtainer verb'
	assert_contains 'agent-loop: $: llm-chat -stream'
	[[ "$output" != *"$STUB_KEY"* ]]
	# the key still reached the API
	jq -s -e --arg k "$STUB_KEY" '.[0].headers.authorization == "Bearer " + $k' "$STUB_DIR/requests.jsonl"
}

@test "SIGINT during a turn cancels it, keeps the history consistent, and the chat goes on" {
	agent_fed -session intr
	pid=$FED_PID
	echo "run: sleep 7392.$$" >&4
	wait_until pgrep -f -x "sleep 7392.$$"
	kill -INT "$pid"
	wait_until grep -q "turn cancelled" "$BATS_TEST_TMPDIR/err"
	wait_until ! pgrep -f -x "sleep 7392.$$"
	echo "run: echo after-cancel" >&4
	echo "/exit" >&4
	fed_end
	grep -q "after-cancel" "$BATS_TEST_TMPDIR/out"
	grep -qF "tool run_command({\"command\":\"sleep 7392.$$\"}): cancelled" "$BATS_TEST_TMPDIR/err"
	jq -s -e '.[3] == {"role":"tool","content":"Tool \"run_command\" was not run to completion: the user cancelled the turn.","tool_call_id":"eliza-run-1"}' "$(hist intr)"
	jq -s -e '.[4].role == "user"' "$(hist intr)"
	no_sandbox intr
}

@test "SIGINT during the LLM call stops llm-chat and stores nothing but the user line" {
	start_stub '{"hang": true}' "$(stub_text 'second answer')"
	agent_fed -session llmc
	pid=$FED_PID
	echo "first" >&4
	wait_until test -s "$STUB_DIR/requests.jsonl"
	kill -INT "$pid"
	wait_until grep -q "turn cancelled" "$BATS_TEST_TMPDIR/err"
	echo "second" >&4
	echo "/exit" >&4
	fed_end
	grep -q "Agent> second answer" "$BATS_TEST_TMPDIR/out"
	jq -s -e 'map(.role) == ["system","user","user","assistant"]' "$(hist llmc)"
}

@test "SIGINT at the prompt exits 130 after deleting the sandbox" {
	agent_fed -session quit
	pid=$FED_PID
	echo "run: true" >&4
	wait_snapshot
	wait_until bash -c 'grep -q "exit_code: 0" "$1" && [ "$(tail -c 7 "$1")" = "$(printf "\nUser> ")" ]' _ "$BATS_TEST_TMPDIR/out"
	kill -INT "$pid"
	rc=0
	finish "$pid" || rc=$?
	exec 4>&-
	[ "$rc" -eq 130 ]
	no_sandbox quit
}

@test "in a terminal (tmux): line editing, streaming answers, Ctrl-C cancels, then exits" {
	TMUX_SOCK=$BATS_TEST_TMPDIR/tmux.sock
	tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s t -x 160 -y 50 \
		"env PATH='$PATH' HOME='$HOME' XDG_STATE_HOME='$XDG_STATE_HOME' OPENAI_MODEL=fake-eliza agent-loop -session tty; echo EXITED:\$?; sleep 60"
	pane() { tmux -S "$TMUX_SOCK" capture-pane -p -t t -S -200; }
	keys() { tmux -S "$TMUX_SOCK" send-keys -t t "$@"; }
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q '^User>'"
	keys -l 'run: echo edited-lineX'
	keys BSpace Enter
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q '^edited-line$'"
	keys -l "run: sleep 7393.$$"
	keys Enter
	wait_until pgrep -f -x "sleep 7393.$$"
	keys C-c
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q 'turn cancelled'"
	keys -l '/exit'
	keys Enter
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q 'EXITED:0'"
	run pane
	assert_contains "Welcome to the Sandboxed Tools example!"
	assert_contains "Agent> The tool told me:"
	no_sandbox tty
	jq -s -e '.[1].content == "run: echo edited-line"' "$(hist tty)"
}

@test "make run's script starts the local backend with fake-eliza when no key is set, and says so" {
	run "$SBX_TOP/scripts/run-agent" -session mk <<<'run: echo via-make-run'
	assert_status 0
	assert_contains "run-agent: neither GEMINI_API_KEY nor OPENAI_API_KEY is set: using the built-in fake-eliza model"
	assert_contains "Sandbox Backend: local (selected with -backend)"
	assert_contains "via-make-run"
}

@test "man page examples" {
	run eliza -session example <<'EOF'
run: sh -c 'echo Hello from Sandbox > ~/greeting.txt'
/exit
EOF
	assert_status 0
	run eliza -session example <<<'run: cat ~/greeting.txt'
	assert_status 0
	assert_contains 'Resumed session "example" with 5 messages in history:'
	assert_contains "Hello from Sandbox"
}

@test "a sandbox that cannot be created ends the CLI; the history answers the call" {
	SANDBOX_IMAGE=debian:bookworm-slim run eliza -session nocreate <<<'run: true'
	assert_status 111
	assert_contains "agent-loop: failed to create sandbox: "
	assert_contains "cannot pull image"
	jq -s -e 'map(.role) == ["system","user","assistant","tool"]' "$(hist nocreate)"
	jq -s -e '.[3].content | startswith("Error calling tool \"run_command\": failed to create sandbox: ")' "$(hist nocreate)"
	run eliza -session nocreate <<<'run: echo works-now'
	assert_status 0
	assert_contains "works-now"
}

@test "in a terminal (tmux): Ctrl-C at the prompt, over a half-typed line, exits 130" {
	TMUX_SOCK=$BATS_TEST_TMPDIR/tmux.sock
	tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s t -x 160 -y 50 \
		"env PATH='$PATH' HOME='$HOME' XDG_STATE_HOME='$XDG_STATE_HOME' OPENAI_MODEL=fake-eliza agent-loop -session tty2; echo EXITED:\$?; sleep 60"
	pane() { tmux -S "$TMUX_SOCK" capture-pane -p -t t -S -200; }
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q '^User>'"
	tmux -S "$TMUX_SOCK" send-keys -t t -l 'half typed'
	tmux -S "$TMUX_SOCK" send-keys -t t C-c
	wait_until bash -c "$(declare -f pane); TMUX_SOCK='$TMUX_SOCK'; pane | grep -q 'EXITED:130'"
	jq -s -e 'map(.role) == ["system"]' "$(hist tty2)"
}

@test "Ctrl-C cancels the turn, a second Ctrl-C quits" {
	start_stub '{"hang": true}'
	agent_fed -session twice
	pid=$FED_PID
	echo "hello" >&4
	wait_until test -s "$STUB_DIR/requests.jsonl"
	kill -INT "$pid"
	# two signals sent at once may merge into one (signals are not queued): the second
	# comes once the first was handled
	wait_until grep -q "turn cancelled" "$BATS_TEST_TMPDIR/err"
	kill -INT "$pid"
	rc=0
	finish "$pid" || rc=$?
	exec 4>&-
	[ "$rc" -eq 130 ]
	jq -s -e 'map(.role) == ["system","user"]' "$(hist twice)"
}

@test "sandbox-shaping flags reach sbx-create unchanged; a bad one is refused at start" {
	start_stub "$(answer_tool run_command '{"command":"true"}')" "$(stub_text done)"
	run agent-loop -v -network -session netw <<<'go'
	assert_status 0
	assert_contains 'agent-loop: $: sbx-create -backend local -namespace default -homedir /home/clawtainer -network=true netw'
	# (a bad one: tests/usage-errors.txt)
}

@test "one process per session: a second agent-loop is refused naming the holder; a killed holder frees it" {
	agent_fed -session held
	pid=$FED_PID
	echo "run: echo first > ~/f" >&4
	wait_snapshot
	nlines=$(wc -l <"$(hist held)")
	run --separate-stderr eliza -session held <<<"run: echo second"
	assert_status 111
	[ "$stderr" = "agent-loop: session \"held\" is in use by agent-loop (pid $pid): a session is used by one process at a time" ]
	# the refused one touched nothing: the history and the holder's sandbox are as they were
	[ "$(wc -l <"$(hist held)")" = "$nlines" ]
	run sbx-exec held -- cat /home/clawtainer/f
	assert_json '.stdout == "first\n"'
	# the holder goes on; killed, it leaves the session free for the next one at once
	echo "run: echo again" >&4
	wait_until grep -q "run_command({\"command\":\"echo again\"}): completed" "$BATS_TEST_TMPDIR/err"
	kill -9 "$pid"
	wait "$pid" || true
	exec 4>&-
	run eliza -session held <<<"run: cat /home/clawtainer/f"
	assert_status 0
	assert_contains "first"
}

@test "one process per session: acp-server cannot load, sbx-mcp cannot serve a session agent-loop holds" {
	printf 'hello\n' | eliza -session acpheld >/dev/null 2>&1
	agent_fed -session acpheld
	pid=$FED_PID
	wait_until -p "$pid" grep -q "^$pid agent-loop$" "$HOME/.local/sandboxed-tools/acpheld/sessions/.lock"
	# (its input stays open until the answer is there: a server at end of input may stop first)
	mkfifo "$BATS_TEST_TMPDIR/acpin"
	# (a session agent-loop made is acp-server's to load only once imported)
	OPENAI_MODEL=fake-eliza acp-server -stdio -import-session acpheld <"$BATS_TEST_TMPDIR/acpin" >"$BATS_TEST_TMPDIR/acpout" 2>/dev/null 3>&- &
	acp=$!
	exec 6>"$BATS_TEST_TMPDIR/acpin"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"acpheld","cwd":"/","mcpServers":[]}}' >&6
	wait_until grep -q '"id":2' "$BATS_TEST_TMPDIR/acpout"
	exec 6>&-
	finish "$acp"
	jq -e --arg want "session \"acpheld\" is in use by agent-loop (pid $pid): a session is used by one process at a time" \
		'select(.id == 2) | .error.message == $want' "$BATS_TEST_TMPDIR/acpout"
	run --separate-stderr env OPENAI_MODEL=fake-eliza sbx-mcp -session acpheld </dev/null
	assert_status 111
	[ "$stderr" = "sbx-mcp: session \"acpheld\" is in use by agent-loop (pid $pid): a session is used by one process at a time" ]
	echo /exit >&4
	fed_end
}
