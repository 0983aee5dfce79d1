#!/usr/bin/env bats
# sbx-tool: one tool call in, one tool message out, with upstream's texts.

load helpers

setup() {
	setup_sbx_env
	sbx-create demo >/dev/null
}
teardown() { teardown_sbx_env; }

call() {	# call NAME ARGS-JSON-TEXT [sbx-tool flags...]
	local name=$1 args=$2
	shift 2
	jq -cn --arg n "$name" --arg a "$args" '{id:"call-1",type:"function",function:{name:$n,arguments:$a}}' |
		sbx-tool "$@" demo
}

@test "run_command reports stdout, stderr and the exit code" {
	run call run_command '{"command":"echo hi; echo oops >&2; exit 3"}'
	assert_status 1	# the command failed, so the tool did
	assert_json '.role == "tool" and .tool_call_id == "call-1"'
	assert_json '.content == "stdout:\nhi\n\nstderr:\noops\n\nexit_code: 3"'
	run call run_command '{"command":"true"}'
	assert_status 0
	[ "$(printf '%s' "$output" | jq -r 'keys_unsorted | join(",")')" = "role,content,tool_call_id" ]
}

@test "write then read and ls, relative to the home, with parents created" {
	run call write '{"path":"/home/clawtainer/a/b/c.txt","content":"hello\nworld\n"}'
	assert_json '.content == "Wrote file \"/home/clawtainer/a/b/c.txt\""'
	run call read '{"path":"/home/clawtainer/a/b/c.txt"}'
	assert_json '.content == "hello\nworld\n"'
	run call ls '{"path":"/home/clawtainer/a"}'
	assert_json '.content == "b/\n"'
	run call ls '{}'
	assert_json '.content == "a/\n"'	# tools start in the home (upstream: in /)
	run call read '{"path":"a/b/c.txt"}'
	assert_json '.content == "hello\nworld\n"'
}

@test "failures carry upstream's texts and exit 1" {
	run call read '{"path":"/nope"}'
	assert_status 1
	assert_json '.content == "Failed to read \"/nope\":\nstdout:\n\nstderr:\ncat: /nope: No such file or directory\n\nexit_code: 1"'
	run call ls '{"path":"/nope"}'
	assert_status 1
	assert_json '.content | startswith("Failed to list \"/nope\":\nstdout:\n\nstderr:\nls: cannot access")'
	run call write '{"path":"/proc/x/y","content":"z"}'
	assert_status 1
	assert_json '.content | startswith("failed to write file \"/proc/x/y\":\nstdout:\n")'
	run call write '{"path":"w.txt","content":"z"}'
	assert_status 0
}

@test "registry errors: unknown tool, bad arguments, missing path" {
	run call nosuch '{}'
	assert_status 1
	assert_json '.content == "Error calling tool \"nosuch\": tool \"nosuch\" not found"'
	run call read '{"path":5}'
	assert_status 1
	assert_json '.content == "Error calling tool \"read\": failed to parse arguments: json: cannot unmarshal number into Go struct field .path of type string"'
	run call read 'not json'
	assert_status 1
	assert_json '.content | startswith("Error calling tool \"read\": failed to parse arguments: ")'
	run call read ''
	assert_status 1
	assert_json '.content == "Error calling tool \"read\": failed to parse arguments: unexpected end of JSON input"'
	run call read '{}'
	assert_status 1
	assert_json '.content == "Error calling tool \"read\": failed to run tool: path is required"'
	run call write '{"content":"x"}'
	assert_status 1
	assert_json '.content == "Error calling tool \"write\": failed to run tool: path is required"'
}

@test "a tool timeout kills the command's processes and says so" {
	run call run_command '{"command":"setsid sleep 611 & sleep 612"}' -tool-timeout 500ms
	assert_status 1
	assert_json '.content == "Error calling tool \"run_command\": tool \"run_command\" timed out after 500ms: context deadline exceeded"'
	run sbx-exec -raw demo -- ps -eo args
	[[ "$output" != *"sleep 61"* ]]
}

@test "-list prints the declarations sorted by name" {
	run sbx-tool -list
	assert_status 0
	assert_json 'map(.function.name) == ["ls","read","run_command","write"]'
	assert_json '.[2].function.parameters.required == ["command"] and .[2].type == "function"'
	assert_json '.[2].function.description == "Executes a shell command inside a sandbox and returns the stdout and stderr."'
	TOOLSET=nosuch run sbx-tool -list
	assert_status 100
	assert_contains 'unknown toolset "nosuch" (available: basic, geminicli)'
}

@test "bad input on stdin is a usage error; a missing sandbox is 101" {
	run sbx-tool demo <<<'garbage'
	assert_status 100
	run sbx-tool demo <<<'{"id":"x"}'
	assert_status 100
	assert_contains "invalid tool call"
	run sbx-delete demo
	run call run_command '{"command":"true"}'
	assert_status 101
}

@test "man page examples" {
	run sh -c 'echo '\''{"id":"c1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"echo hi\"}"}}'\'' | sbx-tool demo'
	assert_status 0
	assert_json '. == {"role":"tool","content":"stdout:\nhi\n\nstderr:\n\nexit_code: 0","tool_call_id":"c1"}'
	run sh -c "sbx-tool -list | jq -r '.[].function.name'"
	[ "$output" = "$(printf 'ls\nread\nrun_command\nwrite')" ]
	run sh -c 'echo '\''{"id":"c2","type":"function","function":{"name":"nosuch","arguments":"{}"}}'\'' | sbx-tool demo || test $? -eq 1'
	assert_status 0
	assert_contains 'tool \"nosuch\" not found'
}

@test "unknown fields of a tool call are refused, naming them; vendor fields are accepted" {
	run sbx-tool demo <<<'{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"},"metadata":1}'
	assert_status 100
	[ "$output" = 'sbx-tool: invalid tool call: unknown field "metadata"' ]
	run sbx-tool demo <<<'{"id":"c","type":"function","function":{"name":"ls","arguments":"{}","argument":"x"}}'
	assert_status 100
	[ "$output" = 'sbx-tool: invalid tool call: unknown field "argument" in "function"' ]
	run sbx-tool demo <<<'{"id":"c","type":"tool","function":{"name":"ls","arguments":"{}"}}'
	assert_status 100
	assert_contains '"type" must be "function"'
	run sbx-tool demo <<<'{"id":7,"type":"function","function":{"name":"ls","arguments":"{}"}}'
	assert_status 100
	assert_contains '"id" must be a string'
	# what OpenAI-compatible APIs add (index when streamed, Gemini's signatures) is fine
	run sbx-tool demo <<<'{"index":0,"id":"c","type":"function","thought_signature":"s","extra_content":{"google":{}},"function":{"name":"run_command","arguments":"{\"command\":\"echo vendor\"}","thought_signature":"s"}}'
	assert_status 0
	assert_json '.content | startswith("stdout:\nvendor\n")'
}

@test "arguments may be a JSON object, as many frameworks send them, or JSON text; nothing else" {
	run sbx-tool demo <<<'{"id":"c","type":"function","function":{"name":"run_command","arguments":{"command":"echo as-object"}}}'
	assert_status 0
	assert_json '.tool_call_id == "c" and (.content | startswith("stdout:\nas-object\n"))'
	run sbx-tool demo <<<'{"id":"c","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"echo as-text\"}"}}'
	assert_status 0
	assert_json '.content | startswith("stdout:\nas-text\n")'
	run sbx-tool demo <<<'{"id":"c","type":"function","function":{"name":"run_command","arguments":["echo"]}}'
	assert_status 100
	[ "$output" = 'sbx-tool: invalid tool call: "function.arguments" must be a JSON string or object' ]
}

@test "large outputs: head and tail with gemini-cli's notice, the whole report kept in the sandbox" {
	run call run_command '{"command":"seq 1 100000; echo done >&2"}'
	assert_status 0
	assert_json '.content | startswith("Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/sbx/tool-outputs/session-demo/run_command_call-1.txt\nstdout:\n1\n2\n3\n")'
	assert_json '.content | test("\n\n\\.\\.\\. \\[548,930 characters omitted\\] \\.\\.\\.\n\n")'
	assert_json '.content | endswith("99999\n100000\n\nstderr:\ndone\n\nexit_code: 0")'
	assert_json '.content | length < 40200'
	run sbx-exec -raw demo -- sh -c 'head -c 11 /tmp/sbx/tool-outputs/session-demo/run_command_call-1.txt; tail -c 13 /tmp/sbx/tool-outputs/session-demo/run_command_call-1.txt; wc -c </tmp/sbx/tool-outputs/session-demo/run_command_call-1.txt'
	[ "$output" = "$(printf 'stdout:\n1\n2\nexit_code: 0588930')" ]
	# read is cut the same way
	sbx-exec demo -- sh -c 'seq 1 100000 >/home/clawtainer/big.txt' >/dev/null
	run call read '{"path":"/home/clawtainer/big.txt"}'
	assert_json '.content | startswith("Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/sbx/tool-outputs/session-demo/read_call-1.txt\n1\n2\n")'
	assert_json '.content | endswith("\n100000\n")'
}

@test "binary output: NUL bytes travel as \\u0000, invalid UTF-8 as U+FFFD, 16 MiB stay small" {
	run call run_command '{"command":"printf \"a\\000b\\377c\""}'
	assert_status 0
	[[ "$output" == *'a\u0000b'* ]]
	assert_json '.content == "stdout:\na\u0000b\ufffdc\nstderr:\n\nexit_code: 0"'
	# 16 MiB of random bytes: a valid message of at most a few hundred kilobytes, not an error
	call run_command '{"command":"head -c 16777216 /dev/urandom"}' >"$BATS_TEST_TMPDIR/msg"
	[ "$(wc -c <"$BATS_TEST_TMPDIR/msg")" -lt 400000 ]
	iconv -f UTF-8 -t UTF-8 "$BATS_TEST_TMPDIR/msg" >/dev/null
	run jq -r '.content | startswith("Output too large. Showing first 8,000 and last 32,000 characters.") and endswith("\nstderr:\n\nexit_code: 0")' "$BATS_TEST_TMPDIR/msg"
	[ "$output" = true ]
	# the whole output (8 MiB of it, as upstream keeps) is in the file the notice names
	run sbx-exec -raw demo -- sh -c 'wc -c </tmp/sbx/tool-outputs/session-demo/run_command_call-1.txt'
	[ "$output" -gt 8000000 ]
}
