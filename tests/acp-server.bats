#!/usr/bin/env bats
# acp-server: driven by the official ACP client library over TCP, TLS and stdio; every message
# the server sends is validated against the ACP v1 schema (tests/acp/validate.mjs).

bats_require_minimum_version 1.5.0
load helpers
load acp/common

setup() {
	setup_sbx_env
	acp_sdk
	export OPENAI_MODEL=fake-eliza
	ACP_PID=
	STUB_PID=
}

teardown() {
	stop_server
	stop_stub
	teardown_sbx_env
}

# A command that starts an HTTP server on port 8000 of the sandbox (index.html says hello) and
# returns once it answers.
SERVE_8000='mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html && (setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &) && curl -s --retry 30 --retry-connrefused --retry-delay 1 -o /dev/null http://127.0.0.1:8000/'  # (port: in the sandbox's own network namespace)

# updates JQ: jq over the updates of the last drive run.
upd() { [ -n "$output" ] && printf '%s' "$output" | jq -e "$1" >/dev/null || { echo "failed: $1" >&2; echo "$output" | head -c 4000 >&2; return 1; }; }

# ---- usage ----

# (-h and the usage errors: tests/usage-errors.txt)

@test "-h describes the sandbox flags it hands to sbx-create" {
	run acp-server -h
	assert_status 0
	assert_contains "handed to sbx-create(1) unchanged"
	assert_contains "  -allow-host LIST      reach only these hosts"
	assert_contains "  -runtime-class NAME   kubernetes: the pod's RuntimeClass"
	assert_contains "  -memory SIZE          memory limit"
}

# Before: a -runtime-class on local or -allow-host on kubernetes was taken, and every
# session's first tool call failed. Now refused before the server listens or reads a line:
# "-listen nonsense" would otherwise be the error (net_listen runs after the check).
@test "sandbox flags the backend cannot honour are refused at start, before anything listens" {
	run acp-server -backend local -runtime-class gvisor -listen nonsense
	assert_status 100
	assert_contains "acp-server: -runtime-class is a kubernetes setting"
	[[ "$output" != *"missing port"* ]]
	[[ "$output" != *"serving ACP"* ]]
	SANDBOX_RUNTIME_CLASS=kata run acp-server -backend local -listen nonsense
	assert_status 100
	assert_contains "acp-server: -runtime-class is a kubernetes setting"
	run acp-server -backend kubernetes -allow-host pypi.org -listen nonsense
	assert_status 100
	assert_contains "acp-server: -allow-host is not available on the kubernetes backend"
	[[ "$output" != *"missing port"* ]]
	# stdio: nothing is read, nothing answered.
	run --separate-stderr acp-server -stdio -backend kubernetes -allow-host pypi.org \
		<<<'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
	assert_status 100
	[ -z "$output" ]
	[[ "$stderr" == "acp-server: -allow-host is not available on the kubernetes backend"* ]]
	# What the backend does take still starts.
	start_server -network -memory 512M
	[ -n "$ACP_ADDR" ]
}

@test "a real model without an API key is refused with upstream's text" {
	OPENAI_MODEL=gemini-3.5-flash run acp-server -listen 127.0.0.1:0
	assert_status 100
	assert_contains "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required"
}

@test "bad listen addresses, token files and TLS files are clear errors" {
	run acp-server -listen nonsense
	assert_status 100
	assert_contains "missing port"
	run acp-server -listen 127.0.0.1:99999	# (port: invalid, never bound)
	assert_status 100
	assert_contains "invalid port"
	: >"$BATS_TEST_TMPDIR/empty"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/empty"
	assert_status 100
	assert_contains "is empty"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/missing"
	assert_status 100
	assert_contains "cannot open token file"
	echo junk >"$BATS_TEST_TMPDIR/junk.pem"
	run acp-server -tls-cert "$BATS_TEST_TMPDIR/junk.pem" -tls-key "$BATS_TEST_TMPDIR/junk.pem"
	assert_status 111
	assert_contains "cannot load TLS certificate"
}

@test "the schema validator reports each known-wrong shape" {
	run timeout 60 node "$SBX_TOP/tests/acp/drive.mjs" selftest
	assert_status 0
	assert_json '.violations == .messages'
}

# ---- turns ----

@test "TCP: initialize, session/new, an approved run: uname -a turn" {
	start_server
	grep -q 'serving ACP address="127.0.0.1:' "$ACP_LOG"
	drive turn
	assert_status 0
	upd '.init.protocolVersion == 1 and .init.agentCapabilities.loadSession == true and .init.authMethods[0].id == "bearer-token"'
	upd '.init.agentInfo == {"name":"sandboxed-tools","version":"0.1.0"}'
	# 128 random bits in every session id
	upd '.sessionId | test("^acp[0-9a-f]{32}$")'
	upd '.stops == ["end_turn"]'
	upd '.init.agentCapabilities | .promptCapabilities == {"image":false,"audio":false,"embeddedContext":true} and .mcpCapabilities == {"http":false,"sse":false} and .sessionCapabilities == {"list":{},"close":{},"resume":{}}'
	upd '.newResult.modes.currentModeId == "ask" and ([.newResult.modes.availableModes[].id] == ["ask","auto-read","never-ask"])'
	upd '[.newResult.configOptions[] | [.id, .category, .currentValue]] == [["mode","mode","ask"],["model","model","fake-eliza"]]'
	upd '[.updates[].sessionUpdate] == ["session_info_update","tool_call","tool_call_update","tool_call_update","agent_message_chunk"]'
	upd '.updates[0].title == "run: uname -a"'
	# the agent's own call id (the model's eliza-run-1 repeats every turn), a human title
	upd '.updates[1] | .toolCallId == "call_2_0" and .kind == "execute" and .status == "pending" and .title == "Run `uname -a`" and .rawInput == {"command":"uname -a"}'
	upd '.updates[2].status == "in_progress"'
	upd '.updates[3] | .status == "completed" and (.content[0].type == "content") and (.content[0].content.text | test("Linux")) and .rawOutput.exit_code == 0 and (.rawOutput.stdout | test("Linux"))'
	upd '.updates[4].content.text | startswith("The tool told me:\nstdout:\nLinux")'
	upd '.permissions | length == 1'
	upd '[.permissions[0].options[].kind] == ["allow_once","allow_always","reject_once","reject_always"]'
	upd '.permissions[0].toolCall | .toolCallId == "call_2_0" and .title == "Run `uname -a`"'
	upd '.permissions[0] | has("title") | not'
	# Every update of the turn is on the wire before the prompt's answer.
	upd '(.log | map(.result.stopReason != null) | index(true)) as $a | (.log | map(.method == "session/update") | rindex(true)) < $a'
	grep -q 'client connected remote="127.0.0.1:' "$ACP_LOG"
}

@test "a rejected call is reported failed with the denial text, and runs nothing" {
	start_server
	drive turn --answer reject-once
	assert_status 0
	upd '.stops == ["end_turn"]'
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update") | .status] == ["failed"]'
	upd '.updates[2].content[0].content.text == "The user denied permission to run tool \"run_command\"."'
	upd '.updates[3].content.text == "The tool told me:\nThe user denied permission to run tool \"run_command\"."'
	run sbx-list
	[ -z "$output" ]
}

@test "allow_always is remembered for the session: the second call is not asked" {
	start_server
	drive turn --answer allow-always --prompts 2 --prompt "run: echo again"
	assert_status 0
	upd '.stops == ["end_turn","end_turn"]'
	upd '.permissions | length == 1'
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update" and .status == "completed")] | length == 2'
}

@test "reject_always is remembered too" {
	start_server
	drive turn --answer reject-always --prompts 2
	assert_status 0
	upd '.permissions | length == 1'
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update") | .status] == ["failed","failed"]'
}

@test "a permission answered cancelled ends the turn with stopReason cancelled" {
	start_server
	drive turn --answer cancelled
	assert_status 0
	upd '.stops == ["cancelled"]'
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update") | .status] == ["failed"]'
}

@test "stdio: the same turn over standard input/output" {
	run bash -c 'timeout 120 node "$SBX_TOP/tests/acp/drive.mjs" turn --stdio acp-server -stdio -backend local 2>"$BATS_TEST_TMPDIR/stdio.log"'
	assert_status 0
	grep -q 'serving ACP address="stdio"' "$BATS_TEST_TMPDIR/stdio.log"
	upd '.stops == ["end_turn"]'
	upd '.updates[3].status == "completed"'
}

@test "text streamed by the model arrives as several agent_message_chunk updates" {
	start_stub <<'EOF'
{"sse":[{"id":"s","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]},{"id":"s","choices":[{"index":0,"delta":{"content":"lo, "}}]},{"id":"s","choices":[{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}]},"data: [DONE]\n\n"],"split":40}
EOF
	start_server
	drive turn --prompt "hi"
	assert_status 0
	upd '[.updates[] | select(.sessionUpdate == "agent_message_chunk") | .content.text] == ["Hel","lo, ","world"]'
	upd '.stops == ["end_turn"]'
}

# ---- load ----

@test "session/load replays the history before answering, also after a restart" {
	start_server
	drive turn
	assert_status 0
	sid=$(printf '%s' "$output" | jq -r .sessionId)
	stop_server
	start_server
	drive load --session "$sid"
	assert_status 0
	upd '.unknown == {"code":-32002,"message":"unknown sessionId \"acpffffffffffffffff\"","data":{"sessionId":"acpffffffffffffffff"}}'
	upd '.invalid.code == -32602 and (.invalid.message | startswith("invalid sessionId: "))'
	upd '.load | .modes.currentModeId == "ask" and (.configOptions | length == 2)'
	# the whole conversation, in order, the tool call with its final status and content
	upd '.replayed == 3'
	upd '.updates[0] == {"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"run: uname -a"}}'
	upd '.updates[1] | .sessionUpdate == "tool_call" and .toolCallId == "call_2_0" and .title == "Run `uname -a`" and .status == "completed" and (.content[0].content.text | test("Linux")) and .rawOutput.exit_code == 0'
	upd '.updates[2].sessionUpdate == "agent_message_chunk" and (.updates[2].content.text | startswith("The tool told me:"))'
	upd '.stop == "end_turn"'
	upd '.updates[3].content.text == "What do you think it means when you say '"'hello again'"'?"'
	# the replay precedes the answer on the wire
	upd '(.log | map(.method == "session/update") | index(true)) < .loadAt'
}

# Sandbox NAME's shutdown time is now: its supervisor reads the deadline file again on SIGHUP.
expire_now() {
	local d=$XDG_STATE_HOME/sbx/default/$1
	date +%s%N >"$d/deadline"
	kill -HUP "$(cat "$d/supervisor.pid")"
}

sandbox_paused() { [ "$(sbx-list | jq -r .state)" = paused ]; }

@test "-idle pause: a session's sandbox paused at its shutdown time is resumed by the next prompt with its process, nothing restored" {
	start_server -idle pause
	drive turn --prompt 'run: setsid sleep 359 >/dev/null 2>&1 </dev/null & echo $! > ~/bg.pid'
	assert_status 0
	sid=$(printf '%s' "$output" | jq -r .sessionId)
	name=$(sbx-list | jq -r .name)
	[ -n "$name" ]
	sbx-list | jq -e '.idle == "pause"'
	expire_now "$name"
	wait_until sandbox_paused
	drive load --session "$sid" --load-prompt 'run: kill -0 $(cat ~/bg.pid) && echo alive'
	assert_status 0
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update" and .status == "completed") | .rawOutput.stdout] | last == "alive\n"'
	[ "$(sbx-list | jq -r .state)" = running ]
	run ! grep -q 'restoring filesystem from latest backup' "$ACP_LOG"
	run ! grep -q 'Active sandbox was deleted or expired' "$ACP_LOG"
}

# ---- cancellation ----

@test "session/cancel during the LLM call: stopReason cancelled, busy session refused meanwhile" {
	{ echo '{"hang":true}'; stub_text "after cancel"; } >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	drive cancel --prompt "hello" --cancel-on "file:$STUB_DIR/requests.jsonl"
	assert_status 0
	upd '.stop == "cancelled"'
	upd '.busy.code == -32602 and (.busy.message | test("^session \"acp[0-9a-f]{32}\" is already processing a prompt$"))'
	upd '.again == "end_turn"'
	upd '[.updates[] | select(.sessionUpdate == "agent_message_chunk") | .content.text] == ["after cancel"]'
}

@test "session/cancel during a tool: the command is stopped, the call failed, the session usable" {
	start_server
	drive cancel --prompt "run: sleep 300" --cancel-on tool
	assert_status 0
	upd '.stop == "cancelled"'
	upd '[.updates[] | select(.sessionUpdate == "tool_call_update") | .status] | .[0] == "in_progress" and .[1] == "failed"'
	upd '.again == "end_turn"'
}

# ---- security ----

@test "auth on: authMethods advertised; no token and a wrong token get -32000" {
	printf 's3cret-token\n' >"$BATS_TEST_TMPDIR/token"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/token"
	drive auth
	assert_status 0
	upd '.init.authMethods == [{"id":"bearer-token","name":"Bearer token","description":"Send the server'"'"'s token as _meta.token in authenticate"}]'
	upd '.before.code == -32000 and .auth.code == -32000 and .after.code == -32000'
	drive auth --token wrong
	assert_status 0
	upd '.auth.code == -32000 and (.auth.message | test("wrong token")) and .after.code == -32000'
	drive auth --token s3cret-token --method other
	upd '.auth.code == -32602'
	! grep -q s3cret "$ACP_LOG"
}

@test "auth on: the right token opens the session methods" {
	printf 's3cret-token\n' >"$BATS_TEST_TMPDIR/token"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/token"
	drive auth --token s3cret-token
	assert_status 0
	upd '.before.code == -32000 and .auth == null and .after == null'
}

@test "TLS: a full turn over TLS with the server's certificate trusted" {
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$BATS_TEST_TMPDIR/key.pem" -out "$BATS_TEST_TMPDIR/cert.pem" 2>/dev/null
	start_server -tls-cert "$BATS_TEST_TMPDIR/cert.pem" -tls-key "$BATS_TEST_TMPDIR/key.pem"
	grep -q 'tls=true' "$ACP_LOG"
	drive turn --tls-ca "$BATS_TEST_TMPDIR/cert.pem"
	assert_status 0
	upd '.stops == ["end_turn"] and .updates[3].status == "completed"'
}

@test "malformed, oversize and unknown messages get the right errors and the connection stays open" {
	start_server -no-auth
	cat >"$BATS_TEST_TMPDIR/lines" <<'EOF'
garbage

[{"jsonrpc":"2.0","id":1,"method":"initialize"}]
{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}
{"jsonrpc":"2.0","id":7,"method":"session/fork","params":{}}
{"jsonrpc":"2.0","id":"0","method":"nope"}\r
{"jsonrpc":"1.0","id":3,"method":"initialize"}
BIG:9000000
{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}
{"jsonrpc":"2.0","id":10,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}
{"jsonrpc":"2.0","id":11,"method":"initialize","params":"x"}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}
{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}
{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}
EOF
	drive raw --lines "$BATS_TEST_TMPDIR/lines" --expect 13
	assert_status 0
	upd '.answers[0] == {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected character"}}'
	upd '.answers[1].id == null and .answers[1].error.code == -32600'
	upd '.answers[2].id == "a" and .answers[2].error.code == -32600'
	upd '.answers[3].id == 0 and .answers[3].result.protocolVersion == 1'
	upd '.answers[4].id == 7 and .answers[4].error == {"code":-32601,"message":"method not supported: session/fork"}'
	upd '.answers[5].id == "0" and .answers[5].error.code == -32601'
	upd '.answers[6].id == 3 and .answers[6].error.code == -32600'
	upd '.answers[7].id == null and .answers[7].error.code == -32600 and (.answers[7].error.message | test("longer than 8388608 bytes"))'
	# session/prompt runs on a worker thread: its answer may come anywhere after the request.
	upd '[.answers[] | select(.id == 9)] | length == 1 and .[0].error.code == -32002'
	upd '[.answers[] | select(.id != 9)] | .[8].id == 10 and .[8].error.code == -32602'
	upd '[.answers[] | select(.id != 9)] | .[9].id == 11 and .[9].error.code == -32600'
	upd '[.answers[] | select(.id != 9)] | .[10].id == null and .[10].error.code == -32600'
	# a request with "id": null is answered, with a null id
	upd '[.answers[] | select(.id != 9)] | .[11] == {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string or an integer, not null"}}'
}

@test "a session/load id cannot leave the state directory" {
	start_server -no-auth
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"../../../etc","cwd":"/","mcpServers":[]}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"/etc/passwd","cwd":"/","mcpServers":[]}}' \
		>"$BATS_TEST_TMPDIR/lines"
	drive raw --lines "$BATS_TEST_TMPDIR/lines" --expect 3
	assert_status 0
	upd '.answers[1].error.message == "invalid sessionId: session name must be lowercase alphanumeric"'
	upd '.answers[2].error.code == -32602'
	[ ! -e "$HOME/.local/etc" ]
}

# ---- many clients, disconnects, shutdown ----

@test "50 concurrent clients each run a tool turn" {
	start_server
	drive concurrent --clients 50
	assert_status 0
	upd '.clients == 50 and .end_turn == 50 and .echoed == 50 and .distinct_sessions == 50'
}

@test "SIGTERM deletes the sandboxes the server created; the sessions' history stays" {
	start_server
	drive turn
	assert_status 0
	sid=$(printf '%s' "$output" | jq -r .sessionId)
	run sbx-list
	assert_contains "\"name\":\"$sid\""
	stop_server
	[ "$ACP_STATUS" -eq 0 ]
	grep -q "deleted sandbox $sid" "$ACP_LOG"
	run sbx-list
	[ -z "$output" ]
	[ -s "$HOME/.local/sandboxed-tools/$sid/sessions/latest.jsonl" ]
}

@test "-listen :PORT is taken as every interface" {
	acp-server -listen :0 -backend local 2>"$BATS_TEST_TMPDIR/any.log" 3>&- &
	ACP_PID=$!
	wait_until -p "$ACP_PID" grep -q 'serving ACP' "$BATS_TEST_TMPDIR/any.log"
	grep -Eq 'serving ACP address="(\[::\]|0\.0\.0\.0):[0-9]+"' "$BATS_TEST_TMPDIR/any.log"
}

@test "man page examples work" {
	local page=$SBX_TOP/man/man1/acp-server.1
	grep -qF 'OPENAI_MODEL=fake-eliza acp-server -listen 127.0.0.1:8090 &' "$page"
	grep -qF 'acp-client -addr 127.0.0.1:8090 -yolo -prompt "run: uname -a"' "$page"
	grep -qF 'acp-client -cmd "acp-server -stdio" -yolo -prompt "run: echo spawned"' "$page"
	# The same commands, on a free port instead of 8090.
	start_server
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "run: uname -a"
	assert_status 0
	assert_contains "[turn ended: end_turn]"
	run acp-client -cmd "acp-server -stdio" -yolo -prompt "run: echo spawned"
	assert_status 0
	assert_contains "spawned"
}

@test "the Kubernetes manifest: RBAC as documented, Secret via envFrom, no Service" {
	run /usr/bin/python3 - "$SBX_TOP/images/acp-server/acp-server.yaml" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = [d["kind"] for d in docs]
assert kinds == ["ServiceAccount", "Role", "RoleBinding", "Deployment"], kinds
assert all(d["metadata"]["namespace"] == "default" for d in docs)
assert all(d["metadata"]["name"] == "sandboxed-tools-acp-server" for d in docs)
rules = {(r["apiGroups"][0], r["resources"][0]): sorted(r["verbs"]) for r in docs[1]["rules"]}
assert rules == {("agents.x-k8s.io", "sandboxes"): sorted(["create", "get", "watch", "update", "patch", "delete"]),
                 ("", "pods"): ["get"], ("", "pods/exec"): ["create", "get"],
                 ("networking.k8s.io", "networkpolicies"): ["create", "delete", "get"]}, rules
spec = docs[3]["spec"]["template"]["spec"]
assert spec["serviceAccountName"] == "sandboxed-tools-acp-server"
c = spec["containers"][0]
assert c["envFrom"] == [{"secretRef": {"name": "sandboxed-tools-acp-server"}}]
assert c["ports"][0]["containerPort"] == 8090
assert {"name": "data", "mountPath": "/data"} in c["volumeMounts"]
print("ok")
PY
	assert_status 0
	[ "$output" = ok ]
	grep -q '^ENTRYPOINT \["acp-server", "--listen=:8090"\]$' "$SBX_TOP/images/acp-server/Dockerfile"
	grep -q '^ENV HOME=/data$' "$SBX_TOP/images/acp-server/Dockerfile"
	grep -Eq '^USER [1-9][0-9]*' "$SBX_TOP/images/acp-server/Dockerfile"
}

@test "a disconnect cancels the client's turn (its command is killed) but keeps the session" {
	start_server
	drive disconnect --prompt "run: sleep 313.$$"
	assert_status 0
	upd '.notOpen.code == -32002 and (.notOpen.message | test("is not open on this connection"))'
	upd '.stop == "end_turn"'
	upd '[.updates[] | select(.sessionUpdate == "agent_message_chunk") | .content.text] == ["What do you think it means when you say '"'still there?'"'?"]'
	wait_until ! pgrep -f -x "sleep 313.$$"
}

@test "one slow turn does not hold up another session" {
	{ echo '{"hang":true}'; stub_text "fast answer"; } >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	drive parallel --wait-file "$STUB_DIR/requests.jsonl"
	assert_status 0
	upd '.b == "end_turn" and .textB == "fast answer" and .a == "cancelled"'
}

@test "SIGTERM lets a running turn finish, then deletes its sandbox" {
	start_server
	node "$SBX_TOP/tests/acp/drive.mjs" turn --addr "$ACP_ADDR" --token-file "$ACP_TOKEN_FILE" --prompt "run: sleep 2.31$$; echo drained" \
		>"$BATS_TEST_TMPDIR/drive.out" 2>&1 &
	dpid=$!
	wait_until pgrep -f -x "sleep 2.31$$"
	stop_server
	wait "$dpid"
	output=$(cat "$BATS_TEST_TMPDIR/drive.out")
	upd '.stops == ["end_turn"]'
	upd '.updates[3].status == "completed" and (.updates[3].content[0].content.text | test("drained"))'
	[ "$ACP_STATUS" -eq 0 ]
	grep -q "deleted sandbox" "$ACP_LOG"
	run sbx-list
	[ -z "$output" ]
}

@test "more sessions than a connection may hold get a clear error; failed loads never count" {
	start_server -no-auth
	{
		echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
		for i in $(seq 63); do
			echo '{"jsonrpc":"2.0","id":'"$i"',"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
		done
		for i in $(seq 100 109); do
			echo '{"jsonrpc":"2.0","id":'"$i"',"method":"session/load","params":{"sessionId":"acp'"$i"'","cwd":"/tmp","mcpServers":[]}}'
		done
		for i in 64 65; do
			echo '{"jsonrpc":"2.0","id":'"$i"',"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
		done
	} >"$BATS_TEST_TMPDIR/lines"
	drive raw --lines "$BATS_TEST_TMPDIR/lines" --expect 76
	assert_status 0
	upd '[.answers[] | select(.result.sessionId)] | length == 64'
	# loads run on worker threads: their answers come in any order
	upd '[.answers[] | select(.id >= 100) | .error.code] == [range(10) | -32002]'
	upd '[.answers[] | select(.id == 65)][0] == {"jsonrpc":"2.0","id":65,"error":{"code":-32600,"message":"too many sessions on this connection (limit 64)"}}'
	# a closed session gives its slot back
	jq -n '[range(64) | {"new":{}}] + [{"new":{}}, {"close":{}}, {"new":{}}]' >"$BATS_TEST_TMPDIR/steps.json"
	drive steps --steps "$BATS_TEST_TMPDIR/steps.json"
	assert_status 0
	upd '[.steps[64,65,66] | .error.code // "ok"] == [-32600,"ok","ok"]'
}

@test "a failing model call answers the prompt with -32603 and upstream's text; the session stays usable" {
	{ echo '{"status":400,"json":{"error":"bad request"}}'; stub_text "recovered"; } >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	drive turn --prompt hi --prompts 2
	assert_status 0
	upd '.stops[0].code == -32603 and (.stops[0].message | startswith("failed to call LLM: llm: api error (status 400)"))'
	upd '.stops[1] == "end_turn"'
	run ! grep -qF "$STUB_KEY" "$ACP_LOG"
}

@test "replaying a 48 MiB history goes out whole, at the client's pace" {
	sid=acp00000000000000aa
	mkdir -p "$HOME/.local/sandboxed-tools/$sid/sessions"
	python3 - "$HOME/.local/sandboxed-tools/$sid/sessions/latest.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(48):
        role = "user" if i % 2 == 0 else "assistant"
        f.write(json.dumps({"role": role, "content": f"m{i} " + "x" * (1 << 20)}) + "\n")
PY
	start_server -no-auth -import-session "$sid=anonymous"
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"'"$sid"'","cwd":"/tmp","mcpServers":[]}}' \
		>"$BATS_TEST_TMPDIR/lines"
	drive raw --lines "$BATS_TEST_TMPDIR/lines" --expect 50
	assert_status 0
	output=$(printf '%s' "$output" | jq -c '[.answers[] | if .method then (.params.update.content.text | .[0:4]) else .id end]')
	[ "$(printf '%s' "$output" | jq -c '.[0], .[1], .[48], .[49]' | tr '\n' ' ')" = '0 "m0 x" "m47 " 1 ' ]
	grep -q 'client disconnected' "$ACP_LOG"
}

@test "a sandbox that cannot be made fails the announced tool call and answers -32603" {
	start_server -homedir relative/dir
	drive turn
	assert_status 0
	upd '.stops[0].code == -32603 and (.stops[0].message | startswith("failed to create sandbox: "))'
	upd '[.updates[] | [.sessionUpdate, .status]] == [["session_info_update",null],["tool_call","pending"],["tool_call_update","failed"]]'
}

@test "stdio: standard output carries only ACP messages; end of input exits 0" {
	run bash -c 'printf "%s\n" "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}" |
		acp-server -stdio 2>"$BATS_TEST_TMPDIR/err"'
	cat "$BATS_TEST_TMPDIR/err"
	assert_status 0
	[ "${#lines[@]}" -eq 1 ]
	assert_json '.id == 0 and .result.protocolVersion == 1'
	grep -q 'client disconnected remote="stdio"' "$BATS_TEST_TMPDIR/err"
}

# ---- who may talk to the server (issue 16) ----

@test "TCP without -auth-token-file: a generated token in a 0600 file named on stderr, never printed" {
	start_server
	grep -q 'auth=true' "$ACP_LOG"
	[ -n "$ACP_TOKEN_FILE" ]
	[ "$ACP_TOKEN_FILE" = "$XDG_STATE_HOME/sbx/.acp-server/token-${ACP_ADDR##*:}" ]
	[ "$(stat -c %a "$ACP_TOKEN_FILE")" = 600 ]
	[ "$(stat -c %a "$(dirname "$ACP_TOKEN_FILE")")" = 700 ]
	tok=$(cat "$ACP_TOKEN_FILE")
	[[ "$tok" =~ ^[0-9a-f]{64}$ ]]
	run ! grep -qF "$tok" "$ACP_LOG"
	# without the token: nothing but initialize and authenticate
	ACP_TOKEN_FILE= drive auth
	assert_status 0
	upd '.before.code == -32000 and .auth.code == -32000 and .after.code == -32000'
	drive auth --token "$tok"
	upd '.auth == null and .after == null'
	# the token dies with the server
	stop_server
	[ ! -e "$XDG_STATE_HOME/sbx/.acp-server/token-${ACP_ADDR##*:}" ]
}

@test "-no-auth is refused on a non-loopback address and conflicts with -auth-token-file" {
	run acp-server -no-auth -listen 0.0.0.0:0
	assert_status 100
	assert_contains "-no-auth is refused on 0.0.0.0:"
	assert_contains "not a loopback address"
	run acp-server -no-auth -listen :0
	assert_status 100
	assert_contains "not a loopback address"
	echo tok >"$BATS_TEST_TMPDIR/t"
	run acp-server -no-auth -auth-token-file "$BATS_TEST_TMPDIR/t"
	assert_status 100
	assert_contains "exclude each other"
	start_server -no-auth
	grep -q 'auth=false' "$ACP_LOG"
	[ -z "$ACP_TOKEN_FILE" ]
}

@test "token files: several principals, comments, clear errors for duplicates and bad lines" {
	printf '# team\nalice tok-alice-0123456789\n\nbob\ttok-bob-0123456789\n' >"$BATS_TEST_TMPDIR/t"
	chmod 600 "$BATS_TEST_TMPDIR/t"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/t"
	run ! grep -q warning "$ACP_LOG"
	drive auth --token tok-bob-0123456789
	upd '.auth == null and .after == null'
	grep -q 'authenticated remote="127.0.0.1:[0-9]*" principal="bob"' "$ACP_LOG"
	stop_server
	printf 'alice a1\nalice a2\n' >"$BATS_TEST_TMPDIR/dup"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/dup"
	assert_status 100
	assert_contains 'line 2: principal "alice" is already defined'
	printf 'alice same\nbob same\n' >"$BATS_TEST_TMPDIR/dup"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/dup"
	assert_contains 'line 2: the same token as principal "alice"'
	printf 'a b c\n' >"$BATS_TEST_TMPDIR/bad"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/bad"
	assert_contains "line 1: want TOKEN or NAME TOKEN"
	printf 'x tok\n' >"$BATS_TEST_TMPDIR/loose"
	chmod 644 "$BATS_TEST_TMPDIR/loose"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/loose"
	grep -q "warning: token file .* can be read by other users" "$ACP_LOG"
}

@test "a session is its creator's: another principal's prompt, load and cancel look like an unknown session" {
	printf 'alice tok-alice-0123456789\nbob tok-bob-0123456789\n' >"$BATS_TEST_TMPDIR/t"
	chmod 600 "$BATS_TEST_TMPDIR/t"
	start_server -auth-token-file "$BATS_TEST_TMPDIR/t"
	drive principals --alice tok-alice-0123456789 --bob tok-bob-0123456789
	assert_status 0
	upd '.bobPrompt == .unknownPrompt and .bobPrompt.code == -32002'
	upd '.bobLoad == .unknownLoad and .bobLoad.code == -32002'
	upd '.alice == "end_turn" and (.aliceOutput | startswith("stdout:\nmine\n")) and .bobUpdates == 0'
	upd '.bobList == [] and .aliceList == [.sid] and .aliceAfter == "end_turn"'
	# after a restart the record says whose it is
	sid=$(printf '%s' "$output" | jq -r .sid)
	grep -q "\"id\":\"$sid\",\"principal\":\"alice\"" "$XDG_STATE_HOME/sbx/.acp-server/sessions.jsonl"
	stop_server
	start_server -auth-token-file "$BATS_TEST_TMPDIR/t"
	drive principals --alice tok-alice-0123456789 --bob tok-bob-0123456789 --load "$sid"
	assert_status 0
	upd '.bobLoad.code == -32002 and .aliceLoad == null'
}

@test "a second connection that loads a session takes it over: the first is told, its turn stops, nothing interleaves" {
	start_server
	drive takeover --prompt "run: sleep 317.$$"
	assert_status 0
	upd '.loaded.modes.currentModeId == "ask" and .aStop == "cancelled"'
	upd '.replay == ["user_message_chunk","agent_message_chunk","user_message_chunk","tool_call"]'
	upd '.told == [{"sessionId":.sid}]'
	upd '.aAfter.code == -32002 and (.aAfter.message | test("not open on this connection"))'
	upd '.bStop == "end_turn" and .bText == "What do you think it means when you say '"'now mine'"'?"'
	grep -q "session acp[0-9a-f]* taken over by remote=" "$ACP_LOG"
	run ! pgrep -f -x "sleep 317.$$"
}

@test "only sessions this server issued can be loaded: agent-loop's default is not found until imported" {
	echo hello | agent-loop -backend local >/dev/null 2>&1
	[ -s "$HOME/.local/sandboxed-tools/default/sessions/latest.jsonl" ]
	start_server
	drive load --session default
	assert_status 1
	assert_contains 'unknown sessionId \"default\"'
	stop_server
	start_server -import-session default
	grep -q 'imported session default for principal operator' "$ACP_LOG"
	drive load --session default
	assert_status 0
	upd '.updates[0] == {"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hello"}}'
	# imported for someone else: still not ours
	stop_server
	printf 'alice tok-alice-0123456789\n' >"$BATS_TEST_TMPDIR/t"
	run acp-server -auth-token-file "$BATS_TEST_TMPDIR/t" -import-session default=mallory
	assert_status 100
	assert_contains 'no principal "mallory" in the token file'
}

@test "every flag is checked before the port is opened: a bad -import-session on a busy port is itself (100)" {
	start_server
	# the address is taken by the running server: a check after the bind would say so (111)
	run acp-server -listen "$ACP_ADDR" -import-session 'Not-A-Name'
	assert_status 100
	assert_contains '-import-session: invalid session name "Not-A-Name"'
	run acp-server -listen "$ACP_ADDR" -import-session default=mallory
	assert_status 100
	assert_contains 'no principal "mallory" in the token file'
	printf 'alice tok-alice-0123456789\n' >"$BATS_TEST_TMPDIR/t"
	run acp-server -listen "$ACP_ADDR" -auth-token-file "$BATS_TEST_TMPDIR/t" -import-session default=bob
	assert_status 100
	assert_contains 'no principal "bob" in the token file'
	# and the flags being right, the busy port is what is said
	run acp-server -listen "$ACP_ADDR" -import-session default
	assert_status 111
	assert_contains "in use"
}

@test "connection hygiene: a silent connection is closed after -auth-timeout; a logged-in one stays" {
	start_server -auth-timeout 1s
	run timeout 60 python3 "$SBX_TOP/tests/acp/abuse.py" idle "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")"
	assert_status 0
	assert_json '.closed and .after >= 0.5 and .after < 5 and .login.result == {} and .authenticated_still_served'
	grep -q 'closing connection remote="127.0.0.1:[0-9]*": not authenticated within 1s' "$ACP_LOG"
}

@test "connection hygiene: per-source connection cap; a newcomer closes the source's oldest unauthenticated one, logged" {
	start_server -max-conns-per-source 3
	run timeout 60 python3 "$SBX_TOP/tests/acp/abuse.py" conncap "$ACP_ADDR" 3
	assert_status 0
	# The extra one stays; the three held before it lose the oldest.
	assert_json '(.extra_closed | not) and .held_open == 2'
	grep -q 'closing connection remote="127.0.0.1:[0-9]*": not authenticated, and its source holds its cap (local uid [0-9]*)' "$ACP_LOG"
}

# issue 27: no local process locks the token holder out.
@test "lockout: 1100 silent connections from as many 127.x addresses leave the token holder served within 1 s" {
	start_server
	run timeout 120 python3 "$SBX_TOP/tests/acp/abuse.py" flood "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")" 1100
	assert_status 0
	# All of loopback is one source (this user): the flood keeps at most its cap of 64.
	assert_json '.login.result == {} and .session and .seconds < 1 and .flood_open <= 64'
	stop_server
	start_server -max-conns-per-source 0
	run timeout 120 python3 "$SBX_TOP/tests/acp/abuse.py" flood "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")" 1100
	assert_status 0
	# Without a per-source cap, unauthenticated connections still hold at most 3/4 of the slots.
	assert_json '.login.result == {} and .session and .seconds < 1 and .flood_open <= 768 and .flood_open > 64'
	grep -q 'not authenticated, and unauthenticated connections hold their share' "$ACP_LOG"
}

@test "lockout: guessing is bounded server-wide (-auth-failure-rate) and never shuts out another user's right token" {
	start_server -max-auth-failures 0 -auth-failure-rate 5
	timeout 60 python3 "$SBX_TOP/tests/acp/abuse.py" guess "$ACP_ADDR" 3 >"$BATS_TEST_TMPDIR/guess" &
	guesser=$!
	wait_until grep -q 'refusing authentication remote=' "$ACP_LOG"
	# Another user (a source of its own: who owns the other end) logs in meanwhile.
	run timeout 30 setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 \
		"$SBX_TOP/tests/acp/abuse.py" login "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")"
	assert_status 0
	assert_json '.login.result == {} and .session and .seconds < 1'
	wait "$guesser"
	run cat "$BATS_TEST_TMPDIR/guess"
	# 8 threads guessing flat out for 3 s (.seconds: as long as it really took): compared at most
	# the bucket (2 s worth) and 5 a second after it, however many 127.x addresses they come from.
	assert_json '.compared <= 10 + 5 * (.seconds | ceil) + 2 and .refused > 0'
	grep -q 'refusing authentication remote="127.[0-9.]*:[0-9]*": more than 5 failed authentications a second on this server' "$ACP_LOG"
}

@test "lockout: -max-sessions caps a principal's live sessions with a clear error; closing one, or leaving one idle, makes room" {
	start_server -max-sessions 2
	run timeout 60 python3 "$SBX_TOP/tests/acp/abuse.py" sessions "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")" 2
	assert_status 0
	assert_json '.made == 2 and (.refused | length) == 1 and .refused[0].code == -32600 and .closed and .after_close'
	assert_json '.refused[0].message == "too many live sessions for principal \"operator\" (limit 2, acp-server -max-sessions), all in use: close one with session/close first"'
	assert_json '.after_reconnect'
	grep -q 'closed idle session acp[0-9a-f]* of principal "operator" to make room (-max-sessions)' "$ACP_LOG"
}

@test "connection hygiene: failed authentications block the source (a local user), logged; the right token from it then waits too" {
	start_server -max-auth-failures 5
	run timeout 60 python3 "$SBX_TOP/tests/acp/abuse.py" authfail "$ACP_ADDR" "$(cat "$ACP_TOKEN_FILE")"
	assert_status 0
	assert_json '.failures == 5 and .refused_at_once and (.right_token_served | not)'
	# Loopback is one source per local user: who owns the other end.
	grep -q "failed authentication remote=\"127.0.0.1:[0-9]*\" (5 from local uid $(id -u) in the last minute): wrong token" "$ACP_LOG"
	grep -q "blocking local uid $(id -u) for 10s after 5 failed authentications" "$ACP_LOG"
	grep -q "refusing connections from local uid $(id -u) for [0-9]*s: too many failed authentications" "$ACP_LOG"
}

# ---- what an editor gets (issue 18) ----

@test "tool calls: agent-made unique ids, titles, kinds, client-path locations, diffs, failed on a non-zero exit; auto-read asks only for changes; the replay is the same" {
	{
		stub_call call_1 ls '{"path":"."}'
		stub_call call_1 write '{"path":"notes.txt","content":"a\nb\n"}'
		stub_call call_1 run_command '{"command":"pwd; cat notes.txt; exit 3"}'
		stub_text "done"
		stub_call call_1 read '{"path":"notes.txt"}'
		stub_text "read it"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	steps '[{"new":{"cwd":"/srv/proj"}},{"mode":"auto-read"},{"prompt":"go"},{"prompt":"again"},
		{"connect":{}},{"load":{"cwd":"/srv/proj"}}]' --
	assert_status 0
	calls='[.steps[2].updates[] | select(.sessionUpdate == "tool_call")]'
	upd "$calls"' | map(.toolCallId) == ["call_2_0","call_4_0","call_6_0"]'
	upd "$calls"' | map(.title) == ["List .","Write notes.txt","Run `pwd; cat notes.txt; exit 3`"]'
	upd "$calls"' | map(.kind) == ["search","edit","execute"]'
	upd "$calls"' | map(.locations) == [[{"path":"/srv/proj"}],[{"path":"/srv/proj/notes.txt"}],null]'
	# auto-read: the listing ran without asking, the write and the command were asked
	upd '[.steps[2].permissions[].toolCallId] == ["call_4_0","call_6_0"]'
	upd '.steps[1].updates == [{"sessionUpdate":"current_mode_update","currentModeId":"auto-read"},{"sessionUpdate":"config_option_update","configOptions":.steps[1].updates[1].configOptions}]'
	final='[.steps[2].updates[] | select(.sessionUpdate == "tool_call_update" and .status != "in_progress")]'
	upd "$final"' | map(.status) == ["completed","completed","failed"]'
	upd "$final"' | .[1].content[0] == {"type":"diff","path":"/srv/proj/notes.txt","newText":"a\nb\n"}'
	# the tools ran in the sandbox directory the cwd maps to, made for them
	upd "$final"' | .[2].rawOutput == {"stdout":"/home/clawtainer/proj\na\nb\n","stderr":"","exit_code":3}'
	upd '[.steps[3].updates[] | select(.sessionUpdate == "tool_call")] | map([.toolCallId, .title, .locations[0].path]) == [["call_10_0","Read notes.txt","/srv/proj/notes.txt"]]'
	# session/load: every call again, whole, with its final status and content, in order
	upd '[.steps[5].updates[] | select(.sessionUpdate == "tool_call") | [.toolCallId, .title, .status]] == [["call_2_0","List .","completed"],["call_4_0","Write notes.txt","completed"],["call_6_0","Run `pwd; cat notes.txt; exit 3`","failed"],["call_10_0","Read notes.txt","completed"]]'
	upd '[.steps[5].updates[] | select(.toolCallId == "call_4_0")][0].content[0].type == "diff"'
	upd '[.steps[5].updates[].sessionUpdate] | map(select(. != "tool_call")) == ["user_message_chunk","agent_message_chunk","user_message_chunk","agent_message_chunk"]'
	upd '.steps[5].result.modes.currentModeId == "auto-read"'
}

@test "open_port (-toolset basic+open_port): failed while nothing listens; then its tool call links the URL (resource_link), which answers from the host" {
	{
		stub_call c1 open_port '{"port":8000}'
		stub_call c2 run_command "$(jq -cn --arg c "$SERVE_8000" '{command: $c}')"
		stub_call c3 open_port '{"port":8000}'
		stub_text "open"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server -toolset basic+open_port
	steps '[{"new":{}},{"prompt":"serve it"}]' --
	assert_status 0
	final='[.steps[1].updates[] | select(.sessionUpdate == "tool_call_update" and .status != "in_progress")]'
	upd "$final"' | map(.status) == ["failed","completed","completed"]'
	upd "$final"' | .[0].content == [{"type":"content","content":{"type":"text","text":.[0].rawOutput.content}}] and (.[0].rawOutput.content | startswith("Nothing listens on port 8000"))'
	upd "$final"' | .[2].content[0].content | .type == "resource_link" and (.uri | startswith("http://127.0.0.1:"))'
	url=$(printf '%s' "$output" | jq -r "$final"' | .[2].content[0].content.uri')
	upd "$final"' | .[2].content[1].content.text | startswith("'"$url"'\n")'
	# the model was told the URL too
	request 4 | jq -e --arg u "$url" '[.body.messages[] | select(.role == "tool")][-1].content | startswith($u)' >/dev/null
	run curl -sf "${url}index.html"
	assert_status 0
	[ "$output" = hello ]
}

@test "the model's reasoning as thought chunks, usage_update, and length / content_filter as max_tokens / refusal" {
	{
		echo '{"sse":[{"id":"s","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me"}}]},{"id":"s","choices":[{"index":0,"delta":{"reasoning_content":" think."}}]},{"id":"s","choices":[{"index":0,"delta":{"content":"Answer."},"finish_reason":"stop"}]},{"id":"s","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}},"data: [DONE]\n\n"]}'
		stub_finish "cut off" length
		stub_finish "" content_filter
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	# (a vendor that refuses reasoning_content back outside a tool-call turn: llm-chat's
	# policy, lib/llm/vendor.c, decides what each vendor is sent)
	LLM_VENDOR=deepseek start_server
	steps '[{"new":{}},{"prompt":"think"},{"prompt":"go on"},{"prompt":"bad"},{"connect":{}},{"load":{}}]'
	assert_status 0
	upd '[.steps[1].updates[] | [.sessionUpdate, (.content.text // .used)]] == [["session_info_update",null],["agent_thought_chunk","Let me"],["agent_thought_chunk"," think."],["agent_message_chunk","Answer."],["usage_update",15]]'
	upd '[.steps[1].updates[] | select(.sessionUpdate == "usage_update")][0] == {"sessionUpdate":"usage_update","used":15,"size":128000}'
	upd '[.steps[1,2,3].result.stopReason] == ["end_turn","max_tokens","refusal"]'
	upd '[.steps[5].updates[] | [.sessionUpdate, .content.text]] | .[0:3] == [["user_message_chunk","think"],["agent_thought_chunk","Let me think."],["agent_message_chunk","Answer."]]'
	# usage is asked for; the reasoning is kept for the replay but not sent back to this vendor
	jq -s -e '.[0].body.stream_options == {"include_usage":true}' "$STUB_DIR/requests.jsonl"
	jq -s -e '.[1].body.messages | map(select(.role == "assistant")) | length == 1 and (.[0] | has("reasoning_content") | not)' "$STUB_DIR/requests.jsonl"
	sid=$(printf '%s' "$output" | jq -r .sid)
	grep -q '"reasoning_content":"Let me think."' "$HOME/.local/sandboxed-tools/$sid/sessions/latest.jsonl"
}

@test "prompt blocks: text as paragraphs, resource links read through fs/read_text_file or named, embedded resources; images and audio refused for a model without them" {
	{ stub_text one; stub_text two; } >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	steps '[{"connect":{"fs":{"readTextFile":true}}},{"files":{"/srv/proj/a.txt":"file A\n"}},{"new":{"cwd":"/srv/proj"}},
		{"prompt":[{"type":"text","text":"alpha"},{"type":"text","text":"beta"},
			{"type":"resource_link","uri":"file:///srv/proj/a.txt","name":"a.txt"},
			{"type":"resource_link","uri":"file:///srv/proj/gone%20.txt","name":"gone .txt"},
			{"type":"resource_link","uri":"https://example.com/spec","name":"spec","description":"the spec"},
			{"type":"resource","resource":{"uri":"mem://x","text":"embedded","mimeType":"text/plain"}}]},
		{"prompt":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]},
		{"prompt":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]},
		{"connect":{}},{"load":{"cwd":"/srv/proj"}},{"prompt":[{"type":"resource_link","uri":"file:///srv/proj/a.txt","name":"a.txt"}]}]'
	assert_status 0
	upd '.reads == [{"sessionId":.sid,"path":"/srv/proj/a.txt"},{"sessionId":.sid,"path":"/srv/proj/gone .txt"}]'
	upd '.steps[0].result.agentCapabilities.promptCapabilities == {"image":false,"audio":false,"embeddedContext":true}'
	upd '.steps[4].error.code == -32602 and (.steps[4].error.message | test("does not take images"))'
	upd '.steps[5].error.code == -32602 and .steps[5].error.message == "audio prompts are not accepted"'
	run jq -s -r '.[0].body.messages[-1].content' "$STUB_DIR/requests.jsonl"
	[ "$output" = 'alpha

beta

<resource uri="file:///srv/proj/a.txt" name="a.txt">
file A
</resource>

[Resource: gone .txt <file:///srv/proj/gone%20.txt> (could not be read: Resource not found: /srv/proj/gone .txt)]

[Resource: spec <https://example.com/spec>: the spec]

<resource uri="mem://x">
embedded
</resource>' ]
	# a client without fs/read_text_file: the link is named, not read
	run jq -s -r '.[1].body.messages[-1].content' "$STUB_DIR/requests.jsonl"
	[ "$output" = '[Resource: a.txt <file:///srv/proj/a.txt>]' ]
}

@test "images go to a model that takes them as image_url parts, and come back in the replay" {
	stub_text "a picture" >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server -images yes
	steps '[{"new":{}},{"prompt":[{"type":"text","text":"look"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]},{"connect":{}},{"load":{}}]'
	assert_status 0
	upd '.steps[2].result.agentCapabilities.promptCapabilities.image == true'
	upd '.steps[1].result.stopReason == "end_turn"'
	upd '[.steps[3].updates[] | select(.sessionUpdate == "user_message_chunk") | .content] == [{"type":"text","text":"look"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]'
	jq -s -e '.[0].body.messages[-1].content == [{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]' "$STUB_DIR/requests.jsonl"
}

@test "session/list, session/close and session/resume; the mode and model options; unknown values refused" {
	start_server -models other-model
	steps '[{"new":{"cwd":"/a"}},{"prompt":"hello one"},{"new":{"cwd":"/b"}},{"prompt":"hello two"},
		{"list":{}},{"list":{"cwd":"/a"}},
		{"config":["model","nope"]},{"config":["model","other-model"]},{"config":["mode","never-ask"]},{"mode":"bogus"},
		{"prompt":"run: echo unasked"},
		{"close":{}},{"prompt":"after close"},
		{"connect":{}},{"resume":{"cwd":"/b"}},{"prompt":"back"},{"close":{"sessionId":"acp0"}}]'
	assert_status 0
	upd '[.steps[4].result.sessions[] | [.cwd, .title]] == [["/b","hello two"],["/a","hello one"]]'
	upd '.steps[4].result.sessions | all(.updatedAt | test("^20[0-9-]{8}T"))'
	upd '[.steps[5].result.sessions[] | .cwd] == ["/a"] and (.steps[5].result | has("nextCursor") | not)'
	upd '.steps[6].error.code == -32602 and (.steps[6].error.message | test("not offered"))'
	# a real model needs a key: the offer is there, the switch refused with why
	upd '.steps[7].error.code == -32602 and (.steps[7].error.message | test("API_KEY"))'
	upd '[.steps[8].result.configOptions[] | [.id, .currentValue]] == [["mode","never-ask"],["model","fake-eliza"]]'
	upd '[.steps[8].result.configOptions[1].options[].value] == ["fake-eliza","other-model"]'
	upd '.steps[8].updates == [{"sessionUpdate":"current_mode_update","currentModeId":"never-ask"}]'
	upd '.steps[9].error.code == -32602'
	# never-ask: the command ran without a permission request
	upd '(.steps[10].permissions | length) == 0 and ([.steps[10].updates[] | select(.sessionUpdate == "tool_call_update") | .status] == ["in_progress","completed"])'
	upd '.steps[11].result == {} and .steps[12].error.code == -32002'
	# resume: no replay, the mode it had, and it prompts again
	upd '.steps[14].updates == [] and .steps[14].result.modes.currentModeId == "never-ask"'
	upd '.steps[15].result.stopReason == "end_turn"'
	# closing an unknown session is -32002, which the SDK takes as a successful close
	upd '.steps[16].result == {}'
}

@test "-max-tool-rounds: the limit message names acp-server's flag" {
	start_server -max-tool-rounds 1
	steps '[{"new":{}},{"mode":"never-ask"},{"prompt":"run: echo once"}]'
	assert_status 0
	upd '.steps[2].result.stopReason == "max_turn_requests"'
	upd '.steps[2].updates[-1].content.text | test("-max-tool-rounds 1")'
	run acp-server -max-tool-rounds 0
	assert_status 100
}

@test "mcpServers: stdio servers start inside the session's sandbox, their tools offered as mcp__<server>__<tool> through the permission flow; a server that fails is reported" {
	{
		stub_call c1 mcp__echo__where '{}'
		stub_call c1 mcp__echo__shout '{"text":"hi"}'
		stub_call c1 mcp__echo__fail '{}'
		stub_text "done"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	jq -n --rawfile py "$SBX_TOP/tests/acp/mcp-echo.py" '[
		{"new":{"cwd":"/srv/proj","mcpServers":[
			{"name":"echo","command":"/usr/bin/python3","args":["-c",$py],"env":[{"name":"ECHO_FOO","value":"bar"}]},
			{"name":"broken","command":"/nonexistent/mcp-server","args":[],"env":[]}]}},
		{"prompt":"use the tools"},
		{"close":{}},
		{"new":{"mcpServers":[{"name":"x","command":"relative","args":[],"env":[]}]}},
		{"new":{"mcpServers":[{"type":"http","name":"h","url":"http://example.com","headers":[]}]}},
		{"new":{"mcpServers":[1]}}]' >"$BATS_TEST_TMPDIR/steps.json"
	drive steps --steps "$BATS_TEST_TMPDIR/steps.json"
	assert_status 0
	sid=$(printf '%s' "$output" | jq -r .steps[0].result.sessionId)
	# the failure is said at the start of the turn, the turn goes on
	upd '.steps[1].updates[0] == {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"MCP server \"broken\" (/nonexistent/mcp-server) did not start: connection closed; its last words: sbx-exec: cannot run /nonexistent/mcp-server: No such file or directory\n"}}'
	upd '[.steps[1].permissions[].title] == ["where (MCP echo)","shout (MCP echo)","fail (MCP echo)"]'
	final='[.steps[1].updates[] | select(.sessionUpdate == "tool_call_update" and .status != "in_progress")]'
	# it ran in the sandbox (named after the session), in the tools' directory, with its env
	upd "$final"' | .[0].content[0].content.text | startswith("host='"$sid"' home=/home/clawtainer cwd=/home/clawtainer/proj foo=bar pidns=")'
	# in the sandbox's pid namespace, not this host's
	upd "$final"' | .[0].content[0].content.text | endswith("pidns='"$(readlink /proc/self/ns/pid)"'") | not'
	upd "$final"' | [.[].status] == ["completed","completed","failed"] and .[1].content[0].content.text == "HI"'
	upd '.steps[1].result.stopReason == "end_turn"'
	jq -s -e '.[0].body.tools | map(.function.name) | index("mcp__echo__shout") and (map(select(startswith("mcp__broken"))) == [])' "$STUB_DIR/requests.jsonl"
	upd '.steps[3].error.code == -32602 and (.steps[3].error.message | test("absolute command"))'
	upd '.steps[4].error.code == -32602 and (.steps[4].error.message | test("only stdio"))'
	upd '.steps[5].error.code == -32602'
	# session/close stopped it
	upd '.steps[2].result == {}'
	run ! pgrep -f "import json, os, socket"
}

@test "slash commands: advertised after session/new and load; /mode, /model and /sandbox answered by the server, never the model; others go to the model" {
	stub_text "model saw it" >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server -models other-model
	steps '[{"new":{"cwd":"/srv/proj"}},{"commands":1},
		{"prompt":"/mode"},{"prompt":"  /mode never-ask "},{"prompt":"/mode bogus"},
		{"prompt":"/model other-model"},{"prompt":"/sandbox"},{"prompt":"/sandbox now"},
		{"prompt":"/nosuch thing"},
		{"connect":{}},{"load":{}},{"commands":2},{"prompt":"/model"}]'
	assert_status 0
	# the model a command chose is kept with the session, and /model lists the offered ones
	upd '.steps[12].updates[0].content.text == "Model: other-model.\nModels: stub-model other-model\n"'
	upd '.sid as $s | .commands | length == 2 and (.[0].sessionId == $s) and (.[1].sessionId == $s)'
	upd '.commands[0].update == {"sessionUpdate":"available_commands_update","availableCommands":[
		{"name":"mode","description":"Show or set when tool calls are asked for (ask, auto-read, never-ask)","input":{"hint":"ask | auto-read | never-ask"}},
		{"name":"model","description":"Show or set the model of this session (those acp-server -models offers)","input":{"hint":"model name"}},
		{"name":"sandbox","description":"Show this session'"'"'s sandbox: its name, backend, and where tools run"}]}'
	upd '.commands[1].update == .commands[0].update'
	upd '.steps[2].result.stopReason == "end_turn" and .steps[2].updates == [{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Mode: ask (Ask before every tool call).\nModes: ask auto-read never-ask\n"}}]'
	upd '[.steps[3].updates[].sessionUpdate] == ["current_mode_update","config_option_update","agent_message_chunk"]'
	upd '.steps[3].updates[0].currentModeId == "never-ask" and .steps[3].updates[2].content.text == "Mode: never-ask (Run every tool call without asking).\n"'
	upd '.steps[4].updates[0].content.text | startswith("mode bogus: unknown mode (available: ask, auto-read, never-ask)\nMode: never-ask")'
	upd '[.steps[5].updates[].sessionUpdate] == ["config_option_update","agent_message_chunk"] and .steps[5].updates[1].content.text == "Model: other-model.\n"'
	upd '.steps[5].updates[0].configOptions[1].currentValue == "other-model"'
	upd '.sid as $s | .steps[6].updates[0].content.text == "Sandbox: \($s), local backend; not made yet: the first approved tool call makes it.\nTools run in /home/clawtainer/proj there; paths shown to you are under /srv/proj.\n"'
	upd '.steps[7].updates[0].content.text == "/sandbox takes no input.\n"'
	# an unknown command is the model's, with the model the command chose
	upd '.steps[8].result.stopReason == "end_turn" and ([.steps[8].updates[] | select(.sessionUpdate == "agent_message_chunk") | .content.text] == ["model saw it"])'
	# commands are no part of the conversation: the replay holds only the model's exchange
	upd '[.steps[10].updates[] | [.sessionUpdate, .content.text]] == [["user_message_chunk","/nosuch thing"],["agent_message_chunk","model saw it"]]'
	run jq -s -c '[length, .[0].body.model, .[0].body.messages[-1].content]' "$STUB_DIR/requests.jsonl"
	[ "$output" = '[1,"other-model","/nosuch thing"]' ]
	# the basic toolset has no plan tool
	jq -s -e '.[0].body.tools | map(.function.name) | index("write_todos") == null' "$STUB_DIR/requests.jsonl"
	# without -models there is no choice to offer: no /model, and "/model x" is the model's
	stop_server
	export OPENAI_MODEL=fake-eliza
	start_server
	steps '[{"new":{}},{"commands":1},{"prompt":"/model x"}]'
	assert_status 0
	upd '[.commands[0].update.availableCommands[].name] == ["mode","sandbox"]'
	upd '.steps[2].updates[-1].content.text == "What do you think it means when you say '"'/model x'"'?"'
}

@test "an MCP tool call given up on is cancelled at its server: notifications/cancelled with the request's id, on session/cancel and on -tool-timeout" {
	{
		stub_call c1 mcp__echo__hang '{}'
		stub_call c2 mcp__echo__cancels '{}'
		stub_text "done"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server
	jq -n --rawfile py "$SBX_TOP/tests/acp/mcp-echo.py" \
		'[{"name":"echo","command":"/usr/bin/python3","args":["-c",$py],"env":[]}]' >"$BATS_TEST_TMPDIR/mcp.json"
	drive cancel --prompt "hang" --cancel-on tool --mcp-servers "$BATS_TEST_TMPDIR/mcp.json"
	assert_status 0
	upd '.stop == "cancelled" and .again == "end_turn"'
	# the server, asked afterwards in the same session, saw the call and then its cancellation
	seen='[.updates[] | select(.sessionUpdate == "tool_call_update" and .status == "completed")][-1].content[0].content.text | fromjson'
	upd "$seen"' | (.hung | length) == 1 and .cancelled == [{"requestId":.hung[0],"reason":"cancelled by the user"}]'
	stop_server
	stop_stub
	rm -r "$STUB_DIR"
	# a call that outlives -tool-timeout is cancelled too, and the turn goes on
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server -tool-timeout 1s
	jq -n --slurpfile m "$BATS_TEST_TMPDIR/mcp.json" '[{"new":{"mcpServers":$m[0]}},{"answer":"allow-once"},{"prompt":"hang"}]' >"$BATS_TEST_TMPDIR/steps.json"
	drive steps --steps "$BATS_TEST_TMPDIR/steps.json"
	assert_status 0
	final='[.steps[2].updates[] | select(.sessionUpdate == "tool_call_update" and .status != "in_progress")]'
	upd "$final"' | .[0].status == "failed" and (.[0].content[0].content.text | test("no answer in time"))'
	upd "$final"' | .[1].content[0].content.text | fromjson | (.hung | length) == 1 and .cancelled == [{"requestId":.hung[0],"reason":"timed out"}]'
	upd '.steps[2].result.stopReason == "end_turn"'
}

@test "plan: -toolset geminicli offers write_todos, answered by the server as a plan update (no sandbox, never asked), checked as gemini-cli does, replayed" {
	{
		stub_call c1 write_todos '{"todos":[{"description":"Read the code","status":"completed"},{"description":"Fix the bug","status":"in_progress"},{"description":"Update the docs","status":"cancelled"},{"description":"Run the tests","status":"blocked"}]}'
		stub_call c2 write_todos '{"todos":[{"description":"a","status":"in_progress"},{"description":"b","status":"in_progress"}]}'
		stub_call c3 write_todos '{"todos":[]}'
		stub_text "planned"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	start_server -toolset geminicli
	steps '[{"new":{"cwd":"/srv/proj"}},{"prompt":"plan it"},{"connect":{}},{"load":{}}]'
	assert_status 0
	upd '(.steps[1].permissions | length) == 0 and .steps[1].result.stopReason == "end_turn"'
	upd '[.steps[1].updates[] | select(.sessionUpdate == "tool_call") | [.title, .kind]] == [["Plan 4 steps","think"],["Plan 2 steps","think"],["Clear the plan","think"]]'
	plans='[.steps[1].updates[] | select(.sessionUpdate == "plan") | .entries]'
	upd "$plans"' == [[
		{"content":"Read the code","priority":"medium","status":"completed"},
		{"content":"Fix the bug","priority":"medium","status":"in_progress"},
		{"content":"Update the docs (cancelled)","priority":"medium","status":"completed"},
		{"content":"Run the tests (blocked)","priority":"medium","status":"pending"}], []]'
	final='[.steps[1].updates[] | select(.sessionUpdate == "tool_call_update" and .status != "in_progress")]'
	upd "$final"' | map(.status) == ["completed","failed","completed"]'
	upd "$final"' | .[0].content[0].content.text == "Successfully updated the todo list. The current list is now:\n1. [completed] Read the code\n2. [in_progress] Fix the bug\n3. [cancelled] Update the docs\n4. [blocked] Run the tests"'
	upd "$final"' | .[1].content[0].content.text == "Error calling tool \"write_todos\": Invalid parameters: Only one task can be \"in_progress\" at a time."'
	upd "$final"' | .[2].content[0].content.text == "Successfully cleared the todo list."'
	# the plan is sent between the call's start and its end
	upd '[.steps[1].updates[] | .sessionUpdate] | index("plan") > index("tool_call")'
	# the model was offered it and got gemini-cli's answer
	jq -s -e '.[0].body.tools | map(.function.name) | index("write_todos") and index("run_shell_command")' "$STUB_DIR/requests.jsonl"
	jq -s -e '.[0].body.tools[] | select(.function.name == "write_todos") | .function.parameters.properties.todos.items.properties.status.enum == ["pending","in_progress","completed","cancelled","blocked"]' "$STUB_DIR/requests.jsonl"
	# nothing ran in a sandbox: none was made
	[ -z "$(sbx-list)" ]
	# session/load replays the calls and the plans they sent, in order
	upd '[.steps[3].updates[] | select(.sessionUpdate == "plan" or .sessionUpdate == "tool_call") | .sessionUpdate] == ["tool_call","plan","tool_call","tool_call","plan"]'
	upd '[.steps[3].updates[] | select(.sessionUpdate == "plan") | .entries] == '"$plans"
}
