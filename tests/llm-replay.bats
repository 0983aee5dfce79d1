#!/usr/bin/env bats
# llm-replay: llm-chat against the wire traffic of eleven OpenAI-compatible endpoints,
# tests/llm/<vendor>/: each file follows a recording or the vendor's documentation named in
# tests/llm/SOURCES (shape, key order, chunking and quirks; the payload texts are ours).
# Streams are replayed byte for byte by tests/openai-stub.py, whole, one byte per HTTP chunk
# and in random pieces, and must assemble to the same message. Round trips run agent-loop
# (LLM_VENDOR=<vendor>) on a recorded answer and check the next request it builds carries what
# that vendor requires back and nothing it refuses.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	load stub
	setup_sbx_env
	STUB_PID=
	FX=$SBX_TOP/tests/llm
	REQ='{"messages":[{"role":"user","content":"hi"}]}'
	export OPENAI_MODEL=replay-model
}

teardown() {
	stop_stub
	teardown_sbx_env
}

# answer FILE [JQ-EXTRA]: a stub answer replaying tests/llm/FILE.
answer() {
	jq -cn --arg f "$FX/$1" "{file: \$f} + (${2:-{\}})"
}

# stream FILE: llm-chat -stream on FILE replayed whole, then one byte per chunk, then in random
# pieces; all three must end in the same message line, which is left in $output (with the events
# in $lines). Uses the next three stub answers.
stream() {
	local whole one rnd
	run -0 llm-chat -stream -retries 0 <<<"$REQ"
	whole=${lines[${#lines[@]}-1]}
	run -0 llm-chat -stream -retries 0 <<<"$REQ"
	one=${lines[${#lines[@]}-1]}
	run -0 llm-chat -stream -retries 0 <<<"$REQ"
	rnd=${lines[${#lines[@]}-1]}
	if [ "$whole" != "$one" ] || [ "$whole" != "$rnd" ]; then
		printf 'splits differ:\n%s\n%s\n%s\n' "$whole" "$one" "$rnd" >&2
		return 1
	fi
	EVENTS=("${lines[@]}")
	# Each piece of reasoning is streamed once: the events add up to the message's reasoning.
	local streamed final
	streamed=$(printf '%s\n' "${lines[@]:0:${#lines[@]}-1}" | jq -rj 'select(.reasoning_delta) | .reasoning_delta')
	final=$(jq -rj '.message.reasoning_content // .message.reasoning // ""' <<<"$whole")
	if [ "$streamed" != "$final" ]; then
		printf 'reasoning streamed: %s\nin the message: %s\n' "$streamed" "$final" >&2
		return 1
	fi
	output=$whole
}

# stream_answers FILE: the three answers stream needs.
stream_answers() {
	answer "$1"
	answer "$1" '{split: 1}'
	answer "$1" '{random: [17, 9]}'
}

# api_error WANT: the last llm-chat failed with exactly "llm: api error (status …): WANT".
api_error() {
	[ "$status" -eq 111 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$stderr" = "llm-chat: llm: api error $1" ] || { echo "got: $stderr" >&2; return 1; }
}

# round_trip VENDOR FILE… : agent-loop with LLM_VENDOR=VENDOR answers "hi" with the recorded
# FILEs in turn (one per LLM call), then "done"; one user line per FILE that ends a turn.
round_trip() {
	local vendor=$1 f
	shift
	{
		for f in "$@"; do answer "$f"; done
		jq -cn '{json: {choices: [{index: 0, finish_reason: "stop", message: {role: "assistant", content: "done"}}]}}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	LLM_VENDOR=$vendor run agent-loop -session rt
	echo "$output"
}

# sent N: request N's messages, one JSON document.
sent() { request "$1" | jq -c '.body.messages'; }

@test "OpenAI: text, a call, parallel calls, a refusal, an error" {
	{
		answer openai/text.json
		stream_answers openai/text.sse
		stream_answers openai/tool-call.sse
		stream_answers openai/parallel.sse
		answer openai/parallel.json
		answer openai/refusal.sse
		answer openai/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	run -0 llm-chat <<<"$REQ"
	[ "$output" = '{"role":"assistant","content":"Sandboxes keep tool calls apart.","refusal":null,"annotations":[]}' ]
	stream openai/text.sse
	assert_json '.message == {"role":"assistant","content":"Sandboxes keep tool calls apart.","refusal":null} and .finish_reason == "stop"'
	[ "${EVENTS[0]}" = '{"delta":"Sand"}' ]
	stream openai/tool-call.sse
	assert_json '.message.tool_calls == [{"id":"call_SbxReplayToolCallOne0001","type":"function","function":{"name":"read","arguments":"{\"path\":\"README.md\"}"}}]'
	stream openai/parallel.sse
	assert_json '.message.tool_calls == [{"id":"call_SbxReplayParallelA0001","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"uname -a\"}"}},{"id":"call_SbxReplayParallelB0001","type":"function","function":{"name":"ls","arguments":"{\"path\": \".\"}"}}]'
	run -0 llm-chat <<<"$REQ"
	assert_json '[.tool_calls[] | .id] == ["call_SbxReplayParallelC0001","call_SbxReplayParallelD0001"]'
	run -0 llm-chat -stream <<<"$REQ"
	output=${lines[${#lines[@]}-1]}
	assert_json '.message == {"role":"assistant","content":null,"refusal":"I can'"'"'t help with that."}'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead. (unsupported_parameter)"
}

@test "OpenAI round trip: parallel calls go back whole and each result answers its id" {
	round_trip openai openai/parallel.sse openai/text.json <<<$'what system is this?\nthanks'
	assert_status 0
	# the answer's annotations (and any field OpenAI does not define) stay in the history
	output=$(sent 3)
	assert_json '.[5] == {"role":"assistant","content":"Sandboxes keep tool calls apart."}'
	jq -s -e '.[5].annotations == []' "$(hist rt)"
	output=$(sent 2)
	assert_json '.[2] == {"role":"assistant","tool_calls":[{"id":"call_SbxReplayParallelA0001","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"uname -a\"}"}},{"id":"call_SbxReplayParallelB0001","type":"function","function":{"name":"ls","arguments":"{\"path\": \".\"}"}}]}'
	assert_json '[.[3,4] | .tool_call_id] == ["call_SbxReplayParallelA0001","call_SbxReplayParallelB0001"]'
	assert_json '.[3].content | startswith("stdout:\nLinux")'
}

@test "Azure OpenAI: deployment URL with ?api-version, the api-key header, filter results, a filtered prompt" {
	{
		stream_answers azure/text.sse
		answer azure/content-filter-400.json '{status: 400}'
		answer openai/text.json
		stream_answers azure/tool-call.sse
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	export OPENAI_BASE_URL="${OPENAI_BASE_URL%/v1}/openai/deployments/gpt-4o-mini/?api-version=2024-10-21"
	LLM_VENDOR=azure stream azure/text.sse
	assert_json '.message == {"role":"assistant","content":"Tool output stays inside.","refusal":null} and .finish_reason == "stop"'
	output=$(request 1)
	assert_json '.path == "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"'
	assert_json '.headers["api-key"] == "'"$STUB_KEY"'" and (.headers | has("authorization") | not)'
	LLM_VENDOR=azure run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766 (content_filter)"
	# The host decides without LLM_VENDOR when it is Azure's; here the header is asked for.
	LLM_AUTH_HEADER=api-key run -0 llm-chat -retries 0 <<<"$REQ"
	output=$(request 5)
	assert_json '.headers["api-key"] == "'"$STUB_KEY"'" and (.headers | has("authorization") | not)'
	# A tool call streamed between the filter results: one call, arguments joined whole.
	LLM_VENDOR=azure stream azure/tool-call.sse
	assert_json '.finish_reason == "tool_calls" and .message.tool_calls == [{"id":"call_SbxReplayAzureTool0001","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"ls -la\"}"}}]'
	assert_json '.message | has("content_filter_results") | not'
}

@test "Azure round trip: the answer goes back to the same deployment without vendor fields" {
	{
		answer azure/text.sse
		jq -cn '{json: {choices: [{index: 0, finish_reason: "stop", message: {role: "assistant", content: "done"}}]}}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	export OPENAI_BASE_URL="${OPENAI_BASE_URL%/v1}/openai/deployments/d?api-version=2024-10-21"
	LLM_VENDOR=azure run -0 agent-loop -session az <<<$'first\nsecond'
	output=$(sent 2)
	assert_json '.[2] == {"role":"assistant","content":"Tool output stays inside."}'
	output=$(request 2)
	assert_json '.path == "/openai/deployments/d/chat/completions?api-version=2024-10-21" and .headers["api-key"] == "'"$STUB_KEY"'"'
}

@test "Gemini: calls without index (one signed), a signed text, the docs' call, an error array" {
	{
		stream_answers gemini/tool-call.sse
		stream_answers gemini/parallel.sse
		stream_answers gemini/text.sse
		answer gemini/tool-call.json
		answer gemini/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream gemini/tool-call.sse
	# Gemini may say "stop" with a call: the call decides, not the reason.
	assert_json '.finish_reason == "stop" and .message.tool_calls == [{"extra_content":{"google":{"thought_signature":"CiQBSbxSignatureOne+Q=="}},"function":{"arguments":"{\"command\":\"ls -la\"}","name":"run_command"},"id":"function-call-4187526612395361001","type":"function"}]'
	stream gemini/parallel.sse
	assert_json '[.message.tool_calls[] | .id] == ["function-call-4187526612395361002","function-call-4187526612395361003"] and (.message.tool_calls[1] | has("extra_content") | not)'
	stream gemini/text.sse
	assert_json '.message == {"content":"Done; nothing else to run.","role":"assistant","extra_content":{"google":{"thought_signature":"CiQBSbxSignatureTxt+Q=="}}}'
	run -0 llm-chat <<<"$REQ"
	assert_json '.tool_calls[0].extra_content.google.thought_signature == "<Signature A>" and .tool_calls[0].id == "function-call-1"'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:run_command\` , position 2. please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details. (INVALID_ARGUMENT)"
}

@test "Gemini round trip: thought signatures go back on their call and their message" {
	round_trip gemini gemini/tool-call.sse gemini/text.sse <<<$'list the files\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '.[2].tool_calls == [{"extra_content":{"google":{"thought_signature":"CiQBSbxSignatureOne+Q=="}},"function":{"arguments":"{\"command\":\"ls -la\"}","name":"run_command"},"id":"function-call-4187526612395361001","type":"function"}]'
	assert_json '.[3].tool_call_id == "function-call-4187526612395361001"'
	assert_json '.[4] == {"role":"assistant","content":"Done; nothing else to run.","extra_content":{"google":{"thought_signature":"CiQBSbxSignatureTxt+Q=="}}}'
}

@test "Groq: parsed reasoning streamed and whole, a call in one delta, an error" {
	{
		stream_answers groq/reasoning.sse
		answer groq/reasoning.json
		stream_answers groq/tool-call.sse
		answer groq/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream groq/reasoning.sse
	assert_json '.message == {"role":"assistant","content":"Three.","reasoning":"The user wants a count."} and .finish_reason == "stop"'
	[ "${EVENTS[0]}" = '{"reasoning_delta":"The"}' ]
	run -0 llm-chat -full <<<"$REQ"
	assert_json '.choices[0].message.reasoning == "The user wants a count." and .x_groq.id == "req_sbxreplay0006"'
	stream groq/tool-call.sse
	assert_json '.message.tool_calls == [{"id":"sbx7k2m9q","type":"function","function":{"name":"ls","arguments":"{\"path\":\"/tmp\"}"}}] and .finish_reason == "tool_calls"'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): property 'reasoning' is unsupported"
}

@test "Groq round trip: reasoning stays in the history and is not sent back" {
	round_trip groq groq/reasoning.json <<<$'how many?\nagain'
	assert_status 0
	output=$(sent 2)
	assert_json '.[2] == {"role":"assistant","content":"Three."}'
	jq -s -e '.[2].reasoning == "The user wants a count."' "$(hist rt)"
}

@test "Groq round trip, streamed: reasoning deltas before a call and before a text never go back, in the turn or the next" {
	round_trip groq groq/reasoning-tool-call.sse groq/reasoning.sse <<<$'list /tmp\nagain'
	assert_status 0
	[ "$(request_count)" -eq 3 ]
	# after the call: the assistant message that called it, then its result, no reasoning
	output=$(sent 2)
	assert_json '.[2] == {"role":"assistant","tool_calls":[{"id":"sbx8p4r2t","type":"function","function":{"name":"ls","arguments":"{\"path\":\"/tmp\"}"}}]}'
	assert_json '.[3].role == "tool" and .[3].tool_call_id == "sbx8p4r2t"'
	# the next turn: neither answer carries its reasoning
	output=$(sent 3)
	assert_json '.[4] == {"role":"assistant","content":"Three."}'
	assert_json '[.[] | select(has("reasoning") or has("reasoning_content"))] == []'
	# the history keeps both
	jq -s -e '.[2].reasoning == "Listing /tmp answers." and .[4].reasoning == "The user wants a count."' "$(hist rt)"
}

@test "DeepSeek: reasoning_content streamed before the call, whole answers, an error" {
	{
		stream_answers deepseek/tool-call.sse
		answer deepseek/tool-call.json
		answer deepseek/reasoning.json
		answer deepseek/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream deepseek/tool-call.sse
	assert_json '.message == {"role":"assistant","content":"","reasoning_content":"Disk space: run df.","tool_calls":[{"id":"call_00_SbxReplayDeepSeek01","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"df -h\"}"}}]}'
	[ "${EVENTS[0]}" = '{"reasoning_delta":"Disk"}' ]
	run -0 llm-chat <<<"$REQ"
	assert_json '.tool_calls[0].index == 0 and .tool_calls[0].id == "call_00_SbxReplayDeepSeek02"'
	run -0 llm-chat <<<"$REQ"
	assert_json '.reasoning_content == "The tool said 40% used."'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): The \`reasoning_content\` in the thinking mode must be passed back to the API. (invalid_request_error)"
}

@test "DeepSeek round trip: reasoning_content goes back in the turn that called tools, not in others" {
	round_trip deepseek deepseek/tool-call.sse deepseek/reasoning.json deepseek/reasoning.json \
		<<<$'disk space?\nand now?\nthanks'
	assert_status 0
	[ "$(request_count)" -eq 4 ]
	output=$(sent 4)
	assert_json '.[2].reasoning_content == "Disk space: run df." and .[2].tool_calls[0].id == "call_00_SbxReplayDeepSeek01"'
	assert_json '.[3].tool_call_id == "call_00_SbxReplayDeepSeek01" and (.[3].content | contains("exit_code: 0"))'
	# the answer after the tool belongs to the same turn: kept; a turn without tools: dropped
	assert_json '.[4].reasoning_content == "The tool said 40% used."'
	assert_json '.[6] == {"role":"assistant","content":"The disk is 40% full."}'
	jq -s -e '.[6].reasoning_content == "The tool said 40% used."' "$(hist rt)"
}

@test "OpenRouter: reasoning_details merged by index keep one format, a mid-stream error, an error body" {
	{
		stream_answers openrouter/reasoning.sse
		answer openrouter/midstream-error.sse
		answer openrouter/error-429.json '{status: 429, headers: {"Retry-After": "0"}}'
		answer openrouter/error-429.json '{status: 429}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream openrouter/reasoning.sse
	assert_json '.message == {"role":"assistant","content":"Two files.","reasoning":"List the files.","reasoning_details":[{"type":"reasoning.text","text":"List the files.","format":"unknown","index":0}]} and .finish_reason == "stop"'
	run --separate-stderr llm-chat -stream -retries 0 <<<"$REQ"
	[ "$status" -eq 111 ]
	[ "$output" = '{"delta":"Two"}' ]
	[ "$stderr" = "llm-chat: llm: api error in event stream: Provider disconnected unexpectedly" ]
	run --separate-stderr llm-chat -retries 1 -backoff 1ms <<<"$REQ"
	api_error "(status 429): Rate limit exceeded"
	[ "$(request_count)" -eq 6 ]
}

@test "OpenRouter round trip: reasoning and reasoning_details go back unmodified" {
	round_trip openrouter openrouter/reasoning.sse <<<$'list\nmore'
	assert_status 0
	output=$(sent 2)
	assert_json '.[2] == {"role":"assistant","content":"Two files.","reasoning":"List the files.","reasoning_details":[{"type":"reasoning.text","text":"List the files.","format":"unknown","index":0}]}'
}

@test "Mistral: a call without index, an incremental call with \"name\":\"\" and a message index, magistral parts, a 422" {
	{
		stream_answers mistral/tool-call.sse
		answer mistral/tool-call.json
		stream_answers mistral/incremental-tool-call.sse
		stream_answers mistral/reasoning.sse
		answer mistral/reasoning.json
		answer mistral/error-422.json '{status: 422}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream mistral/tool-call.sse
	assert_json '.message == {"role":"assistant","content":"","tool_calls":[{"id":"SbxR3pl4y","function":{"name":"read","arguments":"{\"path\": \"notes.txt\"}"}}]}'
	run -0 llm-chat <<<"$REQ"
	assert_json '.tool_calls[0].id == "SbxR3pl4z"'
	stream mistral/incremental-tool-call.sse
	assert_json '.message == {"role":"assistant","tool_calls":[{"id":"chatcmpl-tool-sbxreplay00000012","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"id -u\"}"}}],"content":""}'
	stream mistral/reasoning.sse
	assert_json '.message == {"role":"assistant","content":"There are two files.","reasoning_content":"Count the files first."}'
	[ "${EVENTS[0]}" = '{"reasoning_delta":"Count the"}' ]
	[ "${EVENTS[2]}" = '{"delta":"There are two files."}' ]
	run -0 llm-chat <<<"$REQ"
	[ "$output" = '{"role":"assistant","content":"There are two files.","reasoning_content":"Count the files first."}' ]
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 422): Extra inputs are not permitted (body.messages.2.assistant.index); Extra inputs are not permitted (body.messages.2.assistant.reasoning_content)"
}

@test "Mistral round trip: no index, no reasoning_content, the call's name and id kept" {
	round_trip mistral mistral/incremental-tool-call.sse mistral/reasoning.sse <<<$'who am I?\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '.[2] == {"role":"assistant","tool_calls":[{"id":"chatcmpl-tool-sbxreplay00000012","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"id -u\"}"}}],"content":""}'
	assert_json '.[3].tool_call_id == "chatcmpl-tool-sbxreplay00000012" and (.[3].content | startswith("stdout:\n0\n"))'
	assert_json '.[4] == {"role":"assistant","content":"There are two files."}'
}

@test "DashScope: \"id\":\"\" in later deltas keeps the call's id, whole answers, an error" {
	{
		stream_answers dashscope/tool-call.sse
		answer dashscope/tool-call.json
		answer dashscope/reasoning.json
		answer dashscope/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream dashscope/tool-call.sse
	assert_json '.message == {"content":null,"tool_calls":[{"id":"call_sbxreplaydashscope0016","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"uptime\"}"}}],"role":"assistant"}'
	run -0 llm-chat <<<"$REQ"
	assert_json '.tool_calls[0].id == "call_sbxreplaydashscope0017" and .tool_calls[0].index == 0'
	run -0 llm-chat <<<"$REQ"
	assert_json '.reasoning_content == "uptime printed 3 days." and .content == "Up for three days."'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): parameter.enable_thinking must be set to false for non-streaming calls (invalid_parameter_error)"
}

@test "DashScope round trip: the result answers the real id; reasoning is not sent back" {
	round_trip dashscope dashscope/tool-call.sse dashscope/reasoning.json <<<$'uptime?\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '.[2].tool_calls == [{"id":"call_sbxreplaydashscope0016","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"uptime\"}"}}]'
	assert_json '.[3].tool_call_id == "call_sbxreplaydashscope0016"'
	assert_json '.[4] == {"role":"assistant","content":"Up for three days."}'
}

@test "Ollama: text, two calls in two deltas, reasoning, an error" {
	{
		stream_answers ollama/text.sse
		stream_answers ollama/parallel.sse
		answer ollama/reasoning.json
		answer ollama/error-404.json '{status: 404}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream ollama/text.sse
	assert_json '.message == {"role":"assistant","content":"Hello from Ollama."} and .finish_reason == "stop"'
	stream ollama/parallel.sse
	assert_json '.message.tool_calls == [{"id":"call_sbx0ola1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"ls\"}"}},{"id":"call_sbx0ola2","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"ls -l\"}"}}]'
	run -0 llm-chat <<<"$REQ"
	assert_json '.reasoning == "Six times seven." and .content == "42"'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 404): model \"qwen2.5-coder:7b\" not found, try pulling it first"
}

@test "Ollama round trip: both calls run and answer their ids; reasoning goes back" {
	round_trip ollama ollama/parallel.sse ollama/reasoning.json <<<$'list files\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '[.[3,4] | .tool_call_id] == ["call_sbx0ola1","call_sbx0ola2"] and (.[4].content | contains("exit_code: 0"))'
	assert_json '.[2].tool_calls | all(has("index") | not)'
	assert_json '.[5] == {"role":"assistant","content":"42","reasoning":"Six times seven."}'
}

@test "vLLM: a call split by index (name first, arguments after), reasoning, an error" {
	{
		stream_answers vllm/tool-call.sse
		stream_answers vllm/reasoning.sse
		answer vllm/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream vllm/tool-call.sse
	assert_json '.message == {"role":"assistant","content":"","tool_calls":[{"id":"chatcmpl-tool-sbxreplay000000000000000000000024","type":"function","function":{"name":"run_command","arguments":"{\"command\": \"whoami\"}"}}]} and .finish_reason == "tool_calls"'
	stream vllm/reasoning.sse
	assert_json '.message == {"role":"assistant","reasoning":"Thinking.","content":"Answer."}'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): \"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
}

@test "vLLM round trip: the call runs and answers its id; reasoning goes back" {
	round_trip vllm vllm/tool-call.sse vllm/reasoning.sse <<<$'who runs this?\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '.[3].tool_call_id == "chatcmpl-tool-sbxreplay000000000000000000000024" and (.[3].content | startswith("stdout:\nroot\n"))'
	assert_json '.[4] == {"role":"assistant","reasoning":"Thinking.","content":"Answer."}'
}

@test "llama.cpp server: a call in fragments with timings, reasoning_content, an error" {
	{
		stream_answers llamacpp/tool-call.sse
		stream_answers llamacpp/reasoning.sse
		answer llamacpp/error-400.json '{status: 400}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	stream llamacpp/tool-call.sse
	assert_json '.message == {"role":"assistant","content":null,"tool_calls":[{"id":"sbxLlamaCppCallId0000000000000025","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"pwd\"}"}}]} and .finish_reason == "tool_calls"'
	stream llamacpp/reasoning.sse
	assert_json '.message == {"role":"assistant","content":"Hi!","reasoning_content":"We should answer."}'
	run --separate-stderr llm-chat -retries 0 <<<"$REQ"
	api_error "(status 400): request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it"
}

@test "llama.cpp round trip: the call runs and answers its id; reasoning_content goes back" {
	round_trip llamacpp llamacpp/tool-call.sse llamacpp/reasoning.sse <<<$'where am I?\nthanks'
	assert_status 0
	output=$(sent 3)
	assert_json '.[3].tool_call_id == "sbxLlamaCppCallId0000000000000025" and (.[3].content | contains("exit_code: 0"))'
	assert_json '.[4] == {"role":"assistant","content":"Hi!","reasoning_content":"We should answer."}'
}

@test "broken streams: every vendor's stream cut in half fails without a message" {
	local f n=0 size
	for f in openai/tool-call.sse azure/text.sse gemini/parallel.sse groq/reasoning.sse \
		deepseek/tool-call.sse openrouter/reasoning.sse mistral/incremental-tool-call.sse \
		dashscope/tool-call.sse ollama/parallel.sse vllm/tool-call.sse llamacpp/tool-call.sse; do
		size=$(wc -c <"$FX/$f")
		answer "$f" "{limit: $((size / 2)), random: [$size, 13], cut: true}"
	done >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	for f in $(jq -r .file "$BATS_TEST_TMPDIR/script"); do
		run --separate-stderr llm-chat -stream -retries 0 <<<"$REQ"
		[ "$status" -eq 111 ] || { echo "$f: status $status" >&2; return 1; }
		[[ $output != *'"message"'* ]] || { echo "$f: $output" >&2; return 1; }
		n=$((n + 1))
	done
	[ "$n" -eq 11 ]
}
