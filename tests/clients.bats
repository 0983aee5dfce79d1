#!/usr/bin/env bats
# Real agent CLIs against sbx-mcp, configured as README.md tells users: OpenAI's Codex
# (`codex exec`), Anthropic's Claude Code (`claude -p`) and Google's gemini-cli (`gemini -p`),
# their npm packages, each talking to a local model stub (tests/clients/model-stub.py) that asks for sbx tool calls. Everything runs
# in a network namespace whose only way out is a trap interface that must count no packet.

bats_require_minimum_version 1.5.0
load helpers
load clients/common

setup() {
	setup_sbx_env
	# Codex hands its MCP servers only a few variables (HOME, PATH, …): sbx-mcp's state is
	# where it is without XDG_STATE_HOME, so that teardown finds the sandboxes.
	export XDG_STATE_HOME=$HOME/.local/state
	clients_install
	offline_up
	STUB_PID=
	MCP_PID=
	MARK=sbx-mark-$$
	mkdir -p "$BATS_TEST_TMPDIR/work"
	cd "$BATS_TEST_TMPDIR/work" || return 1
}

teardown() {
	[ -z "$MCP_PID" ] || terminate "$MCP_PID" || true
	stop_model_stub
	offline_down
	teardown_sbx_env
}

# The model's two calls: a command that prints the marker and the sandbox's host name, and
# one that fails.
CALLS='[{"command":"echo MARK on $(uname -n)"},{"command":"ls /nonexistent-dir"}]'
calls() { printf '%s' "$CALLS" | sed "s/MARK/$MARK/"; }

# codex ARGS…: `codex exec` in the offline namespace, JSON events in $output.
codex() {
	run --separate-stderr offline timeout 120 env STUB_API_KEY=sk-stub-dummy CI=true \
		"$CODEX" exec --json --skip-git-repo-check "$@" </dev/null
	[ "$status" -eq 0 ] || echo "$stderr" >&2
}

# claude ARGS…: `claude -p` in the offline namespace at the stub, updater and every
# nonessential request off, MCP tools offered directly (not behind its tool search), the
# stream of JSON events in $output.
claude() {
	run --separate-stderr offline timeout 120 env CI=true DISABLE_AUTOUPDATER=1 \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ENABLE_TOOL_SEARCH=false \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$STUB_PORT" ANTHROPIC_API_KEY=sk-ant-stub-dummy \
		"$CLAUDE" "$@" </dev/null
	[ "$status" -eq 0 ] || echo "$stderr" >&2
}

# ran_in_sandbox RESULT: the marker's line, printed on a host other than this one.
ran_in_sandbox() {
	local line
	line=$(printf '%s' "$1" | grep -o "$MARK on [A-Za-z0-9_.-]\{4,\}") || { echo "no marker in: $1" >&2; return 1; }
	[ "$line" != "$MARK on $(uname -n)" ] || { echo "ran on the host: $line" >&2; return 1; }
}

# results_say LIST TEXT OK FAILED: the stub was sent two tool results (LIST: codex_results,
# claude_results or gemini_results): the first's TEXT (jq) holds the sandbox's marker line and
# OK (jq) holds for it, FAILED (jq) for the second; and nothing left loopback.
results_say() {
	run "$1"
	[ "${#lines[@]}" -eq 2 ]
	ran_in_sandbox "$(printf '%s' "${lines[0]}" | jq -r "$2")"
	printf '%s' "${lines[0]}" | jq -e "$3"
	printf '%s' "${lines[1]}" | jq -e "$4"
	[ "$(trapped)" -eq 0 ]
}

# codex_saw SERVER: after `codex` ran CALLS through SERVER: Codex reported the first call
# completed and the second failed; the model was sent the sandbox's output of the first and
# the failure (stderr, exit status) of the second; nothing left loopback.
codex_saw() {
	printf '%s\n' "$output" | jq -e -s --arg s "$1" '[.[] | select(.type == "item.completed" and .item.type == "mcp_tool_call") | .item | [.server, .tool, .status]]
		== [[$s, "run_command", "completed"], [$s, "run_command", "failed"]]'
	results_say codex_results .output '.output | contains("\"exit_code\":0")' \
		'.output | contains("No such file or directory") and contains("\"exit_code\":2")'
}

@test "codex exec, README's stdio table: the command runs in the sandbox, its output reaches the model, a failing one is reported failed" {
	model_stub "$(calls)"
	codex_home sbx
	codex "run it"
	assert_status 0
	codex_saw sbx
}

@test "claude -p, README's claude mcp add: the command runs in the sandbox, its output reaches the model, a failing one as is_error" {
	model_stub "$(calls)"
	local -a add
	read -ra add < <(grep -m1 '^claude mcp add sbx -- ' "$SBX_TOP/README.md")
	[ "${#add[@]}" -gt 4 ]
	claude "${add[@]:1}"
	assert_status 0
	claude -p "run it" --allowedTools mcp__sbx --output-format stream-json --verbose
	assert_status 0
	results_say claude_results .content '(.is_error // false) == false and (.content | contains("\"exit_code\":0"))' \
		'.is_error == true and (.content | contains("No such file or directory"))'
}

@test "claude -p --mcp-config, README's JSON: without --allowedTools every call reaches the model refused, with it the command runs" {
	model_stub "$(calls)"
	grep -o '{"mcpServers": {"sbx": {[^`]*}}}' "$SBX_TOP/README.md" >"$BATS_TEST_TMPDIR/mcp.json"
	jq -e '.mcpServers.sbx.command == "sbx-mcp"' "$BATS_TEST_TMPDIR/mcp.json"
	claude -p "run it" --mcp-config "$BATS_TEST_TMPDIR/mcp.json" --output-format stream-json --verbose
	assert_status 0
	run claude_results
	[ "${#lines[@]}" -eq 2 ]
	printf '%s\n' "${lines[@]}" | jq -e -s 'all(.[]; .is_error == true and (.content |
		contains("Claude requested permissions to use mcp__sbx__run_command, but you haven'"'"'t granted it yet.")))'
	rm "$STUB_DIR/requests.jsonl"
	claude -p "run it" --mcp-config "$BATS_TEST_TMPDIR/mcp.json" --allowedTools mcp__sbx --output-format stream-json --verbose
	assert_status 0
	results_say claude_results .content '(.is_error // false) == false' '.is_error == true'
}

@test "codex exec, README's HTTP table: sbx-mcp -listen with its generated token from the environment variable the table names" {
	nsenter --net="/run/netns/$OFFLINE" sbx-mcp -listen 127.0.0.1:0 -backend local -toolset basic 2>"$BATS_TEST_TMPDIR/sbx-mcp.log" 3>&- &
	MCP_PID=$!
	local url token
	wait_until -p "$MCP_PID" grep -q 'serving MCP url="[^"]*"' "$BATS_TEST_TMPDIR/sbx-mcp.log"
	url=$(sed -n 's/.*serving MCP url="\([^"]*\)".*/\1/p' "$BATS_TEST_TMPDIR/sbx-mcp.log")
	token=$(sed -n 's/.*auth token written to \(.*\) (send.*/\1/p' "$BATS_TEST_TMPDIR/sbx-mcp.log")
	model_stub "$(calls)" mcp__sbx_http__run_command
	codex_home sbx-http
	sed -i "s|http://127.0.0.1:8765/mcp|$url|" "$CODEX_HOME/config.toml"	# (port: the README's, replaced)
	grep -qF "url = \"$url\"" "$CODEX_HOME/config.toml"
	SBX_MCP_TOKEN=$(cat "$token") codex "run it"
	terminate "$MCP_PID"
	MCP_PID=
	assert_status 0
	codex_saw sbx-http
}

@test "gemini -p, README's settings.json: the geminicli toolset's shell runs in the sandbox, a failing command reaches the model as an error" {
	model_stub "$(printf '%s' '[{"command":"echo MARK on $HOSTNAME"},{"command":"ls /nonexistent-dir"}]' | sed "s/MARK/$MARK/")" \
		mcp_sbx_run_shell_command
	gemini_home
	# (-m: a fixed model, not "auto", which first asks a classifier model for one)
	run --separate-stderr offline timeout 120 env CI=true GEMINI_API_KEY=stub-dummy \
		GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$STUB_PORT" \
		"$GEMINI" -p "run it" -m gemini-2.5-flash --skip-trust --approval-mode yolo --output-format stream-json </dev/null
	[ "$status" -eq 0 ] || echo "$stderr" >&2
	assert_status 0
	printf '%s\n' "$output" | jq -e -s '[.[] | select(.type == "tool_result") | .status] == ["success", "error"]'
	results_say gemini_results '.response | tostring' '.response.error == null' \
		'.response.error | contains("No such file or directory") and contains("Exit Code: 2")'
}

@test "claude -p, README's claude mcp add --transport http with the token file's bearer header: the command runs in the sandbox" {
	mkdir -p "$HOME/.config"
	(umask 077 && openssl rand -hex 32 >"$HOME/.config/sbx-mcp.token")
	nsenter --net="/run/netns/$OFFLINE" sbx-mcp -listen 127.0.0.1:0 -backend local -toolset basic \
		-auth-token-file "$HOME/.config/sbx-mcp.token" 2>"$BATS_TEST_TMPDIR/sbx-mcp.log" 3>&- &
	MCP_PID=$!
	local url add
	wait_until -p "$MCP_PID" grep -q 'serving MCP url="[^"]*"' "$BATS_TEST_TMPDIR/sbx-mcp.log"
	url=$(sed -n 's/.*serving MCP url="\([^"]*\)".*/\1/p' "$BATS_TEST_TMPDIR/sbx-mcp.log")
	model_stub "$(calls)" mcp__sbx-http__run_command
	# The README's two lines as one, its port replaced, its words as a shell makes them.
	add=$(sed -n '/^claude mcp add --transport http /{N;s/\\\n */ /;p}' "$SBX_TOP/README.md")
	add=${add/http:\/\/127.0.0.1:8765\/mcp/$url}	# (port: the README's, replaced)
	eval "set -- ${add#claude }"
	[ "$1 $2 $5" = "mcp add sbx-http" ]
	claude "$@"
	assert_status 0
	claude -p "run it" --allowedTools mcp__sbx-http --output-format stream-json --verbose
	terminate "$MCP_PID"
	MCP_PID=
	assert_status 0
	results_say claude_results .content '(.is_error // false) == false' '.is_error == true'
}
