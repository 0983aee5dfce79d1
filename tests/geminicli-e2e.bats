#!/usr/bin/env bats
# geminicli-e2e.bats — issue 7 end to end: the `geminicli` toolset through agent-loop and
# through acp-server (driven by acp-client -yolo), on the local backend, and through agent-loop
# on the kubernetes backend (scripts/kube-test-server). The OpenAI-compatible stub
# (tests/openai-stub.py) asks for each of the eight gemini-cli tools in turn; every tool
# message in the history must have gemini-cli's output form, and the request after each call
# must carry its result under the right tool_call_id.

bats_require_minimum_version 1.5.0
load helpers
load acp/common
load kube/server

H=/home/clawtainer	# the sandbox home (agent-loop's and acp-server's default -homedir)

setup() {
	setup_sbx_env
	ACP_PID=
	STUB_PID=
}

teardown() {
	stop_server
	stop_stub
	kts_stop
	teardown_sbx_env
}

# calls_for DIR: the eight calls, in order ("name<TAB>arguments"), and gemini-cli's output for
# each (printf formats; N stands for the process group id), for tools working in DIR.
calls_for() {
	local H=$1
	CALLS=(
		"run_shell_command	{\"command\":\"mkdir -p src && printf 'alpha\\\\nbeta\\\\n' > src/a.txt && echo made\"}"
		"list_directory	{\"dir_path\":\"$H/src\"}"
		"read_file	{\"file_path\":\"src/a.txt\"}"
		"write_file	{\"file_path\":\"src/b.txt\",\"content\":\"gamma\\n\"}"
		"replace	{\"file_path\":\"src/a.txt\",\"instruction\":\"capitalise beta\",\"old_string\":\"beta\",\"new_string\":\"BETA\"}"
		"glob	{\"pattern\":\"src/*.txt\"}"
		"grep_search	{\"pattern\":\"BETA\"}"
		"read_many_files	{\"include\":[\"src/b.txt\"]}"
	)
	WANT=(
		'<untrusted_context>\nOutput: made\nProcess Group PGID: N\n</untrusted_context>'
		"Directory listing for $H/src:\na.txt (11 bytes)"
		'alpha\nbeta\n'
		"Successfully created and wrote to new file: $H/src/b.txt. Here is the updated code:\ngamma\n"
		"Successfully modified file: $H/src/a.txt (1 replacements). Here is the updated code:\nalpha\nBETA\n"
		"Found 2 file(s) matching \"src/*.txt\" within $H, sorted by modification time (newest first):\n$H/src/%s\n$H/src/%s"
		'Found 1 match for pattern "BETA" in path ".":\n---\nFile: src/a.txt\nL1- alpha\nL2: BETA\n---'
		"--- $H/src/b.txt ---\n\ngamma\n\n\n\n\n--- End of content ---"
	)
}
calls_for "$H"

# The stub's script: the eight tool calls (ids gc-1 … gc-8), then a closing text.
script() {
	local i name args
	for i in "${!CALLS[@]}"; do
		name=${CALLS[$i]%%	*}
		args=${CALLS[$i]#*	}
		jq -cn --arg n "$name" --arg a "$args" --arg id "gc-$((i + 1))" '{json: {id: "r",
			choices: [{index: 0, finish_reason: "tool_calls", message: {role: "assistant",
			tool_calls: [{id: $id, type: "function", function: {name: $n, arguments: $a}}]}}]}}'
	done
	stub_text "all eight tools done"
}

# check_session HISTORY [EXTRA]: the tool messages and the stub's requests of the eight-call
# turn; EXTRA, a JSON array, names the tools offered after the eight (acp-server's plan tool).
check_session() {
	local hist=$1 extra=${2:-[]} i want got req
	[ "$(jq -s '[.[] | select(.role == "tool")] | length' "$hist")" -eq 8 ]
	for i in "${!CALLS[@]}"; do
		# shellcheck disable=SC2059
		want=$(printf -- "${WANT[$i]}"; echo .)
		if [ "$i" -eq 5 ]; then
			# glob sorts by mtime, newest first: replace (a.txt) ran after write_file (b.txt),
			# but both may fall in the same second; then the names decide (a before b)
			want=$(printf -- "${WANT[$i]}" a.txt b.txt; echo .)
			got=$(jq -s -j '[.[] | select(.role == "tool")][5].content' "$hist"; echo .)
			[ "$got" = "$want" ] || want=$(printf -- "${WANT[$i]}" b.txt a.txt; echo .)
		fi
		# the process group id differs from run to run
		got=$(jq -s -j '[.[] | select(.role == "tool")]['"$i"'].content' "$hist" |
			sed 's/^Process Group PGID: [0-9][0-9]*$/Process Group PGID: N/'; echo .)
		[ "$got" = "$want" ] || { echo "tool ${CALLS[$i]%%	*}:"; diff <(echo "$want") <(echo "$got"); return 1; }
		jq -s -e --arg id "gc-$((i + 1))" '[.[] | select(.role == "tool")]['"$i"'].tool_call_id == $id' "$hist" >/dev/null
		# request i+1 (0-based) is the one after call i: its last message is that result
		req=$(sed -n "$((i + 2))p" "$STUB_DIR/requests.jsonl")
		printf '%s' "$req" | jq -e --arg id "gc-$((i + 1))" --arg c "${want%.}" \
			'.body.messages[-1] | .role == "tool" and .tool_call_id == $id and
			 (.content | sub("(?m)^Process Group PGID: [0-9]+$"; "Process Group PGID: N")) == $c' >/dev/null ||
			{ echo "request $((i + 2)) does not carry gc-$((i + 1))'s result" >&2; return 1; }
		printf '%s' "$req" | jq -e --arg id "gc-$((i + 1))" \
			'.body.messages[-2].tool_calls[0].id == $id' >/dev/null
	done
	[ "$(wc -l <"$STUB_DIR/requests.jsonl")" -eq 9 ]
	# every request offered the eight gemini-cli tools
	jq -s -e --argjson extra "$extra" 'all(.[]; [.body.tools[].function.name] == ["glob","grep_search","list_directory","read_file","read_many_files","replace","run_shell_command","write_file"] + $extra)' \
		"$STUB_DIR/requests.jsonl"
	jq -s -e '.[-1].role == "assistant" and .[-1].content == "all eight tools done"' "$hist"
}

@test "agent-loop -toolset geminicli: the eight gemini-cli tools in one turn, local backend" {
	start_stub < <(script)
	run --separate-stderr agent-loop -toolset geminicli -session gem <<<'use every tool'
	assert_status 0
	assert_contains "all eight tools done"
	[[ "$stderr" == *'tool read_many_files({"include":["src/b.txt"]}): completed'* ]]
	check_session "$HOME/.local/sandboxed-tools/gem/sessions/latest.jsonl"
	# the files really are in the sandbox's backup
	tar -xzOf "$(ls "$HOME"/.local/sandboxed-tools/gem/fs/backup-*.tar.gz | tail -n 1)" --wildcards '*src/a.txt' |
		grep -qx BETA
}

@test "agent-loop -toolset geminicli on the kubernetes backend (kube-test-server): the same turn" {
	kts_start -ready-delay 100ms
	start_stub < <(script)
	run --separate-stderr agent-loop -backend kubernetes -toolset geminicli -session gemk <<<'use every tool'
	assert_status 0
	assert_contains "Sandbox Backend: kubernetes (selected with -backend)"
	assert_contains "all eight tools done"
	check_session "$HOME/.local/sandboxed-tools/gemk/sessions/latest.jsonl"
	# the Sandbox asked for the toolset's image, and went away on exit
	kts_ctl requests | jq -s -e 'any(.[]; .method == "POST" and (.path | endswith("/sandboxes")) and
		(.body | if type == "string" then fromjson else . end |
		 .spec.podTemplate.spec.containers[0].image | startswith("geminicli-toolbox")))' >/dev/null
	kts_ctl requests | jq -s -e 'any(.[]; .method == "DELETE" and (.path | endswith("/sandboxes/gemk")))' >/dev/null
}

@test "acp-server -toolset geminicli via acp-client -yolo: the eight tools in one turn" {
	# the tools work where the client's cwd maps to in the sandbox: <home>/<its last name>
	calls_for "$H/w"
	mkdir -p "$BATS_TEST_TMPDIR/w"
	start_stub < <(script)
	start_server -toolset geminicli
	run acp-client -addr "$ACP_ADDR" -cwd "$BATS_TEST_TMPDIR/w" -yolo -prompt "use every tool"
	assert_status 0
	assert_contains '[tool: execute] Run `mkdir -p src && printf'
	assert_contains '[tool] Read src/b.txt → completed'
	assert_contains "all eight tools done"
	assert_contains "[turn ended: end_turn]"
	# the one session of the server (acp<16 hex>)
	hists=("$HOME"/.local/sandboxed-tools/acp*/sessions/latest.jsonl)
	[ "${#hists[@]}" -eq 1 ]
	[ -s "${hists[0]}" ]
	check_session "${hists[0]}" '["write_todos"]'
}

# The stub's script of failing calls (ids gf-1 …) and one that works, then a closing text.
failing_script() {
	local calls=(
		'read_file	{"file_path":"nope.txt"}'
		'replace	{"file_path":"a.txt","old_string":"x","new_string":"y"}'
		'list_directory	{"dir_path":"nope"}'
		'write_file	{"file_path":"/proc/x/y","content":"x"}'
		'run_shell_command	{"command":"exit 2"}'
		'run_shell_command	{"command":"echo fine"}'
	) i
	for i in "${!calls[@]}"; do
		stub_call "gf-$((i + 1))" "${calls[$i]%%	*}" "${calls[$i]#*	}"
	done
	stub_text "failures seen"
}

@test "agent-loop and acp-client -toolset geminicli: a tool's own failure is failed, its success completed" {
	start_stub < <(failing_script)
	run --separate-stderr agent-loop -toolset geminicli -session gf <<<'fail'
	assert_status 0
	assert_contains "failures seen"
	[[ "$stderr" == *'tool read_file({"file_path":"nope.txt"}): failed: Error: tool "read_file" failed (exit code 1): '* ]]
	[[ "$stderr" == *'tool replace({"file_path":"a.txt","old_string":"x","new_string":"y"}): failed: Error: tool "replace" failed (exit code 1): params must have required property '"'instruction'"* ]]
	[[ "$stderr" == *'tool list_directory({"dir_path":"nope"}): failed: '* ]]
	[[ "$stderr" == *'tool write_file({"file_path":"/proc/x/y","content":"x"}): failed: '* ]]
	[[ "$stderr" == *'tool run_shell_command({"command":"exit 2"}): failed: Exit Code: 2'* ]]
	[[ "$stderr" == *'tool run_shell_command({"command":"echo fine"}): completed'* ]]
	stop_stub
	rm -rf "$STUB_DIR"
	start_stub < <(failing_script)
	start_server -toolset geminicli
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "fail"
	assert_status 0
	assert_contains '[tool] Read nope.txt → failed'
	assert_contains '[tool] List nope → failed'
	assert_contains '[tool] Run `exit 2` → failed'
	assert_contains '[tool] Run `echo fine` → completed'
	assert_contains "failures seen"
	[ "$(grep -c ' → failed$' <<<"$output")" -eq 5 ]
}

@test "agent-loop: a NUL byte in a tool result reaches the history and the next request whole" {
	nul_script() {
		local args='{"command":"head -c 600 /dev/zero | tr \"\\\\0\" x; printf \"\\\\0after nul\\\\n\""}'
		jq -cn --arg a "$args" '{json: {id: "r", choices: [{index: 0, finish_reason: "tool_calls",
			message: {role: "assistant", tool_calls: [{id: "nul-1", type: "function",
			function: {name: "run_shell_command", arguments: $a}}]}}]}}'
		stub_text "seen"
	}
	start_stub < <(nul_script)
	run --separate-stderr agent-loop -toolset geminicli -session nul <<<'print a NUL'
	assert_status 0
	hist="$HOME/.local/sandboxed-tools/nul/sessions/latest.jsonl"
	jq -s -e '[.[] | select(.role == "tool")][0].content | test("^<untrusted_context>\nOutput: x{600}\u0000after nul\nProcess Group PGID: [0-9]+\n</untrusted_context>$")' "$hist"
	sed -n 2p "$STUB_DIR/requests.jsonl" | jq -e '.body.messages[-1].content | contains("x\u0000after nul")'
}

@test "agent-loop: an image read_file returns reaches the model as an image part in a user message after the tool message" {
	# stub_call ID NAME ARGS for each step, then the answer; twice over two turns
	image_script() {
		stub_call img-1 run_shell_command '{"command":"printf \"\\211PNG\\r\\n\\032\\n\\0\\1\" > p.png; printf \"%PDF-1.4\\n\" > d.pdf"}'
		stub_call img-2 read_file '{"file_path":"p.png"}'
		stub_call img-3 read_file '{"file_path":"d.pdf"}'
		stub_text "a tiny image"
		stub_text "still seen"
	}
	start_stub < <(image_script)
	# a model of a family whose endpoints take images (others get a line instead)
	run --separate-stderr env OPENAI_MODEL=gpt-4o agent-loop -toolset geminicli -session img <<<'look at p.png'
	assert_status 0
	assert_contains "a tiny image"
	# the request after read_file: the tool message names the file, the user message after
	# it carries the image as a data URL
	sed -n 3p "$STUB_DIR/requests.jsonl" | jq -e '.body.messages[-2:] as [$t, $u] |
		$t.role == "tool" and $t.tool_call_id == "img-2" and ($t | has("inline_data") | not) and
		$t.content == "[image/png file '"$H"'/p.png, 10 bytes: sent as inline data]" and
		$u.role == "user" and $u.content == [
			{"type":"text","text":"File from tool call img-2: '"$H"'/p.png"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAQ=="}}]'
	# the PDF goes to a generic endpoint as a line saying it was not sent; the image stays
	sed -n 4p "$STUB_DIR/requests.jsonl" | jq -e '[.body.messages[] | select(.role == "user")][-1].content ==
		[{"type":"text","text":"File from tool call img-3: '"$H"'/d.pdf"},
		 {"type":"text","text":"'"$H"'/d.pdf (application/pdf): not sent, the model gpt-4o at this endpoint (generic) is not known to take it"}]
		and ([.body.messages[] | select(.role == "user" and (.content | type) == "array")] | length) == 2'
	# the history keeps the file with the tool message; a later turn sends it again
	hist="$HOME/.local/sandboxed-tools/img/sessions/latest.jsonl"
	jq -s -e '[.[] | select(.role == "tool" and .tool_call_id == "img-2")][0].inline_data ==
		[{"mime_type":"image/png","data":"iVBORw0KGgoAAQ==","name":"'"$H"'/p.png"}]' "$hist"
	run --separate-stderr env OPENAI_MODEL=gpt-4o agent-loop -toolset geminicli -session img <<<'again'
	assert_status 0
	assert_contains "still seen"
	sed -n 5p "$STUB_DIR/requests.jsonl" | jq -e '[.body.messages[] | .content | arrays | .[] |
		select(.type == "image_url")] | length == 1'
}

@test "acp-server: an image read_file returns reaches the model as an image part after the tool message" {
	acp_image_script() {
		stub_call ai-1 run_shell_command '{"command":"printf \"\\211PNG\\r\\n\\032\\n\\0\\1\" > p.png"}'
		stub_call ai-2 read_file '{"file_path":"p.png"}'
		stub_text "an image seen"
	}
	mkdir -p "$BATS_TEST_TMPDIR/w"
	start_stub < <(acp_image_script)
	OPENAI_MODEL=gpt-4o start_server -toolset geminicli
	run acp-client -addr "$ACP_ADDR" -cwd "$BATS_TEST_TMPDIR/w" -yolo -prompt "look"
	assert_status 0
	assert_contains "an image seen"
	assert_contains '[tool] Read p.png → completed'
	sed -n 3p "$STUB_DIR/requests.jsonl" | jq -e '.body.model == "gpt-4o" and .body.messages[-2:] as [$t, $u] |
		$t.role == "tool" and $t.tool_call_id == "ai-2" and
		$t.content == "[image/png file '"$H"'/w/p.png, 10 bytes: sent as inline data]" and
		$u.content[1] == {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAQ=="}}'
}
