#!/usr/bin/env bats
# agent-loop-kube.bats — agent-loop on -backend kubernetes against scripts/kube-test-server
# (issue 6: the example works on both backends): the upstream example session end to end
# (write, /exit, Sandbox deleted, resume, read from the backup in a fresh Sandbox), expiry
# mid-session, and the automatic backend choice from KUBECONFIG. The LLM is fake-eliza.

bats_require_minimum_version 1.5.0
load helpers
load agent
load kube/server

RULE=$(printf '=%.0s' {1..80})

setup() {
	setup_sbx_env
	kts_start -ready-delay 100ms
}

teardown() {
	kts_stop
	teardown_sbx_env
}

# The Sandbox object named $1 in the default namespace, as the server has it (404 → absent).
sandbox_status() {
	kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes/$1" | tail -n 1
}

# no_sandbox_object NAME: the API server has no Sandbox object NAME (404).
no_sandbox_object() {
	[ "$(sandbox_status "$1")" = 404 ]
}

@test "kubernetes: the upstream example session end to end: write, exit, resume, read from the backup" {
	run eliza -backend kubernetes -session demo <<'EOF'
run: sh -c 'echo Hello from Sandbox > ~/greeting.txt'
/exit
EOF
	assert_status 0
	[ "${lines[3]}" = "Sandbox Backend: kubernetes (selected with -backend)" ]
	assert_contains "agent-loop: launching sandbox for tool execution..."
	assert_contains 'tool run_command({"command":"sh -c '\''echo Hello from Sandbox > ~/greeting.txt'\''"}): completed'
	assert_contains "exit_code: 0"
	assert_contains "agent-loop: saved filesystem state to new backup backup=\"$HOME/.local/sandboxed-tools/demo/fs/backup-"
	no_sandbox_object demo			# deleted on /exit
	ls "$HOME"/.local/sandboxed-tools/demo/fs/backup-*.tar.gz
	jq -s -e 'map(.role) == ["system","user","assistant","tool","assistant"]' "$(hist demo)"
	jq -s -e '.[3].content == "stdout:\n\nstderr:\n\nexit_code: 0"' "$(hist demo)"
	# the Sandbox really went through the API server
	kts_ctl requests | jq -s -e 'map(select(.method == "POST" and (.path | endswith("/sandboxes")))) | length == 1'
	kts_ctl requests | jq -s -e 'map(select(.method == "DELETE" and (.path | endswith("/sandboxes/demo")))) | length >= 1'
	kts_ctl clear-requests

	run --separate-stderr eliza -backend kubernetes -session demo <<'EOF'
run: cat ~/greeting.txt
EOF
	assert_status 0
	[ "${lines[0]}" = "$RULE" ]
	[ "${lines[1]}" = 'Resumed session "demo" with 5 messages in history:' ]
	[ "${lines[2]}" = "$RULE" ]
	[ "${lines[3]}" = "User> run: sh -c 'echo Hello from Sandbox > ~/greeting.txt'" ]
	[ "${lines[4]}" = "Agent> The tool told me:" ]
	[[ "$stderr" == *"restoring filesystem to sandbox..."* ]]
	[[ "$stderr" == *"restoring filesystem from latest backup backup=\"$HOME/.local/sandboxed-tools/demo/fs/backup-"* ]]
	jq -s -e '.[-2].content == "stdout:\nHello from Sandbox\n\nstderr:\n\nexit_code: 0"' "$(hist demo)"
	# a fresh Sandbox was created for the resumed session, and deleted at EOF
	kts_ctl requests | jq -s -e 'map(select(.method == "POST" and (.path | endswith("/sandboxes")))) | length == 1'
	no_sandbox_object demo
}

@test "kubernetes: a Sandbox expired mid-session is recreated and restored on the next tool call" {
	agent_fed -backend kubernetes -session exp
	echo "run: sh -c 'echo kept > ~/kept.txt'" >&4
	wait_snapshot
	[ "$(sandbox_status exp)" = 200 ]
	kts_ctl expire default/exp
	wait_until no_sandbox_object exp		# agent-loop asks for policy Delete, as upstream does
	echo "run: cat ~/kept.txt" >&4
	echo "/exit" >&4
	fed_end
	run cat "$BATS_TEST_TMPDIR/err"
	assert_contains "Active sandbox was deleted or expired, will recreate it"
	[ "$(grep -c 'launching sandbox for tool execution' "$BATS_TEST_TMPDIR/err")" -eq 2 ]
	assert_contains "restoring filesystem from latest backup"
	jq -s -e '.[-2].content == "stdout:\nkept\n\nstderr:\n\nexit_code: 0"' "$(hist exp)"
	no_sandbox_object exp
}

@test "kubernetes: a 429 on the TTL update is waited out; the session keeps its Sandbox" {
	kts_ctl faults '{"fail_requests": 1, "fail_status": 429, "fail_match": "^PATCH .*/sandboxes/thr"}' >/dev/null
	run eliza -backend kubernetes -session thr <<'EOF'
run: echo one
run: echo two
EOF
	assert_status 0
	[ "$(grep -c 'will recreate it' <<<"$output")" -eq 0 ]
	[ "$(grep -c 'launching sandbox for tool execution' <<<"$output")" -eq 1 ]
	jq -s -e 'map(select(.role == "tool") | .content) == ["stdout:\none\n\nstderr:\n\nexit_code: 0", "stdout:\ntwo\n\nstderr:\n\nexit_code: 0"]' "$(hist thr)"
	kts_ctl requests | jq -s -e 'map(select(.status == 429)) | length == 1'
}

@test "kubernetes: with KUBECONFIG set and no -backend the banner says kubernetes; tools run there" {
	run eliza -session auto <<'EOF'
run: uname -n
EOF
	assert_status 0
	[ "${lines[3]}" = "Sandbox Backend: kubernetes (KUBECONFIG names a configuration)" ]
	assert_contains "exit_code: 0"
	kts_ctl requests | jq -s -e 'map(select(.method == "POST" and (.path | endswith("/sandboxes")))) | length == 1'
	# and SANDBOX_BACKEND=local still overrides the configuration
	SANDBOX_BACKEND=local run eliza -session auto2 </dev/null
	assert_status 0
	[[ "${lines[3]}" == "Sandbox Backend: local ("* ]]
}

@test "kubernetes: a shortened -ttl expires the Sandbox mid-session; the next call recreates and restores" {
	agent_fed -backend kubernetes -session ttl -ttl 3s
	echo "run: sh -c 'echo kept > ~/kept.txt'" >&4
	wait_snapshot
	# the Sandbox carries the shortened lifetime; the server's controller acts on it
	kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes/ttl" | sed '$d' |
		jq -e '.spec.shutdownTime != null' >/dev/null
	wait_until no_sandbox_object ttl
	echo "run: cat ~/kept.txt" >&4
	echo "/exit" >&4
	fed_end
	grep -q "Active sandbox was deleted or expired, will recreate it" "$BATS_TEST_TMPDIR/err"
	jq -s -e '.[-2].content == "stdout:\nkept\n\nstderr:\n\nexit_code: 0"' "$(hist ttl)"
}

@test "kubernetes: a failing command keeps its exit code; a tool timeout kills the remote process tree" {
	run eliza -backend kubernetes -session fail <<<'run: echo oops >&2; exit 3'
	assert_status 0
	jq -s -e '.[3].content == "stdout:\n\nstderr:\noops\n\nexit_code: 3"' "$(hist fail)"
	run eliza -backend kubernetes -session slow -tool-timeout 1s <<<"run: sh -c \"sleep 7391.$$ & sleep 7391.$$; echo never\""
	assert_status 0
	assert_contains 'tool "run_command" timed out after 1s'
	jq -s -e '.[3].content == "Error calling tool \"run_command\": tool \"run_command\" timed out after 1s: context deadline exceeded"' "$(hist slow)"
	wait_until ! pgrep -f -x "sleep 7391.$$"
	no_sandbox_object slow
}
