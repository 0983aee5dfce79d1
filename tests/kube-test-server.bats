#!/usr/bin/env bats
# scripts/kube-test-server against real clients: kubectl v1.35 (npm), Debian's python3-kubernetes,
# a bare WebSocket client, curl. If kubectl and the server disagree, the server is wrong.

load helpers
load kube/server

# Bounded waits for state changes (kubectl wait / watch timeouts), not assertions on time.
WAIT=60s

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	setup_sbx_env
	kts_kubectl
	KUBE="$BATS_TEST_DIRNAME/kube"
}

teardown() {
	kts_stop
	teardown_sbx_env
}

# manifest NAME [POLICY [SHUTDOWN_TIME [EXTRA_SPEC_YAML]]]: a Sandbox as upstream makes it.
manifest() {
	local f="$BATS_TEST_TMPDIR/$1.yaml"
	cat >"$f" <<-EOF
	apiVersion: agents.x-k8s.io/v1beta1
	kind: Sandbox
	metadata:
	  name: $1
	  labels: {app.kubernetes.io/managed-by: sbx}
	spec:
	  podTemplate:
	    spec:
	      automountServiceAccountToken: false
	      restartPolicy: Never
	      containers:
	      - name: sandbox
	        image: debian:bookworm-slim
	        command: [sleep, infinity]
	        env: [{name: HOME, value: /home/tester}]
	        volumeMounts: [{name: home, mountPath: /home/tester}]
	      volumes: [{name: home, emptyDir: {}}]
	  shutdownPolicy: ${2:-Delete}
	EOF
	[ -z "${3:-}" ] || echo "  shutdownTime: \"$3\"" >>"$f"
	[ -z "${4:-}" ] || echo "  $4" >>"$f"
	echo "$f"
}

# ready NAME: applies the manifest and waits (bounded) for Ready=True.
ready() {
	k apply -f "$(manifest "$1" "${2:-Delete}")" >/dev/null
	k wait --for=condition=Ready "sandbox/$1" --timeout=$WAIT >/dev/null
}

# local_sandboxes: names of the local sandboxes (sbx mode) or sandbox directories (subprocess).
local_sandboxes() {
	if [ "$(kts_exec_mode)" = sbx ]; then
		kts_local sbx-list | jq -r .name
	fi
}

# assert_jsonl EXPR: jq -s EXPR against $output read as a stream of JSON documents.
assert_jsonl() {
	if ! printf '%s' "$output" | jq -s -e "$1" >/dev/null; then
		echo "jq -s assertion failed: $1" >&2
		echo "output: $output" >&2
		return 1
	fi
}

# no_local_sandboxes: waits (bounded) until no local sandbox is left (deletion is
# asynchronous, as a pod's termination is); fails naming those still there.
none_local() { [ -z "$(local_sandboxes)" ]; }
no_local_sandboxes() { wait_until none_local || { local_sandboxes >&2; return 1; }; }

http_status() { printf '%s\n' "$output" | tail -n 1; }
http_body() { printf '%s\n' "$output" | sed '$d'; }

@test "the README's example runs as written (from the repository root, programs not on PATH)" {
	cd "$SBX_TOP"
	kc="$BATS_TEST_TMPDIR/kts.yaml"
	env -u SBX_BIN PATH=/usr/bin:/bin scripts/kube-test-server -kubeconfig "$kc" \
		>"$BATS_TEST_TMPDIR/kts.out" 2>&1 3>&- &
	KTS_PID=$!
	wait_until -t "$KTS_START_SECONDS" -p "$KTS_PID" test -s "$kc"
	export KUBECONFIG=$kc
	run k apply -f tests/kube/demo-sandbox.yaml
	assert_contains "sandbox.agents.x-k8s.io/demo created"
	k wait --for=condition=Ready sandbox/demo --timeout=$WAIT
	run bash -c "echo hi | '$KUBECTL' exec -i demo -c sandbox -- cat"
	[ "$output" = hi ]
	kts_stop
	[ ! -e "$kc" ]
}

@test "starts on 127.0.0.1, prints its address and writes a private kubeconfig" {
	kts_start
	run cat "$BATS_TEST_TMPDIR/kts.out"
	assert_json '.server | test("^https://127\\.0\\.0\\.1:[0-9]+$")'
	assert_json ".pid == $KTS_PID"
	assert_json ".exec_mode == \"$(kts_exec_mode)\""
	[ "$(stat -c %a "$KUBECONFIG")" = 600 ]
	run k config view --minify -o json
	assert_status 0
	assert_json ".clusters[0].cluster.server == \"$KTS_URL\""
	assert_json '.contexts[0].context.namespace == "default"'
	run k version -o json
	assert_status 0
	assert_json '.serverVersion.minor == "35"'
}

@test "-h prints usage; bad options and a missing CRD are clear errors" {
	run "$SBX_TOP/scripts/kube-test-server" -h
	assert_status 0
	assert_contains "-kubeconfig FILE"
	assert_contains "-exec-mode {sbx,pod,subprocess}"
	run "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$BATS_TEST_TMPDIR/kc" -bogus
	[ "$status" -ne 0 ]
	assert_contains "unrecognized arguments: -bogus"
	run "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$BATS_TEST_TMPDIR/kc" -ready-delay soon
	[ "$status" -ne 0 ]
	assert_contains "invalid duration 'soon'"
	SBX_SANDBOX_CRD=$BATS_TEST_TMPDIR/none.yaml run "$SBX_TOP/scripts/kube-test-server" \
		-kubeconfig "$BATS_TEST_TMPDIR/kc"
	assert_status 111
	assert_contains "none.yaml"
	[ ! -e "$BATS_TEST_TMPDIR/kc" ]
}

@test "401 without a token or with a wrong one; a client certificate is accepted" {
	kts_start
	run curl -sS --cacert "$KTS_CA" -w '\n%{http_code}\n' "$KTS_URL/api"
	[ "$(http_status)" = 401 ]
	output=$(http_body) assert_json '.kind == "Status" and .reason == "Unauthorized" and .code == 401'
	run curl -sS --cacert "$KTS_CA" -H "Authorization: Bearer wrong" -w '\n%{http_code}\n' "$KTS_URL/api"
	[ "$(http_status)" = 401 ]
	run k --token wrong get sandboxes
	[ "$status" -ne 0 ]
	assert_contains "error: You must be logged in to the server (the server has asked for the client to provide credentials)"
	kts_stop
	kts_start -auth cert
	run k get sandboxes
	assert_status 0
	assert_contains "No resources found"
	grep -q client-certificate-data "$KUBECONFIG"
	! grep -q "token:" "$KUBECONFIG"
}

@test "knob: tokens replaces the accepted bearer tokens (rotation), /_test keeps the -token one" {
	kts_start -token first
	run k get sandboxes
	assert_status 0
	kts_ctl faults '{"tokens": ["second"]}' >/dev/null
	run k get sandboxes
	[ "$status" -ne 0 ]
	assert_contains "You must be logged in to the server"
	run k --token second get sandboxes
	assert_status 0
	kts_ctl reset >/dev/null
	run k get sandboxes
	assert_status 0
}

@test "-serviceaccount DIR: in-cluster configuration works with python3-kubernetes" {
	kts_start -serviceaccount "$BATS_TEST_TMPDIR/sa" -namespace team1 -token satoken
	[ "$(cat "$BATS_TEST_TMPDIR/sa/token")" = satoken ]
	[ "$(cat "$BATS_TEST_TMPDIR/sa/namespace")" = team1 ]
	cmp "$BATS_TEST_TMPDIR/sa/ca.crt" "$KTS_CA"
	port=${KTS_URL##*:}
	KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port \
		PYCLIENT_SA_DIR=$BATS_TEST_TMPDIR/sa run "$KUBE/pyclient" create incl
	assert_status 0
	run k get sandboxes -n team1 -o name
	[ "$output" = sandbox.agents.x-k8s.io/incl ]
}

@test "kubectl: apply, get, apply again, delete a Sandbox" {
	kts_start
	f=$(manifest demo)
	run k apply -f "$f"
	assert_status 0
	assert_contains "sandbox.agents.x-k8s.io/demo created"
	run k wait --for=condition=Ready sandbox/demo --timeout=$WAIT
	assert_status 0
	run k get sandboxes
	assert_status 0
	assert_contains "READY"
	[[ "$output" =~ demo\ +True\ +DependenciesReady ]]
	run k get sandbox demo -o json
	assert_json '.spec.shutdownPolicy == "Delete" and .metadata.generation == 1'
	assert_json '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] | fromjson | .metadata.name == "demo"'
	run k apply -f "$f"
	assert_contains "sandbox.agents.x-k8s.io/demo unchanged"
	sed -i 's/shutdownPolicy: Delete/shutdownPolicy: Retain/' "$f"
	run k apply -f "$f"
	assert_contains "sandbox.agents.x-k8s.io/demo configured"
	run k get sandbox demo -o json
	assert_json '.spec.shutdownPolicy == "Retain" and .metadata.generation == 2'
	run k get pods
	[[ "$output" =~ demo\ +1/1\ +Running ]]
	run k delete sandbox demo
	assert_status 0
	assert_contains '"demo" deleted'
	run k get sandboxes
	assert_contains "No resources found"
	no_local_sandboxes
}

@test "kubectl exec -i: stdin over WebSocket, stdout and stderr apart, exit status" {
	kts_start
	ready demo
	run bash -c "printf 'line1\nline2\n' | '$KUBECTL' exec -i demo -c sandbox -- cat"
	assert_status 0
	[ "$output" = "$(printf 'line1\nline2')" ]
	run bash -c "'$KUBECTL' exec demo -c sandbox -- sh -c 'echo out; echo err >&2; exit 3' 2>'$BATS_TEST_TMPDIR/err'"
	assert_status 3
	[ "$output" = out ]
	grep -qx err "$BATS_TEST_TMPDIR/err"
	grep -q "command terminated with exit code 3" "$BATS_TEST_TMPDIR/err"
	run k exec demo -c sandbox -- sh -c 'echo $HOME'
	assert_status 0
	[ "$output" = /home/tester ]
	# a 100 kB argument travels in the URL
	long=$(head -c 100000 /dev/zero | tr '\0' x)
	run k exec demo -c sandbox -- sh -c 'printf %s "$1" | wc -c' sh "$long"
	[ "$output" = 100000 ]
	# kubectl speaks v5 first and half-closes stdin with [255, 0].
	run kts_ctl requests
	assert_contains '"Sec-WebSocket-Protocol": "v5.channel.k8s.io'
}

@test "kubectl exec streams 20 MB in and out intact" {
	kts_start
	ready demo
	head -c 20000000 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	"$KUBECTL" exec -i demo -c sandbox -- cat <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	run bash -c "'$KUBECTL' exec demo -c sandbox -- head -c 20000000 /dev/zero | wc -c"
	[ "$output" = 20000000 ]
}

@test "exec runs inside the Sandbox's own sandbox, which keeps its files between execs" {
	kts_start
	ready demo
	k exec demo -c sandbox -- sh -c 'echo kept > "$HOME/f"'
	run k exec demo -c sandbox -- cat /home/tester/f
	assert_status 0
	[ "$output" = kept ]
	if [ "$(kts_exec_mode)" = sbx ]; then
		run kts_local sbx-list
		assert_json 'select(.name == "demo") | .ready'
		# the same sandbox through sbx-exec directly
		run kts_local sbx-exec -raw demo -- cat /home/tester/f
		[ "$output" = kept ]
		# the host's home is not visible inside
		run k exec demo -c sandbox -- ls "$HOME"
		[ "$status" -ne 0 ]
	fi
	k delete sandbox demo
	no_local_sandboxes
}

@test "python3-kubernetes: create, read, watch Ready, stream exec with stdin" {
	kts_start
	run "$KUBE/pyclient" create py1
	assert_status 0
	[ "$output" -gt 0 ]
	run "$KUBE/pyclient" wait-ready py1
	assert_status 0
	[ "$(printf '%s\n' "$output" | tail -n 1)" = "$(printf '%s\n' "$output" | grep ready$ | grep -v not-ready | tail -n 1)" ]
	run "$KUBE/pyclient" get py1
	assert_json '.metadata.name == "py1" and (.status.conditions[] | select(.type == "Ready") | .status) == "True"'
	run "$KUBE/pyclient" exec py1 "abc" sh -c 'head -c 3; echo; echo oops >&2; exit 7'
	assert_status 0
	assert_json '.stdout == "abc\n" and .stderr == "oops\n" and .exit_code == 7'
	run "$KUBE/pyclient" exec py1 "" true
	assert_json '.exit_code == 0'
}

@test "exec subprotocols v5, v4 and v4.base64 carry the same streams and status" {
	kts_start
	ready demo
	for p in v5.channel.k8s.io v4.channel.k8s.io v4.base64.channel.k8s.io; do
		run bash -c "echo hello | '$KUBE/wsexec' -protocol $p demo sh -c 'head -c 6; echo x >&2; exit 2'"
		assert_status 0
		assert_json ".protocol == \"$p\" and .stdout == \"hello\n\" and .stderr == \"x\n\""
		assert_json '.status.status == "Failure" and .status.reason == "NonZeroExitCode"'
		assert_json '.status.details.causes == [{"reason": "ExitCode", "message": "2"}]'
		assert_json '.status.message | startswith("command terminated with non-zero exit code")'
	done
	run bash -c "printf abc | '$KUBE/wsexec' demo cat"
	assert_json '.stdout == "abc" and .status == {"metadata": {}, "status": "Success"}'
	# v5 close: without [255, 0] cat never sees EOF, so the client's bound ends it
	run timeout 5 bash -c "printf abc | '$KUBE/wsexec' -no-close demo cat"
	[ "$status" -eq 124 ]
	run bash -c "echo | '$KUBE/wsexec' -protocol channel.k8s.io demo true"
	assert_json '.closed | contains("no supported subprotocol")'
}

@test "exec errors: missing pod 404, wrong container 400, no command 400, pending pod 400" {
	kts_start
	run bash -c "echo | '$KUBE/wsexec' nosuch true"
	assert_contains "HTTP 404"
	run k exec nosuch -c sandbox -- true
	[ "$status" -ne 0 ]
	assert_contains 'pods "nosuch" not found'
	ready demo
	run k exec demo -c other -- true
	[ "$status" -ne 0 ]
	assert_contains "container other is not valid for pod demo"
	run kts_curl -H "Connection: Upgrade" -H "Upgrade: websocket" \
		"$KTS_URL/api/v1/namespaces/default/pods/demo/exec?container=sandbox&stdout=true"
	[ "$(http_status)" = 400 ]
	assert_contains "you must specify at least 1 command"
	kts_ctl faults '{"never_ready": true}' >/dev/null
	k apply -f "$(manifest slow)" >/dev/null
	run k exec slow -c sandbox -- true
	[ "$status" -ne 0 ]
	assert_contains 'container not found ("sandbox")'
}

@test "PUT with a stale resourceVersion is 409 Conflict; with the current one it succeeds" {
	kts_start
	ready demo
	obj=$(k get sandbox demo -o json)
	rv=$(jq -r .metadata.resourceVersion <<<"$obj")
	url="$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/demo"
	t1=$(date -u -d '+10 min' +%Y-%m-%dT%H:%M:%SZ)
	run kts_curl -X PUT -H 'Content-Type: application/json' \
		--data "$(jq --arg t "$t1" '.spec.shutdownTime = $t' <<<"$obj")" "$url"
	[ "$(http_status)" = 200 ]
	output=$(http_body) assert_json ".spec.shutdownTime == \"$t1\" and (.metadata.resourceVersion | tonumber) > $rv"
	run kts_curl -X PUT -H 'Content-Type: application/json' \
		--data "$(jq '.spec.shutdownPolicy = "Retain"' <<<"$obj")" "$url"
	[ "$(http_status)" = 409 ]
	output=$(http_body) assert_json '.reason == "Conflict" and .code == 409 and .details.name == "demo"'
	assert_contains 'the object has been modified; please apply your changes to the latest version'
	# custom resources take no unconditional update
	run kts_curl -X PUT -H 'Content-Type: application/json' \
		--data "$(jq 'del(.metadata.resourceVersion)' <<<"$obj")" "$url"
	[ "$(http_status)" = 422 ]
	assert_contains 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update'
	run kts_curl -X POST -H 'Content-Type: application/json' --data "$(jq '.metadata.name = "copy"' <<<"$obj")" \
		"$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"
	[ "$(http_status)" = 400 ]
	assert_contains "resourceVersion should not be set on objects to be created"
	# status is a subresource: a PUT cannot change it
	run k get sandbox demo -o json
	assert_json '.spec.shutdownPolicy == "Delete" and (.status.conditions[0].status == "True")'
}

@test "a schema-invalid Sandbox is 422 Invalid with causes; kubectl shows the server's words" {
	kts_start
	run k apply -f "$(manifest bad Sometimes)"
	[ "$status" -ne 0 ]
	assert_contains 'The Sandbox "bad" is invalid: spec.shutdownPolicy: Unsupported value: "Sometimes": supported values: "Delete", "Retain"'
	url="$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"
	run kts_curl -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"x"},"spec":{"shutdownTime":"tomorrow","podTemplate":{"spec":{"containers":[{"image":"i"}]}}}}' "$url"
	[ "$(http_status)" = 422 ]
	output=$(http_body) assert_json '.reason == "Invalid" and .details.kind == "Sandbox"'
	assert_contains '"message":"Sandbox.agents.x-k8s.io \"x\" is invalid: ['
	assert_contains 'spec.shutdownTime: Invalid value: \"tomorrow\": spec.shutdownTime in body must be of type date-time'
	assert_contains 'spec.podTemplate.spec.containers[0].name: Required value'
	output=$(http_body) assert_json '[.details.causes[].field] | sort == ["spec.podTemplate.spec.containers[0].name", "spec.shutdownTime"]'
	output=$(http_body) assert_json '.details.causes[] | select(.field == "spec.podTemplate.spec.containers[0].name") | .reason == "FieldValueRequired"'
	run kts_curl -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"x"},"spec":{}}' "$url"
	[ "$(http_status)" = 422 ]
	assert_contains 'spec.podTemplate: Required value'
	run kts_curl -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"Not_OK"},"spec":{"podTemplate":{"spec":{"containers":[]}}}}' "$url"
	[ "$(http_status)" = 422 ]
	assert_contains 'metadata.name: Invalid value: \"Not_OK\"'
	run kts_curl -X POST -H 'Content-Type: application/json' \
		--data '{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"x"},"spec":{"podTemplate":{"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":"eighty"}]}]}}}}' "$url"
	[ "$(http_status)" = 422 ]
	assert_contains 'must be of type integer'
	run k get sandboxes
	assert_contains "No resources found"
}

@test "unknown fields: kubectl's Strict validation is a 400, otherwise a warning and pruned" {
	kts_start
	run k apply -f "$(manifest odd Delete '' 'color: blue')"
	[ "$status" -ne 0 ]
	assert_contains 'strict decoding error: unknown field "spec.color"'
	url="$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"
	run curl -sS -D "$BATS_TEST_TMPDIR/h" --cacert "$KTS_CA" -H "Authorization: Bearer $KTS_TOKEN" \
		-H 'Content-Type: application/json' -X POST \
		--data '{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"odd"},"spec":{"color":"blue","podTemplate":{"spec":{"containers":[{"name":"sandbox","image":"i"}]}}}}' "$url"
	assert_json '.metadata.name == "odd" and (.spec | has("color") | not)'
	grep -qi '^Warning: 299 - "unknown field \\"spec.color\\""' "$BATS_TEST_TMPDIR/h"
}

@test "a missing Sandbox is 404 metav1.Status; kubectl says NotFound" {
	kts_start
	run k get sandbox nosuch
	[ "$status" -ne 0 ]
	assert_contains 'Error from server (NotFound): sandboxes.agents.x-k8s.io "nosuch" not found'
	run kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/nosuch"
	[ "$(http_status)" = 404 ]
	output=$(http_body) assert_json '. == {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"sandboxes.agents.x-k8s.io \"nosuch\" not found","reason":"NotFound","details":{"name":"nosuch","group":"agents.x-k8s.io","kind":"sandboxes"},"code":404}'
	run kts_curl -X DELETE "$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/nosuch"
	[ "$(http_status)" = 404 ]
	run kts_curl "$KTS_URL/api/v1/namespaces/default/pods/nosuch"
	[ "$(http_status)" = 404 ]
	assert_contains '"message":"pods \"nosuch\" not found"'
	run kts_curl "$KTS_URL/apis/agents.x-k8s.io/v9/namespaces/default/sandboxes"
	[ "$(http_status)" = 404 ]
}

@test "watch delivers the Ready transition as JSON lines" {
	kts_start -ready-delay 0.5s
	url="$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes?watch=1&fieldSelector=metadata.name%3Dw1&timeoutSeconds=20"
	kts_curl -N "$url" >"$BATS_TEST_TMPDIR/watch" &
	curl_pid=$!
	"$KUBE/pyclient" create other >/dev/null
	"$KUBE/pyclient" create w1 >/dev/null
	wait_until -p "$curl_pid" grep -q '"status":"True"' "$BATS_TEST_TMPDIR/watch"
	kill "$curl_pid" 2>/dev/null || true
	wait "$curl_pid" 2>/dev/null || true
	run grep '^{' "$BATS_TEST_TMPDIR/watch"
	assert_jsonl 'all(.object.metadata.name == "w1")'
	assert_jsonl '.[0].type == "ADDED"'
	assert_jsonl '[.[] | .object.status.conditions // [] | .[] | select(.type == "Ready") | .status] | .[-2:] == ["False", "True"]'
	# close-watches ends an open watch cleanly
	kts_curl -N "$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes?watch=1&timeoutSeconds=60" \
		>"$BATS_TEST_TMPDIR/watch2" &
	curl_pid=$!
	# (asked again until the watch is open on the server, and the client has gone)
	closes_it() { kts_ctl close-watches >/dev/null; sleep 0.1; gone "$curl_pid"; }
	wait_until closes_it
	finish "$curl_pid"
	run tail -n 1 "$BATS_TEST_TMPDIR/watch2"
	[ "$output" = 200 ]
	# resuming from an old resourceVersion replays what followed it
	run kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes?watch=1&resourceVersion=1&timeoutSeconds=1"
	assert_contains '"type":"MODIFIED"'
}

@test "expiry with policy Delete removes the Sandbox and its local sandbox" {
	kts_start
	ready gone Delete
	# the shutdown time is set once Ready, so a slow machine cannot expire it first
	k patch sandbox gone --type merge \
		-p "{\"spec\":{\"shutdownTime\":\"$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)\"}}"
	run k wait --for=delete sandbox/gone --timeout=$WAIT
	assert_status 0
	run k get sandbox gone
	assert_contains "NotFound"
	no_local_sandboxes
}

@test "expiry with policy Retain removes the pod and sets Ready=False reason SandboxExpired; a later shutdownTime runs it again" {
	kts_start
	ready kept Retain
	# the shutdown time is set once Ready, so a slow machine cannot expire it first
	k patch sandbox kept --type merge \
		-p "{\"spec\":{\"shutdownTime\":\"$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)\"}}"
	run k wait --for=jsonpath='{.status.conditions[0].reason}'=SandboxExpired sandbox/kept --timeout=$WAIT
	assert_status 0
	run k get sandbox kept -o json
	assert_json '.status.conditions[0] | .type == "Ready" and .status == "False" and .reason == "SandboxExpired"'
	run k get pod kept
	assert_contains 'pods "kept" not found'
	run k exec kept -c sandbox -- true
	[ "$status" -ne 0 ]
	# as the Agent Sandbox controller reconciles one no longer expired: a new pod
	k patch sandbox kept --type merge \
		-p "{\"spec\":{\"shutdownTime\":\"$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)\"}}"
	run k wait --for=condition=Ready sandbox/kept --timeout=$WAIT
	assert_status 0
	run k exec kept -c sandbox -- true
	assert_status 0
}

@test "knob: expire a Sandbox now (-ctl expire)" {
	kts_start
	ready now1 Delete
	ready now2 Retain
	run kts_ctl expire default/now1
	assert_status 0
	assert_json '.expired == "default/now1"'
	run k get sandbox now1
	assert_contains "NotFound"
	kts_ctl expire now2
	run k get sandbox now2 -o jsonpath='{.status.conditions[0].reason}'
	[ "$output" = SandboxExpired ]
	run kts_ctl expire default/nosuch
	[ "$status" -ne 0 ]
	assert_contains "404"
}

@test "knob: the next N updates conflict" {
	kts_start
	ready demo
	run kts_ctl faults '{"conflict_updates": 2}'
	assert_json '.conflict_updates == 2'
	for i in 1 2; do
		run k label sandbox demo try=$i
		[ "$status" -ne 0 ]
		assert_contains "the object has been modified"
	done
	run k label sandbox demo try=3
	assert_status 0
	run k get sandbox demo -o jsonpath='{.metadata.labels.try}'
	[ "$output" = 3 ]
}

@test "knob: fail the next N requests with a status, optionally matching a pattern" {
	kts_start
	ready demo
	kts_ctl faults '{"fail_requests": 1, "fail_match": "sandboxes/demo([?]|$)"}' >/dev/null
	run k get sandboxes
	assert_status 0
	run k get sandbox demo
	[ "$status" -ne 0 ]
	assert_contains "Internal error occurred: injected fault"
	run k get sandbox demo
	assert_status 0
	kts_ctl faults '{"fail_requests": 1, "fail_match": "", "fail_status": 503}' >/dev/null
	run kts_curl "$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"
	[ "$(http_status)" = 503 ]
	output=$(http_body) assert_json '.reason == "ServiceUnavailable"'
	run kts_ctl faults
	assert_json '.fail_requests == 0'
	run kts_ctl faults '{"fail_requests": "many"}'
	[ "$status" -ne 0 ]
	assert_contains "knob 'fail_requests' wants a int"
	run kts_ctl faults '{"explode": 1}'
	[ "$status" -ne 0 ]
	assert_contains "unknown knob 'explode'"
}

@test "knob: a malformed value is refused with a 400 naming it, nothing of the document applied" {
	local v
	kts_start
	kts_ctl faults '{"fail_status": 503}' >/dev/null
	for v in 'nope' '[1]' '{"fail_match": "("}' '{"fail_status": 1000}' '{"fail_status": 200}' \
		'{"ready_delay": NaN}' '{"ready_delay": 1e400}' '{"container_waiting_for": -5}' \
		'{"conflict_updates": -3}' '{"exec_drop_after_bytes": -2}' \
		'{"fail_requests": 1, "fail_match": "[z-a]"}'; do
		run kts_ctl faults "$v"
		assert_status 1
		[[ $output == *"-ctl faults: 400: "* ]] || { echo "$v: $output" >&2; false; }
		[[ $output != *Traceback* && $output != *"Internal Server Error"* ]]
	done
	run kts_ctl faults '{"fail_match": "("}'
	assert_contains "knob 'fail_match' is not a regular expression"
	run kts_ctl faults '{"fail_status": 1000}'
	assert_contains "knob 'fail_status' wants 400 to 599"
	run kts_ctl faults '{"ready_delay": NaN}'
	assert_contains "knob 'ready_delay' wants seconds"
	run kts_ctl faults '{"conflict_updates": -3}'
	assert_contains "knob 'conflict_updates' wants at least 0"
	# the server still serves, and what was set before stands: no partial document applied
	run kts_ctl faults
	assert_status 0
	assert_json '.fail_status == 503 and .fail_requests == 0 and .fail_match == "" and .ready_delay == -1'
	# the edges of each range are taken
	run kts_ctl faults '{"fail_status": 599, "ready_delay": 0, "container_waiting_for": -1, "exec_drop_after_bytes": -1, "conflict_updates": 0}'
	assert_status 0
	assert_json '.fail_status == 599 and .ready_delay == 0'
}

@test "knob: drop the next exec stream after K bytes" {
	kts_start
	ready demo
	kts_ctl faults '{"exec_drop_after_bytes": 1000}' >/dev/null
	run bash -c "'$KUBECTL' exec demo -c sandbox -- head -c 100000 /dev/zero 2>/dev/null | wc -c; exit \${PIPESTATUS[0]}"
	[ "$status" -ne 0 ]
	[ "$(printf '%s\n' "$output" | tail -n 1)" = 1000 ]
	# one-shot: the next exec is whole
	run bash -c "'$KUBECTL' exec demo -c sandbox -- head -c 100000 /dev/zero | wc -c"
	[ "$output" = 100000 ]
	# the stdin side: the command sees only the first K bytes, the client a lost connection
	kts_ctl faults '{"exec_drop_after_stdin_bytes": 5000}' >/dev/null
	head -c 1000000 /dev/zero >"$BATS_TEST_TMPDIR/in"
	run "$KUBECTL" exec -i demo -c sandbox -- sh -c 'wc -c >"$HOME/n"' <"$BATS_TEST_TMPDIR/in"
	[ "$status" -ne 0 ]
	counted() { [ "$(k exec demo -c sandbox -- cat /home/tester/n 2>/dev/null)" = "$1" ]; }
	wait_until counted 5000
}

@test "knob: slow or no readiness" {
	kts_start
	kts_ctl faults '{"ready_delay": 3600}' >/dev/null
	k apply -f "$(manifest slow)" >/dev/null
	run k get sandbox slow -o json
	assert_json '.status.conditions[0] | .status == "False" and .reason == "DependenciesNotReady"'
	run k get pod slow -o jsonpath='{.status.phase}'
	[ "$output" = Pending ]
	kts_ctl faults '{"ready_delay": -1, "never_ready": true}' >/dev/null
	k apply -f "$(manifest never)" >/dev/null
	run k wait --for=condition=Ready sandbox/never --timeout=1s
	[ "$status" -ne 0 ]
	kts_ctl reset >/dev/null
	ready fine
}

@test "knob: forbid a verb on a resource (RBAC-like 403)" {
	kts_start
	ready demo
	kts_ctl faults '{"forbid": ["delete sandboxes", "create pods/exec"]}' >/dev/null
	run k delete sandbox demo
	[ "$status" -ne 0 ]
	assert_contains 'sandboxes.agents.x-k8s.io "demo" is forbidden: User "kube-test-user" cannot delete resource "sandboxes" in API group "agents.x-k8s.io" in the namespace "default"'
	run k exec demo -c sandbox -- true
	[ "$status" -ne 0 ]
	assert_contains 'cannot create resource "pods/exec"'
	kts_ctl reset >/dev/null
	run k delete sandbox demo
	assert_status 0
}

@test "request log: what kubectl sent, never the token" {
	kts_start
	k apply -f "$(manifest demo)" >/dev/null
	run kts_ctl requests
	assert_status 0
	assert_jsonl 'map(select(.method == "POST"))[0] | .path == "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes" and .query.fieldValidation == ["Strict"] and .status == 201 and (.body | fromjson | .metadata.name == "demo")'
	assert_jsonl 'all(.headers | has("Authorization") | not)'
	[[ "$output" != *"$KTS_TOKEN"* ]]
	kts_ctl clear-requests >/dev/null
	run kts_ctl requests
	[ -z "$output" ]
}

@test "discovery: aggregated (apidiscovery v2) by default, legacy with -legacy-discovery" {
	kts_start
	run curl -sS -D "$BATS_TEST_TMPDIR/h" --cacert "$KTS_CA" -H "Authorization: Bearer $KTS_TOKEN" \
		-H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' \
		"$KTS_URL/apis"
	assert_json '.kind == "APIGroupDiscoveryList" and .apiVersion == "apidiscovery.k8s.io/v2"'
	assert_json '.items[0].metadata.name == "agents.x-k8s.io" and ([.items[0].versions[].version] == ["v1beta1", "v1alpha1"])'
	assert_json '.items[0].versions[0].resources[0] | .resource == "sandboxes" and .scope == "Namespaced" and .subresources[0].subresource == "status"'
	grep -qi '^Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$BATS_TEST_TMPDIR/h"
	run kts_curl "$KTS_URL/apis"
	output=$(http_body) assert_json '.kind == "APIGroupList"'
	k get sandboxes >/dev/null
	run kts_ctl requests
	assert_jsonl 'map(select(.path == "/apis/agents.x-k8s.io/v1beta1")) == []'
	kts_stop
	kts_start -legacy-discovery
	run k get sandboxes
	assert_status 0
	run kts_ctl requests
	assert_jsonl 'map(select(.path == "/apis/agents.x-k8s.io/v1beta1")) | length == 1'
	assert_jsonl 'map(select(.path == "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"))[0].status == 200'
}

@test "-versions v1alpha1: discovery offers only v1alpha1 and kubectl uses it" {
	kts_start -versions v1alpha1
	run kts_curl "$KTS_URL/apis"
	output=$(http_body) assert_json '.groups[0].versions == [{"groupVersion":"agents.x-k8s.io/v1alpha1","version":"v1alpha1"}]'
	run k apply -f "$(manifest demo)"
	[ "$status" -ne 0 ]
	run k get sandboxes
	assert_contains "No resources found"
	sed 's#agents.x-k8s.io/v1beta1#agents.x-k8s.io/v1alpha1#' "$(manifest demo)" >"$BATS_TEST_TMPDIR/a.yaml"
	run k apply -f "$BATS_TEST_TMPDIR/a.yaml"
	assert_status 0
	run k get sandboxes.v1alpha1.agents.x-k8s.io demo -o json
	assert_json '.apiVersion == "agents.x-k8s.io/v1alpha1"'
}

@test "garbage in: clear 4xx errors" {
	kts_start
	url="$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes"
	run kts_curl -X POST -H 'Content-Type: application/json' --data 'not json' "$url"
	[ "$(http_status)" = 400 ]
	assert_contains "could not be decoded"
	run kts_curl -X POST -H 'Content-Type: application/json' --data '[1,2]' "$url"
	[ "$(http_status)" = 400 ]
	head -c 4000000 /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/big"
	run kts_curl -X POST -H 'Content-Type: application/json' --data-binary @"$BATS_TEST_TMPDIR/big" "$url"
	[ "$(http_status)" = 413 ]
	ready demo
	run kts_curl -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' --data '{}' "$url/demo"
	[ "$(http_status)" = 415 ]
	run kts_curl -X PATCH -H 'Content-Type: application/json-patch+json' \
		--data '[{"op":"remove","path":"/spec/nosuch"}]' "$url/demo"
	[ "$(http_status)" = 422 ]
	run kts_curl -X PATCH -H 'Content-Type: application/json-patch+json' \
		--data '[{"op":"replace","path":"/spec/shutdownPolicy","value":"Retain"}]' "$url/demo"
	[ "$(http_status)" = 200 ]
	output=$(http_body) assert_json '.spec.shutdownPolicy == "Retain"'
	run kts_curl "$url?labelSelector=a%20in%20(b"
	[ "$(http_status)" = 400 ]
	run kts_curl "$url?fieldSelector=spec.x%3Dy"
	[ "$(http_status)" = 400 ]
	run kts_ctl launch
	assert_status 100
	assert_contains "unknown command"
	run kts_ctl faults 'not json'
	[ "$status" -ne 0 ]
	run "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$BATS_TEST_TMPDIR/none" -ctl faults
	assert_status 111
	assert_contains "cannot read the kubeconfig"
}

@test "server-side apply and label selectors work through kubectl" {
	kts_start
	run k apply --server-side -f "$(manifest ssa)"
	assert_status 0
	assert_contains "serverside-applied"
	k wait --for=condition=Ready sandbox/ssa --timeout=$WAIT >/dev/null
	ready other
	k label sandbox other team=x >/dev/null
	run k get sandboxes -l team=x -o name
	[ "$output" = sandbox.agents.x-k8s.io/other ]
	run k get sandboxes -l 'team!=x' -o name
	[ "$output" = sandbox.agents.x-k8s.io/ssa ]
}

@test "deleting and recreating Sandboxes mid-creation leaves exactly the live ones" {
	kts_start -ready-delay 0s
	for i in 1 2 3; do
		"$KUBE/pyclient" create race >/dev/null
		k delete sandbox race --wait=false >/dev/null
	done
	"$KUBE/pyclient" create race >/dev/null
	k wait --for=condition=Ready sandbox/race --timeout=$WAIT
	run k exec race -c sandbox -- echo alive
	[ "$output" = alive ]
	if [ "$(kts_exec_mode)" = sbx ]; then
		run kts_local sbx-list
		assert_jsonl 'map(.name) == ["race"]'
	fi
	k delete sandbox race >/dev/null
	no_local_sandboxes
}

@test "SIGTERM: the server deletes its local sandboxes and its kubeconfig" {
	kts_start
	ready demo
	kc=$KUBECONFIG
	[ -e "$kc" ]
	state=$KTS_STATE
	[ -d "$state" ]
	kts_stop
	[ ! -e "$kc" ]
	[ ! -e "$state" ]
}

@test "its backing sandboxes live in a state root of its own: Sandbox demo is not sandbox demo" {
	[ "$(kts_exec_mode)" = sbx ]
	sbx-create -backend local demo >/dev/null
	sbx-exec -raw -backend local demo -- sh -c 'echo mine > "$HOME/keep"'
	kts_start
	ready demo
	[ "$KTS_STATE" != "$XDG_STATE_HOME" ]
	k exec demo -c sandbox -- sh -c 'echo theirs > "$HOME/keep"'
	k delete sandbox demo
	no_local_sandboxes
	run sbx-exec -raw -backend local demo -- cat /home/clawtainer/keep
	assert_status 0
	[ "$output" = mine ]
}

# A copy of the tracked files without bin/ (a fresh clone before make), in $BATS_TEST_TMPDIR/co.
bare_checkout() {
	mkdir -p "$BATS_TEST_TMPDIR/co"
	git -C "$SBX_TOP" ls-files -z | (cd "$SBX_TOP" && xargs -0 tar -cf - --no-recursion) |
		tar -xf - -C "$BATS_TEST_TMPDIR/co"
}

@test "a checkout without its programs: Ready=False PodFailed with the reason, sbx-create fails at once" {
	bare_checkout
	kc="$BATS_TEST_TMPDIR/kts.yaml"
	# The server alone in the background (not a list): $! is its pid, so teardown stops it.
	(cd "$BATS_TEST_TMPDIR/co" || exit 1
		env -u SBX_BIN PATH=/usr/bin:/bin scripts/kube-test-server -kubeconfig "$kc" \
			>"$BATS_TEST_TMPDIR/kts.out" 2>"$BATS_TEST_TMPDIR/kts.err" 3>&- &
		echo $! >"$BATS_TEST_TMPDIR/kts.pid")
	KTS_PID=$(cat "$BATS_TEST_TMPDIR/kts.pid")
	wait_until test -s "$kc"
	export KUBECONFIG=$kc
	k apply -f "$(manifest demo)" >/dev/null
	run k wait --for=jsonpath='{.status.conditions[0].reason}'=PodFailed sandbox/demo --timeout=$WAIT
	assert_status 0
	run k get sandbox demo -o jsonpath='{.status.conditions[0].message}'
	assert_contains "sbx-create not found"
	assert_contains "run make, or set SBX_BIN"
	run k get pod demo -o json
	assert_json '.status.phase == "Failed" and .status.containerStatuses[0].state.waiting.reason == "CreateContainerError"'
	# the client's view: no three-minute wait, the reason at once (bounded by a short limit)
	SBX_KUBE_READY_TIMEOUT=60s run sbx-create -backend kubernetes k1
	assert_status 111
	assert_contains "unable to create sandbox k1: Sandbox k1 cannot become ready: PodFailed: Pod failed: kube-test-server cannot back the pod: sbx-create not found"
	run k get sandbox k1
	assert_contains "NotFound"
}
