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
	kts_start -ready-delay 100ms -serviceaccount "$BATS_TEST_TMPDIR/sa"
}

teardown() {
	stop_server
	kts_stop
	teardown_sbx_env
}

sandbox_names() {
	kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes" |
		sed '$d' | jq -r '.items[].metadata.name'
}

@test "acp-server -backend kubernetes: an approved run: uname -a turn runs in a Sandbox" {
	export OPENAI_MODEL=fake-eliza
	start_acp_server -backend kubernetes
	grep -q 'backend="kubernetes"' "$ACP_LOG"
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "run: uname -a"
	assert_status 0
	assert_contains "Connected to ACP agent (protocol v1)"
	assert_contains '[tool: execute] Run `uname -a` (pending)'
	assert_contains '[tool] Run `uname -a` → completed'
	assert_contains "The tool told me:"
	assert_contains "Linux"
	assert_contains "[turn ended: end_turn]"
	# the command ran through the API server: a Sandbox named after the session, and an exec
	sid=$(sandbox_names)
	[[ "$sid" =~ ^acp[0-9a-f]{32}$ ]]
	kts_ctl requests | jq -s -e --arg s "$sid" \
		'any(.[]; .method == "GET" and .path == "/api/v1/namespaces/default/pods/\($s)/exec" and .status == 101)'
	# SIGTERM deletes the Sandbox the server created; the history stays
	stop_server
	[ "$ACP_STATUS" -eq 0 ]
	[ -z "$(sandbox_names)" ]
	jq -s -e 'map(.role) == ["system","user","assistant","tool","assistant"]' \
		"$HOME/.local/sandboxed-tools/$sid/sessions/latest.jsonl"
}

@test "acp-server as the Deployment runs it: in-cluster service account, env from the manifest, no -backend" {
	# the environment the manifest gives the container (SANDBOX_*), the Secret's OPENAI_MODEL,
	# and what the kubelet provides: KUBERNETES_SERVICE_* and the service account files
	export OPENAI_MODEL=fake-eliza SANDBOX_NAMESPACE=default SANDBOX_BACKEND=kubernetes
	export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=${KTS_URL##*:}
	export SBX_KUBE_SA_DIR=$BATS_TEST_TMPDIR/sa
	grep -q 'name: SANDBOX_BACKEND' "$SBX_TOP/$MANIFEST"
	grep -A1 'name: SANDBOX_BACKEND' "$SBX_TOP/$MANIFEST" | grep -q 'value: kubernetes'
	unset KUBECONFIG
	start_acp_server
	grep -q 'backend="kubernetes"' "$ACP_LOG"
	run acp-client -addr "$ACP_ADDR" -yolo -prompt "run: uname -a"
	assert_status 0
	assert_contains '[tool] Run `uname -a` → completed'
	assert_contains "Linux"
	[[ "$(sandbox_names)" =~ ^acp[0-9a-f]{32}$ ]]
	# the service account's token was the credential
	[ "$(cat "$SBX_KUBE_SA_DIR/token")" = "$KTS_TOKEN" ]
	stop_server
	[ -z "$(sandbox_names)" ]
}

# The manifest as its header says to deploy it: IMAGE substituted by envsubst.
manifest() {
	IMAGE=registry.example/sandboxed-tools/acp-server:test envsubst <"$SBX_TOP/$MANIFEST"
}

@test "the deployment manifest: kubectl apply --dry-run=server, then apply and get accept every object" {
	kubectl=$("$SBX_TOP/tests/kube/get-kubectl")
	manifest >"$BATS_TEST_TMPDIR/m.yaml"
	grep -q 'image: registry.example/sandboxed-tools/acp-server:test' "$BATS_TEST_TMPDIR/m.yaml"
	objs='serviceaccount/sandboxed-tools-acp-server role.rbac.authorization.k8s.io/sandboxed-tools-acp-server rolebinding.rbac.authorization.k8s.io/sandboxed-tools-acp-server deployment.apps/sandboxed-tools-acp-server'

	run --separate-stderr timeout 120 "$kubectl" apply --dry-run=server -f "$BATS_TEST_TMPDIR/m.yaml"
	assert_status 0
	for o in $objs; do assert_contains "$o created (server dry run)"; done
	[ "${#lines[@]}" -eq 4 ]
	run timeout 60 "$kubectl" get serviceaccount,role,rolebinding,deployment -o name
	assert_status 0
	[ -z "$output" ]		# a dry run stores nothing

	run timeout 120 "$kubectl" apply -f "$BATS_TEST_TMPDIR/m.yaml"
	assert_status 0
	for o in $objs; do assert_contains "$o created"; done
	run timeout 60 "$kubectl" get serviceaccount,role,rolebinding,deployment -o name
	assert_status 0
	[ "$output" = "$(printf '%s\n' $objs)" ]
	run timeout 60 "$kubectl" get deployment sandboxed-tools-acp-server -o json
	assert_status 0
	assert_json '.spec.template.spec.serviceAccountName == "sandboxed-tools-acp-server"'
	assert_json '.spec.template.spec.containers[0].image == "registry.example/sandboxed-tools/acp-server:test"'
	run timeout 60 "$kubectl" get rolebinding sandboxed-tools-acp-server -o json
	assert_json '.roleRef == {"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"sandboxed-tools-acp-server"}'
	run timeout 60 "$kubectl" get role sandboxed-tools-acp-server -o json
	assert_json '.rules[0].resources == ["sandboxes"] and (.rules[2].resources == ["pods/exec"])'
	# only the verbs sbx uses
	assert_json '[.rules[] | {(.resources[0]): .verbs}] | add == {"sandboxes": ["create","get","watch","update","patch","delete"], "pods": ["get"], "pods/exec": ["create","get"], "networkpolicies": ["create","get","delete"]}'
	# the Deployment's pod meets Pod Security "restricted": as a Pod it passes admission in a
	# namespace enforcing it, and without its seccompProfile it would not
	run timeout 60 "$kubectl" label namespace default pod-security.kubernetes.io/enforce=restricted
	assert_status 0
	timeout 60 "$kubectl" get deployment sandboxed-tools-acp-server -o json |
		jq '{apiVersion: "v1", kind: "Pod", metadata: {name: "acp-pod"}, spec: .spec.template.spec}' >"$BATS_TEST_TMPDIR/pod.json"
	jq -e '.spec.securityContext.seccompProfile == {"type": "RuntimeDefault"}' "$BATS_TEST_TMPDIR/pod.json"
	run timeout 60 "$kubectl" apply --dry-run=server -f "$BATS_TEST_TMPDIR/pod.json"
	assert_status 0
	assert_contains "pod/acp-pod created (server dry run)"
	jq 'del(.spec.securityContext.seccompProfile)' "$BATS_TEST_TMPDIR/pod.json" >"$BATS_TEST_TMPDIR/bad.json"
	run timeout 60 "$kubectl" apply --dry-run=server -f "$BATS_TEST_TMPDIR/bad.json"
	[ "$status" -ne 0 ]
	assert_contains 'pods "acp-pod" is forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or container "acp-server" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
	run timeout 60 "$kubectl" label namespace default pod-security.kubernetes.io/enforce-
	assert_status 0
	# the Secret the Deployment reads its environment from (the test server takes JSON, not
	# the protobuf that `kubectl create secret` sends to a real cluster)
	run bash -c "timeout 60 '$kubectl' -n default create secret generic sandboxed-tools-acp-server \
		--from-literal=OPENAI_MODEL=fake-eliza --dry-run=client -o yaml | timeout 60 '$kubectl' apply -f -"
	assert_status 0
	assert_contains "secret/sandboxed-tools-acp-server created"
	run timeout 60 "$kubectl" get secret sandboxed-tools-acp-server -o json
	assert_json '.data.OPENAI_MODEL | @base64d == "fake-eliza"'
	grep -q 'secretRef:' "$BATS_TEST_TMPDIR/m.yaml"
	# applying again changes nothing
	run timeout 120 "$kubectl" apply -f "$BATS_TEST_TMPDIR/m.yaml"
	assert_status 0
	for o in $objs; do assert_contains "$o unchanged"; done
	# and deleting the manifest removes every object
	run timeout 120 "$kubectl" delete -f "$BATS_TEST_TMPDIR/m.yaml"
	assert_status 0
	[ "${#lines[@]}" -eq 4 ]
	run timeout 60 "$kubectl" get serviceaccount,role,rolebinding,deployment -o name
	assert_status 0
	[ -z "$output" ]
}

@test "the manifest check can fail: a Deployment whose template labels miss its selector is refused" {
	kubectl=$("$SBX_TOP/tests/kube/get-kubectl")
	manifest | sed 's/^        app: sandboxed-tools-acp-server$/        app: other/' >"$BATS_TEST_TMPDIR/bad.yaml"
	run timeout 120 "$kubectl" apply --dry-run=server -f "$BATS_TEST_TMPDIR/bad.yaml"
	[ "$status" -ne 0 ]
	assert_contains 'serviceaccount/sandboxed-tools-acp-server created (server dry run)'
	assert_contains 'The Deployment "sandboxed-tools-acp-server" is invalid: spec.template.metadata.labels: Invalid value: '
	assert_contains '`selector` does not match template `labels`'
	# an unknown kind is not silently accepted either
	printf 'apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\n' >"$BATS_TEST_TMPDIR/ss.yaml"
	run timeout 120 "$kubectl" apply --validate=false --dry-run=server -f "$BATS_TEST_TMPDIR/ss.yaml"
	[ "$status" -ne 0 ]
	assert_contains 'no matches for kind "StatefulSet" in version "apps/v1"'
}
