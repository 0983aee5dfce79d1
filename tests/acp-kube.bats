#!/usr/bin/env bats
# acp-kube.bats — issue 8 on Kubernetes, against scripts/kube-test-server: acp-server with
# -backend kubernetes runs an approved tool turn in a Sandbox (driven by acp-client -yolo),
# and the deployment manifest images/acp-server/acp-server.yaml is accepted by the API server
# (kubectl v1.35 from tests/kube/get-kubectl: server-side dry run, then apply and get).

bats_require_minimum_version 1.5.0
load helpers
load acp/common
load kube/server

MANIFEST=images/acp-server/acp-server.yaml

setup() {
	setup_sbx_env
	ACP_PID=
	STUB_PID=
	kts_start -ready-delay 100ms
}

teardown() {
	stop_server
	kts_stop
	teardown_sbx_env
}

# kube_acp_server ARGS...: acp-server on 127.0.0.1 at a free port on the kubernetes backend;
# sets ACP_ADDR, ACP_PID, ACP_LOG as start_server (tests/acp/common.bash) does.
kube_acp_server() {
	local i
	ACP_LOG="$BATS_TEST_TMPDIR/acp-server.log"
	: >"$ACP_LOG"
	acp-server -listen 127.0.0.1:0 -backend kubernetes "$@" 2>"$ACP_LOG" 3>&- &
	ACP_PID=$!
	for i in $(seq 200); do
		ACP_ADDR=$(sed -n 's/.*serving ACP address="\([^"]*\)".*/\1/p' "$ACP_LOG")
		[ -n "$ACP_ADDR" ] && return 0
		kill -0 "$ACP_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$ACP_LOG" >&2
	return 1
}

sandbox_names() {
	kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes" |
		sed '$d' | jq -r '.items[].metadata.name'
}

@test "acp-server -backend kubernetes: an approved run: uname -a turn runs in a Sandbox" {
	export OPENAI_MODEL=fake-eliza
	kube_acp_server
	grep -q 'backend="kubernetes"' "$ACP_LOG"
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "run: uname -a"
	assert_status 0
	assert_contains "Connected to ACP agent (protocol v1)"
	assert_contains '[tool: execute] run_command({"command":"uname -a"}) (pending)'
	assert_contains '[tool] run_command({"command":"uname -a"}) → completed'
	assert_contains "The tool told me:"
	assert_contains "Linux"
	assert_contains "[turn ended: end_turn]"
	# the command ran through the API server: a Sandbox named after the session, and an exec
	sid=$(sandbox_names)
	[[ "$sid" =~ ^acp[0-9a-f]{16}$ ]]
	kts_ctl requests | jq -s -e --arg s "$sid" \
		'any(.[]; .method == "GET" and .path == "/api/v1/namespaces/default/pods/\($s)/exec" and .status == 101)'
	# SIGTERM deletes the Sandbox the server created; the history stays
	stop_server
	[ "$ACP_STATUS" -eq 0 ]
	[ -z "$(sandbox_names)" ]
	jq -s -e 'map(.role) == ["system","user","assistant","tool","assistant"]' \
		"$HOME/.local/sandboxed-tools/$sid/sessions/latest.jsonl"
}
