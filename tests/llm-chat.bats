#!/usr/bin/env bats
# llm-chat: fake-eliza rules, request checks, and the OpenAI wire protocol against a scripted
# stub server (tests/openai-stub.py) on 127.0.0.1: pass-through fields, streaming split at
# awkward byte boundaries, retries, API errors, cuts, timeouts, signals, key hygiene.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	load stub
	setup_sbx_env
	STUB_DIR=$BATS_TEST_TMPDIR/stub
	STUB_PID=
	KEY=$STUB_KEY
}

teardown() {
	stop_stub
}

user_req() { printf '{"messages":[{"role":"user","content":"%s"}]}' "$1"; }

eliza() { OPENAI_MODEL=fake-eliza llm-chat "$@"; }

# ---- usage and input ----

# (-h, unknown flags, bad durations and extra operands: tests/usage-errors.txt)

@test "garbage on stdin is refused with a clear error and the usage status" {
	local doc
	while IFS='|' read -r doc why; do
		run --separate-stderr eliza <<<"$doc"
		assert_status 100
		[ -z "$output" ]
		case $stderr in
		*"$why"*) ;;
		*) echo "for $doc: want '$why', got '$stderr'" >&2; return 1 ;;
		esac
	done <<'EOF'
not json|request is not valid JSON
|request is not valid JSON
{"messages":[{"role":"user","content":"x"}]} trailing|request is not valid JSON
[1,2]|request must be a JSON object
{}|request has no "messages"
{"messages":"hi"}|request "messages" must be an array
{"messages":[]}|request has no messages
{"messages":["hi"]}|request messages[0] must be an object
{"messages":[{"content":"hi"}]}|request messages[0] has no "role" string
{"messages":[{"role":"user"}],"tools":"ls"}|request "tools" must be an array
{"messages":[{"role":"user"}],"tools":[1]}|request tools[0] must be an object
{"messages":[{"role":"user"}],"model":42}|request "model" must be a string
EOF
}

@test "binary junk and an oversized request are refused" {
	run eliza < <(head -c 4096 /dev/urandom)
	assert_status 100
	assert_contains "request is not valid JSON"
	run eliza < <(head -c $((64 * 1024 * 1024 + 1)) /dev/zero)
	assert_status 100
	assert_contains "request larger than 67108864 bytes"
}

@test "the request can come from a file operand; a missing file is an error" {
	user_req hello >"$BATS_TEST_TMPDIR/req.json"
	run eliza "$BATS_TEST_TMPDIR/req.json"
	assert_status 0
	assert_json '.content == "What do you think it means when you say '"'hello'"'?"'
	run eliza "$BATS_TEST_TMPDIR/nope.json"
	assert_status 100
	assert_contains "cannot open"
}

@test "a missing API key is upstream's error with the usage status" {
	run --separate-stderr llm-chat <<<"$(user_req hi)"
	assert_status 100
	[ "$stderr" = "llm-chat: GEMINI_API_KEY or OPENAI_API_KEY environment variable is required" ]
	[ -z "$output" ]
}

# ---- fake-eliza ----

@test "fake-eliza reflects the user's words (byte-exact Go encoding)" {
	run --separate-stderr eliza <<<'{"messages":[{"role":"system","content":"s"},{"role":"user","content":"is <this> & \"that\" ok?"}]}'
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"What do you think it means when you say '"'"'is \u003cthis\u003e \u0026 \"that\" ok?'"'"'?"}' ]
	[ -z "$stderr" ]
}

@test "fake-eliza turns run: into a run_command call with Go-escaped arguments" {
	run eliza <<<"$(user_req 'run:   ls -la \u0026\u0026 echo done  ')"
	assert_status 0
	[ "$output" = '{"role":"assistant","tool_calls":[{"id":"eliza-run-1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"ls -la \\u0026\\u0026 echo done\"}"}}]}' ]
	assert_json '.tool_calls[0].function.arguments | fromjson | .command == "ls -la && echo done"'
}

@test "fake-eliza: run: is case-sensitive" {
	run eliza <<<"$(user_req 'Run: ls')"
	assert_status 0
	assert_json '.content == "What do you think it means when you say '"'Run: ls'"'?" and (has("tool_calls") | not)'
}

@test "fake-eliza reports a tool result, with or without content" {
	run eliza <<<'{"messages":[{"role":"user","content":"run: uname"},{"role":"assistant","tool_calls":[{"id":"eliza-run-1","type":"function","function":{"name":"run_command","arguments":"{}"}}]},{"role":"tool","tool_call_id":"eliza-run-1","content":"Linux\n"}]}'
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"The tool told me:\nLinux\n"}' ]
	run eliza <<<'{"messages":[{"role":"user","content":"run: true"},{"role":"tool","tool_call_id":"eliza-run-1"}]}'
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"The tool told me:\n"}' ]
}

@test "fake-eliza without user text asks how that makes you feel" {
	run eliza <<<'{"messages":[{"role":"system","content":"be brief"}]}'
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"How does that make you feel?"}' ]
	# The latest user message with content decides, even when that content is empty.
	run eliza <<<'{"messages":[{"role":"user","content":"earlier"},{"role":"user","content":""}]}'
	assert_json '.content == "How does that make you feel?"'
	# A user message without content is skipped.
	run eliza <<<'{"messages":[{"role":"user","content":"earlier"},{"role":"user"}]}'
	assert_json '.content == "What do you think it means when you say '"'earlier'"'?"'
}

@test "fake-eliza -full prints upstream's whole response" {
	run eliza -full <<<"$(user_req hi)"
	assert_status 0
	[ "$output" = '{"id":"fake-eliza","choices":[{"index":0,"message":{"role":"assistant","content":"What do you think it means when you say '"'hi'"'?"},"finish_reason":"stop"}]}' ]
}

@test "fake-eliza -stream: events, then the same message as without -stream" {
	local plain
	plain=$(eliza <<<"$(user_req 'run: echo a && echo b')")
	run --separate-stderr eliza -stream <<<"$(user_req 'run: echo a && echo b')"
	assert_status 0
	[ "${#lines[@]}" -eq 2 ]
	printf '%s' "${lines[0]}" | jq -e '.tool_call_delta.index == 0 and .tool_call_delta.id == "eliza-run-1"'
	[ "${lines[1]}" = "{\"message\":$plain,\"finish_reason\":\"tool_calls\"}" ]
	run eliza -stream <<<"$(user_req hello)"
	[ "${lines[0]}" = '{"delta":"What do you think it means when you say '"'hello'"'?"}' ]
	printf '%s' "${lines[1]}" | jq -e '.message.content == "What do you think it means when you say '"'hello'"'?" and .finish_reason == "stop"'
}

@test "fake-eliza needs no key and no network, and model precedence is flag > document > env" {
	export OPENAI_BASE_URL="http://127.0.0.1:$(closed_port)/unreachable"
	run llm-chat <<<'{"model":"fake-eliza","messages":[{"role":"user","content":"hi"}]}'
	assert_status 0
	assert_json '.role == "assistant"'
	OPENAI_MODEL=gpt-x run llm-chat <<<'{"model":"fake-eliza","messages":[{"role":"user","content":"hi"}]}'
	assert_status 0
	MODEL=fake-eliza run llm-chat <<<"$(user_req hi)"
	assert_status 0
	OPENAI_MODEL=fake-eliza MODEL=gpt-x run llm-chat <<<"$(user_req hi)"
	assert_status 0
	# The flag wins over the document: a real model without a key fails.
	run llm-chat -model gpt-x <<<'{"model":"fake-eliza","messages":[{"role":"user","content":"hi"}]}'
	assert_status 100
	assert_contains "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required"
	OPENAI_MODEL=gpt-x run llm-chat -model fake-eliza <<<"$(user_req hi)"
	assert_status 0
}

# ---- the wire protocol ----

@test "request shape: path, headers, model, messages and tools passed through verbatim" {
	start_stub <<'EOF'
{"json":{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done","extra_content":{"google":{"thought_signature":"c2ln"}},"annotations":[]},"finish_reason":"stop"}],"usage":{"total_tokens":12}}}
EOF
	export OPENAI_BASE_URL="$OPENAI_BASE_URL/"	# one trailing slash is trimmed
	export OPENAI_MODEL=gemini-test
	cat >"$BATS_TEST_TMPDIR/req.json" <<'EOF'
{"messages":[
 {"role":"system","content":"sys"},
 {"role":"user","content":"list"},
 {"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}","thought_signature":"fsig"},"extra_content":{"google":{"thought_signature":"c2ln"}}}],"thought_signature":"msig"},
 {"role":"tool","tool_call_id":"call_1","content":"a.txt\n"}],
 "tools":[{"type":"function","function":{"name":"ls","description":"List files","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],
 "temperature":0.5}
EOF
	run --separate-stderr llm-chat "$BATS_TEST_TMPDIR/req.json"
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"done","extra_content":{"google":{"thought_signature":"c2ln"}},"annotations":[]}' ]
	[ -z "$stderr" ]
	[ "$(request_count)" = 1 ]
	output=$(requests)
	assert_json '.method == "POST" and .path == "/v1/chat/completions"'
	assert_json '.headers.authorization == "Bearer '$KEY'" and .headers["content-type"] == "application/json"'
	assert_json '.body.model == "gemini-test" and .body.temperature == 0.5 and (.body | has("stream") | not)'
	printf '%s' "$output" | jq -e --argjson want "$(jq -c .messages "$BATS_TEST_TMPDIR/req.json")" '.body.messages == $want'
	assert_json '.body.messages[2].tool_calls[0].extra_content.google.thought_signature == "c2ln"'
	assert_json '.body.messages[3].tool_call_id == "call_1"'
	assert_json '.body.tools[0].function.parameters.properties.path.type == "string"'
}

@test "tools are omitted when absent or empty; -model and -base-url override the environment" {
	start_stub <<'EOF'
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"b"},"finish_reason":"stop"}]}}
EOF
	local url=$OPENAI_BASE_URL
	export OPENAI_BASE_URL="http://127.0.0.1:$(closed_port)/nowhere" OPENAI_MODEL=env-model
	run llm-chat -base-url "$url" -model flag-model <<<'{"model":"doc-model","messages":[{"role":"user","content":"x"}],"tools":[]}'
	assert_status 0
	assert_json '.content == "a"'
	run llm-chat -base-url "$url" <<<'{"model":"doc-model","messages":[{"role":"user","content":"x"}]}'
	assert_status 0
	output=$(requests | sed -n 1p)
	assert_json '.body.model == "flag-model" and (.body | has("tools") | not)'
	output=$(requests | sed -n 2p)
	assert_json '.body.model == "doc-model" and (.body | has("tools") | not)'
}

@test "several tool calls in one message come out whole; -full prints the whole response" {
	start_stub <<'EOF'
{"json":{"id":"resp-9","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"},"extra_content":{"google":{"thought_signature":"s"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5},"system_fingerprint":"fp"}}
{"json":{"id":"resp-9","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"},"extra_content":{"google":{"thought_signature":"s"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5},"system_fingerprint":"fp"}}
EOF
	run llm-chat <<<"$(user_req go)"
	assert_status 0
	[ "$output" = '{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"},"extra_content":{"google":{"thought_signature":"s"}}}]}' ]
	run llm-chat -full <<<"$(user_req go)"
	assert_status 0
	assert_json '.id == "resp-9" and .usage.prompt_tokens == 5 and .system_fingerprint == "fp"'
	assert_json '.choices[0].finish_reason == "tool_calls" and (.choices[0].message.tool_calls | length) == 2'
}

@test "-stream: SSE split one byte at a time (CRLF, comments, UTF-8) is assembled by index" {
	start_stub <<'EOF'
{"sse":["data: {\"id\":\"s1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hé\"},\"finish_reason\":null}]}\r\n\r\n", ": keep-alive\n\n", {"id":"s1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"llo ✓"},"finish_reason":null}]}, {"id":"s1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"ls","arguments":"{\"pa"}},{"index":1,"id":"c1","type":"function","function":{"name":"read","arguments":""},"extra_content":{"google":{"thought_signature":"U0lH"}}}]},"finish_reason":null}]}, {"id":"s1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}},{"index":0,"function":{"arguments":"th\":\".\"}"}}]},"finish_reason":"tool_calls"}]}, {"id":"s1","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":7}}, "data: [DONE]\n\n"],"split":1}
EOF
	run --separate-stderr llm-chat -stream -full <<<"$(user_req hi)"
	assert_status 0
	[ -z "$stderr" ]
	[ "${lines[0]}" = '{"delta":"Hé"}' ]
	[ "${lines[1]}" = '{"delta":"llo ✓"}' ]
	printf '%s' "${lines[2]}" | jq -e '.tool_call_delta.index == 0 and .tool_call_delta.function.name == "ls"'
	[ "${#lines[@]}" -eq 7 ]
	output=${lines[6]}
	assert_json '.finish_reason == "tool_calls"'
	assert_json '.message == {"role":"assistant","content":"Héllo ✓","tool_calls":[{"id":"c0","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}},{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"},"extra_content":{"google":{"thought_signature":"U0lH"}}}]}'
	assert_json '.response.id == "s1" and .response.object == "chat.completion" and .response.usage.total_tokens == 7'
	assert_json '.response.choices[0].message == .message'
	output=$(requests)
	assert_json '.body.stream == true and .headers.accept == "text/event-stream"'
}

@test "-stream: pieces cut inside a UTF-8 sequence and between CR and LF" {
	start_stub <<'EOF'
{"sse":["data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"€uro\"}}]}\r\n\r\n","data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n","data: [DONE]\r\n\r\n"],"chunks":[43,1,1,2,1,49,1]}
EOF
	run llm-chat -stream <<<"$(user_req hi)"
	assert_status 0
	[ "${lines[0]}" = '{"delta":"€uro"}' ]
	[ "${lines[1]}" = '{"message":{"role":"assistant","content":"€uro"},"finish_reason":"stop"}' ]
}

@test "-stream against a server that answers with plain JSON still streams" {
	start_stub <<'EOF'
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"whole","extra_content":{"k":1}},"finish_reason":"stop"}]}}
EOF
	run llm-chat -stream <<<"$(user_req hi)"
	assert_status 0
	[ "${lines[0]}" = '{"delta":"whole"}' ]
	[ "${lines[1]}" = '{"message":{"role":"assistant","content":"whole","extra_content":{"k":1}},"finish_reason":"stop"}' ]
}

@test "without -stream, a server that streams anyway still gives one message line" {
	start_stub <<'EOF'
{"sse":[{"choices":[{"index":0,"delta":{"role":"assistant","content":"str"}}]},{"choices":[{"index":0,"delta":{"content":"eamed"},"finish_reason":"stop"}]},"data: [DONE]\n\n"],"split":5}
EOF
	run llm-chat <<<"$(user_req hi)"
	assert_status 0
	[ "$output" = '{"role":"assistant","content":"streamed"}' ]
}

@test "429 with Retry-After is retried after the server's delay" {
	start_stub <<'EOF'
{"status":429,"headers":{"Retry-After":"1"},"body":"{\"error\":{\"message\":\"quota\"}}"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"ok at last"},"finish_reason":"stop"}]}}
EOF
	# (-v says the wait the policy chose; SBX_TEST_TIME_SCALE keeps it from being slept out)
	SBX_TEST_TIME_SCALE=0.01 run --separate-stderr llm-chat -v -backoff 10ms <<<"$(user_req hi)"
	assert_status 0
	assert_json '.content == "ok at last"'
	[ "$(request_count)" = 2 ]
	case $stderr in
	*"retrying in 1s (attempt 2 of 5) after: llm: api error (status 429)"*) ;;
	*) echo "$stderr" >&2; return 1 ;;
	esac
}

@test "-stream: a {\"retry\"} line before each retry's wait says which, how long and why" {
	start_stub <<'EOF'
{"status":429,"headers":{"Retry-After":"1"},"body":"{\"error\":{\"message\":\"quota\"}}"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"ok at last"},"finish_reason":"stop"}]}}
EOF
	SBX_TEST_TIME_SCALE=0.01 run --separate-stderr llm-chat -stream -backoff 10ms <<<"$(user_req hi)"
	assert_status 0
	[ "${#lines[@]}" -ge 2 ]
	printf '%s' "${lines[0]}" | jq -e '.retry == {"attempt":2,"attempts":5,"wait_ms":1000,"error":"llm: api error (status 429): quota"}' >/dev/null
	printf '%s' "${lines[${#lines[@]}-1]}" | jq -e '.message.content == "ok at last"' >/dev/null
	# without -stream the answer is the one line it always was
	stop_stub
	rm -rf "$STUB_DIR"
	start_stub <<'EOF'
{"status":503,"body":"busy"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}]}}
EOF
	run --separate-stderr llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 0
	[ "${#lines[@]}" -eq 1 ]
	assert_json '.content == "fine"'
}

@test "500 then success; retries run out on persistent 503" {
	start_stub <<'EOF'
{"status":500,"body":"oops"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"recovered"},"finish_reason":"stop"}]}}
{"status":503,"body":"busy 1"}
{"status":503,"body":"busy 2"}
{"status":503,"body":"busy 3"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"too late"},"finish_reason":"stop"}]}}
EOF
	run llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 0
	assert_json '.content == "recovered"'
	run --separate-stderr llm-chat -backoff 10ms -retries 2 <<<"$(user_req hi)"
	assert_status 111
	[ "$stderr" = "llm-chat: llm: api error (status 503): busy 3" ]
	[ "$(request_count)" = 5 ]
}

@test "400 fails at once with the API's own message, on one line" {
	start_stub <<'EOF'
{"status":400,"body":"{\"error\":{\"code\":400,\"message\":\"Invalid JSON payload\",\"status\":\"INVALID_ARGUMENT\"}}"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"never"},"finish_reason":"stop"}]}}
EOF
	run --separate-stderr llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	[ -z "$output" ]
	[ "$stderr" = 'llm-chat: llm: api error (status 400): Invalid JSON payload (INVALID_ARGUMENT)' ]
	[ "$(request_count)" = 1 ]
}

@test "malformed JSON and a response without choices are decode failures" {
	start_stub <<'EOF'
{"body":"{\"choices\": [ {\"message\": "}
{"json":{"id":"x","choices":[]}}
{"body":"data: {}\n\n","headers":{"Content-Type":"application/json"}}
EOF
	run --separate-stderr llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	case $stderr in "llm-chat: llm: failed to decode response: "*) ;; *) echo "$stderr" >&2; return 1 ;; esac
	run --separate-stderr llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	[ "$stderr" = 'llm-chat: llm: response has no choices: {"id":"x","choices":[]}' ]
	run --separate-stderr llm-chat -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	case $stderr in "llm-chat: llm: failed to decode response: "*) ;; *) echo "$stderr" >&2; return 1 ;; esac
	[ -z "$output" ]
	[ "$(request_count)" = 3 ]
}

@test "-stream: bad events, error events and a stream without [DONE] fail clearly" {
	start_stub <<'EOF'
{"sse":["data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n","data: {not json}\n\n"]}
{"sse":["data: {\"error\":{\"message\":\"overloaded\",\"code\":503}}\n\n"]}
{"sse":["data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part\"}}]}\n\n"]}
EOF
	run --separate-stderr llm-chat -stream -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	[ "$output" = '{"delta":"a"}' ]
	case $stderr in "llm-chat: llm: failed to decode stream event: "*) ;; *) echo "$stderr" >&2; return 1 ;; esac
	run --separate-stderr llm-chat -stream -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	[ "$stderr" = 'llm-chat: llm: api error in event stream: overloaded' ]
	run --separate-stderr llm-chat -stream -backoff 10ms -retries 0 <<<"$(user_req hi)"
	assert_status 111
	[ "$output" = '{"delta":"part"}' ]
	[ "$stderr" = "llm-chat: llm: failed to read response body: the event stream ended before [DONE]" ]
	[ "$(request_count)" = 3 ]
}

@test "-stream: a connection cut mid-stream fails without a final message" {
	start_stub <<'EOF'
{"sse":["data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n","data: {\"choices\":[{\"index\":0,\"del"],"cut":true}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"no retry after output"},"finish_reason":"stop"}]}}
EOF
	run --separate-stderr llm-chat -stream -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	[ "$output" = '{"delta":"half"}' ]
	case $stderr in "llm-chat: llm: http request failed: "*) ;; *) echo "$stderr" >&2; return 1 ;; esac
	[ "$(request_count)" = 1 ]
}

@test "-stream: a cut before any event is retried" {
	start_stub <<'EOF'
{"sse":["data: {\"choices\":[{\"ind"],"cut":true}
{"sse":[{"choices":[{"index":0,"delta":{"role":"assistant","content":"second try"},"finish_reason":"stop"}]},"data: [DONE]\n\n"]}
EOF
	run --separate-stderr llm-chat -stream -backoff 10ms <<<"$(user_req hi)"
	assert_status 0
	# the retry is said on the stream, then nothing of the cut attempt
	printf '%s' "${lines[0]}" | jq -e '.retry.attempt == 2 and (.retry.error | startswith("llm: "))' >/dev/null
	[ "${lines[1]}" = '{"delta":"second try"}' ]
	[ "${lines[2]}" = '{"message":{"role":"assistant","content":"second try"},"finish_reason":"stop"}' ]
	[ "${#lines[@]}" = 3 ]
	[ "$(request_count)" = 2 ]
}

@test "every 5xx (Cloudflare's 520-524 too), 408 and 409 are retried; x-should-retry decides first" {
	start_stub <<'EOF'
{"status":520,"headers":{"Content-Type":"text/html"},"body":"<!DOCTYPE html>\n<html><head><title>api.example.com | 520: Web server is returning an unknown error</title></head></html>"}
{"status":524,"body":"timeout"}
{"status":501,"body":"nope"}
{"status":409,"body":"{\"error\":{\"message\":\"lock timeout\"}}"}
{"status":408,"body":"slow"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"at last"},"finish_reason":"stop"}]}}
{"status":503,"headers":{"x-should-retry":"false"},"body":"busy, do not retry"}
{"status":400,"headers":{"x-should-retry":"true"},"body":"try again"}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"again"},"finish_reason":"stop"}]}}
EOF
	run --separate-stderr llm-chat -v -backoff 1ms -retries 5 <<<"$(user_req hi)"
	assert_status 0
	assert_json '.content == "at last"'
	[[ $stderr == *'after: llm: api error (status 520): api.example.com | 520: Web server is returning an unknown error'* ]]
	[ "$(request_count)" = 6 ]
	run --separate-stderr llm-chat -backoff 1ms <<<"$(user_req hi)"
	assert_status 111
	[ "$stderr" = "llm-chat: llm: api error (status 503): busy, do not retry" ]
	[ "$(request_count)" = 7 ]
	run llm-chat -backoff 1ms <<<"$(user_req hi)"
	assert_status 0
	assert_json '.content == "again"'
	[ "$(request_count)" = 9 ]
}

@test "a base URL with a query keeps it after the path; -auth-header sends the bare key" {
	start_stub <<'EOF'
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"b"},"finish_reason":"stop"}]}}
EOF
	local base=${OPENAI_BASE_URL%/v1}
	run llm-chat -base-url "$base/openai/deployments/gpt4o/?api-version=2024-10-21" -auth-header api-key <<<"$(user_req hi)"
	assert_status 0
	output=$(request 1)
	assert_json '.path == "/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"'
	assert_json '.headers["api-key"] == "'$KEY'" and (.headers | has("authorization") | not)'
	LLM_AUTH_HEADER=X-Api-Key run llm-chat -base-url "$base/v1?a=1&b=2#frag" <<<"$(user_req hi)"
	assert_status 0
	output=$(request 2)
	assert_json '.path == "/v1/chat/completions?a=1&b=2" and .headers["x-api-key"] == "'$KEY'"'
	run llm-chat -auth-header $'api-key\r\nX: y' <<<"$(user_req hi)"
	assert_status 100
	assert_contains "auth header name is not a header name"
	run llm-chat -vendor nosuch <<<"$(user_req hi)"
	assert_status 100
	assert_contains 'unknown vendor "nosuch" (known: openai, azure, gemini'
	LLM_VENDOR=nosuch run llm-chat <<<"$(user_req hi)"
	assert_status 100
}

@test "-vendor shapes the request: Groq gets no reasoning, generic keeps it; -v names the policy" {
	start_stub <<'EOF'
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}}
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"b"},"finish_reason":"stop"}]}}
EOF
	local doc='{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"x","reasoning":"r","index":0},{"role":"user","content":"q2"}]}'
	run --separate-stderr llm-chat -vendor groq -v <<<"$doc"
	assert_status 0
	[[ $stderr == *"request policy: groq"* ]]
	run llm-chat <<<"$doc"
	assert_status 0
	output=$(request 1)
	assert_json '.body.messages[1] == {"role":"assistant","content":"x"}'
	output=$(request 2)
	assert_json '.body.messages[1] == {"role":"assistant","content":"x","reasoning":"r"}'
}

@test "a server that never answers times out, is retried, then fails" {
	start_stub <<'EOF'
{"hang":true}
{"hang":true}
{"hang":true}
EOF
	run --separate-stderr llm-chat -timeout 300ms -retries 1 -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	case $stderr in "llm-chat: llm: http request failed: "*"timed out"*) ;; *) echo "$stderr" >&2; return 1 ;; esac
	[ "$(request_count)" = 2 ]
	run --separate-stderr llm-chat -stream -timeout 300ms -retries 0 <<<"$(user_req hi)"
	assert_status 111
	[ "$stderr" = "llm-chat: llm: http request failed: no data for 300ms" ]
	[ "$(request_count)" = 3 ]
}

@test "nothing listening is a transport failure after the retries" {
	run --separate-stderr env OPENAI_API_KEY=$KEY llm-chat -base-url "http://127.0.0.1:$(closed_port)/v1" -retries 1 -backoff 10ms <<<"$(user_req hi)"
	assert_status 111
	case $stderr in "llm-chat: llm: http request failed: "*) ;; *) echo "$stderr" >&2; return 1 ;; esac
}

@test "a base URL that is not http(s) is a usage error" {
	OPENAI_API_KEY=$KEY run llm-chat -base-url ftp://example.com/v1 <<<"$(user_req hi)"
	assert_status 100
	assert_contains "base URL must start with http:// or https://"
	OPENAI_API_KEY=$KEY run llm-chat -base-url file:///etc/passwd <<<"$(user_req hi)"
	assert_status 100
}

@test "the API key never shows: -v redacts it, error bodies echoing it are redacted" {
	start_stub <<EOF
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}]}}
{"status":401,"body":"{\"error\":\"bad key $KEY\"}"}
EOF
	run --separate-stderr llm-chat -v <<<"$(user_req hi)"
	assert_status 0
	case $stderr in *"Authorization: Bearer [REDACTED]"*"request body: {\"model\":"*"response body: "*) ;;
	*) echo "$stderr" >&2; return 1 ;; esac
	[[ $stderr != *"$KEY"* && $output != *"$KEY"* ]]
	run --separate-stderr llm-chat -v <<<"$(user_req hi)"
	assert_status 111
	[[ $stderr == *'llm: api error (status 401): bad key [REDACTED]'* ]]
	[[ $stderr != *"$KEY"* && $output != *"$KEY"* ]]
	# The stub did get the key, in the header only.
	output=$(requests | sed -n 1p)
	assert_json '.headers.authorization == "Bearer '$KEY'"'
	GEMINI_API_KEY=$'bad\nkey' run llm-chat <<<"$(user_req hi)"
	assert_status 100
	assert_contains "api key contains control characters"
}

@test "GEMINI_API_KEY is preferred over OPENAI_API_KEY" {
	start_stub <<'EOF'
{"json":{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}}
EOF
	GEMINI_API_KEY=gem-key run llm-chat <<<"$(user_req hi)"
	assert_status 0
	output=$(requests)
	assert_json '.headers.authorization == "Bearer gem-key"'
}

@test "SIGTERM and SIGINT cancel a waiting request with 128+n" {
	start_stub <<'EOF'
{"hang":true}
{"hang":true}
EOF
	local pid st
	user_req hi >"$BATS_TEST_TMPDIR/req.json"
	llm-chat "$BATS_TEST_TMPDIR/req.json" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	wait_requests 1
	kill -TERM "$pid"
	st=0; wait "$pid" || st=$?
	[ "$st" -eq 143 ]
	grep -q "llm-chat: llm: request canceled" "$BATS_TEST_TMPDIR/err"
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	llm-chat -stream "$BATS_TEST_TMPDIR/req.json" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	wait_requests 2
	kill -INT "$pid"
	st=0; wait "$pid" || st=$?
	[ "$st" -eq 130 ]
}

@test "a signal during the backoff pause cancels too" {
	start_stub <<'EOF'
{"status":503,"body":"busy"}
EOF
	local pid st
	user_req hi >"$BATS_TEST_TMPDIR/req.json"
	llm-chat -backoff 1m "$BATS_TEST_TMPDIR/req.json" >/dev/null 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	wait_requests 1
	kill -TERM "$pid"
	st=0; wait "$pid" || st=$?
	[ "$st" -eq 143 ]
}

@test "man page examples work" {
	local page=$SBX_TOP/man/man1/llm-chat.1
	[ -f "$page" ]
	# Example 1 and 2: fake-eliza, plain and streamed.
	run sh -c "echo '{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}' | OPENAI_MODEL=fake-eliza llm-chat"
	assert_status 0
	assert_json '.content == "What do you think it means when you say '"'hello'"'?"'
	grep -qF "OPENAI_MODEL=fake-eliza llm-chat" "$page"
	run sh -c "echo '{\"messages\":[{\"role\":\"user\",\"content\":\"run: ls\"}]}' | llm-chat -model fake-eliza -stream | tail -n 1 | jq -c .message.tool_calls"
	assert_status 0
	[ "$output" = '[{"id":"eliza-run-1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"ls\"}"}}]' ]
	grep -qF "llm-chat -model fake-eliza -stream | tail -n 1 | jq -c .message.tool_calls" "$page"
}
