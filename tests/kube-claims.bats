#!/usr/bin/env bats
# kube-claims.bats — issue 32 on the kubernetes backend: the Agent Sandbox extensions
# (SandboxTemplate, SandboxWarmPool, SandboxClaim) as scripts/kube-test-server plays their
# controllers, read with the real kubectl v1.35 and python3-kubernetes; finalizers; the fault
# knobs; and sbx's -warm-pool, which claims a Sandbox of a pool instead of making one.

bats_require_minimum_version 1.5.0
load helpers
load kube/server
load agent

POOL_YAML="$BATS_TEST_DIRNAME/../images/sbx-warm-pool/sbx-warm-pool.yaml"

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	kts_setup -ready-delay 100ms
	kts_kubectl
	export SBX_KUBE_READY_TIMEOUT=20s
}

teardown() {
	[ -z "${PORT_PID-}" ] || { kill "$PORT_PID" 2>/dev/null; wait "$PORT_PID" 2>/dev/null; } || true
	kts_teardown
}

py() { /usr/bin/python3 "$SBX_TOP/tests/kube/pyclient" "$@"; }

# ready_replicas POOL N: the pool's status says N ready and N in all.
ready_replicas() {
	[ "$(k get sandboxwarmpool "$1" -o jsonpath='{.status.readyReplicas}/{.status.replicas}')" = "$2/$2" ]
}

# claim_reason NAME REASON: the claim's Ready condition has that reason.
claim_reason() {
	[ "$(k get sandboxclaim "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')" = "$2" ]
}

absent() { ! k get "$1" "$2" >/dev/null 2>&1; }
claim_bound() { [ -n "$(k get sandboxclaim "$1" -o jsonpath='{.status.sandbox.name}')" ]; }
no_members() { [ -z "$(pool_members "$1")" ]; }

# pool_members POOL: the names of the Sandboxes the pool owns, one a line.
pool_members() {
	k get sandboxes -o json |
		jq -r --arg p "$1" '.items[] | select(.metadata.ownerReferences[0] | .kind == "SandboxWarmPool" and .name == $p) | .metadata.name'
}

claim() {
	printf 'apiVersion: extensions.agents.x-k8s.io/%s\nkind: SandboxClaim\nmetadata:\n  name: %s\n%bspec:\n%b\n' \
		"${3:-v1beta1}" "$1" "${4:-}" "$2" | k apply -f -
}

@test "test server: a warm pool keeps replicas ready Sandboxes of its template, owned by it; kubectl scale moves it" {
	run k apply -f "$POOL_YAML"
	assert_status 0
	assert_contains "sandboxtemplate.extensions.agents.x-k8s.io/sbx created"
	assert_contains "sandboxwarmpool.extensions.agents.x-k8s.io/sbx created"
	wait_until ready_replicas sbx 2
	run pool_members sbx
	[ "${#lines[@]}" -eq 2 ]
	for n in "${lines[@]}"; do [[ $n =~ ^sbx-[a-z0-9]{5}$ ]]; done
	uid=$(k get sandboxwarmpool sbx -o jsonpath='{.metadata.uid}')
	run k get sandbox "${lines[0]}" -o json
	assert_json ".metadata.ownerReferences == [{\"apiVersion\": \"extensions.agents.x-k8s.io/v1beta1\", \"kind\": \"SandboxWarmPool\", \"name\": \"sbx\", \"uid\": \"$uid\", \"controller\": true, \"blockOwnerDeletion\": true}]"
	assert_json '.metadata.labels["agents.x-k8s.io/warm-pool-sandbox"] != null and .spec.podTemplate.spec.containers[0].image == "debian:bookworm-slim"'
	run k get sandboxwarmpool sbx
	assert_contains "READY   DESIRED"
	run k scale sandboxwarmpool sbx --replicas=3
	assert_status 0
	assert_contains "sandboxwarmpool.extensions.agents.x-k8s.io/sbx scaled"
	wait_until ready_replicas sbx 3
	run py scale sbx 1
	assert_status 0
	assert_json '.kind == "Scale" and .spec.replicas == 1'
	wait_until ready_replicas sbx 1
	[ "$(pool_members sbx | wc -l)" -eq 1 ]
	# the pool deleted: its Sandboxes go with it
	k delete sandboxwarmpool sbx
	wait_until no_members sbx
}

@test "test server: a claim adopts a ready Sandbox of its pool (python3-kubernetes watches it), the pool makes another" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	before=$(pool_members sbx | sort)
	run py claim c1 sbx
	assert_status 0
	assert_json '.ready == true'
	sb=$(printf '%s' "$output" | jq -r .sandbox)
	# a warm Sandbox keeps the pool's generated name: the claim's status names it
	grep -qx "$sb" <<<"$before"
	run k get sandboxclaims
	assert_status 0
	assert_contains "NAME   READY   SANDBOX"
	assert_contains "c1     True    $sb"
	cuid=$(k get sandboxclaim c1 -o jsonpath='{.metadata.uid}')
	run k get sandbox "$sb" -o json
	assert_json ".metadata.ownerReferences[0].kind == \"SandboxClaim\" and .metadata.ownerReferences[0].uid == \"$cuid\" and (.metadata.ownerReferences | length) == 1"
	assert_json '.metadata.labels["agents.x-k8s.io/warm-pool-sandbox"] == null and .metadata.labels["agents.x-k8s.io/launch-type"] == "warm"'
	# replenished: two again, none of them the claimed one
	wait_until ready_replicas sbx 2
	run ! grep -qx "$sb" <(pool_members sbx)
	# the claimed Sandbox's pod answers exec (python3-kubernetes' stream)
	run py exec "$sb" "" sh -c 'echo hi'
	assert_json '.stdout == "hi\n"'
	# the claim deleted: its Sandbox goes
	k delete sandboxclaim c1
	wait_until absent sandbox "$sb"
}

@test "test server: a claim of an empty pool (warm_pool_empty) cold-creates a Sandbox named as the claim from the pool's template" {
	k apply -f "$POOL_YAML" >/dev/null
	kts_ctl faults '{"warm_pool_empty": true}' >/dev/null
	wait_until ready_replicas sbx 0
	claim c2 '  warmPoolRef:\n    name: sbx' >/dev/null
	wait_until claim_reason c2 DependenciesReady
	run k get sandboxclaim c2 -o json
	assert_json '.status.sandbox.name == "c2" and .metadata.annotations["agents.x-k8s.io/sandbox-name"] == "c2"'
	run k get sandbox c2 -o json
	assert_json '.metadata.labels["agents.x-k8s.io/launch-type"] == "cold" and .metadata.ownerReferences[0].kind == "SandboxClaim" and .spec.podTemplate.spec.containers[0].image == "debian:bookworm-slim"'
}

@test "test server: adoption conflicts are reported on the claim (AdoptionConflict) and tried again; a claim ReconcilerError; a missing pool" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	kts_ctl faults '{"adoption_conflicts": 1, "claim_reconciler_error": "the controller is broken"}' >/dev/null
	claim c3 '  warmPoolRef:\n    name: sbx' >/dev/null
	wait_until claim_reason c3 ReconcilerError
	run k get sandboxclaim c3 -o jsonpath='{.status.conditions[0].message}'
	[ "$output" = "Error seen: the controller is broken" ]
	kts_ctl faults '{"claim_reconciler_error": ""}' >/dev/null
	wait_until claim_reason c3 DependenciesReady
	run k get sandboxclaim c3 -o jsonpath='{.status.sandbox.name}'
	[[ $output =~ ^sbx- ]]
	run kts_ctl faults
	assert_json '.adoption_conflicts == 0'
	claim c4 '  warmPoolRef:\n    name: no-such-pool' >/dev/null
	wait_until claim_reason c4 WarmPoolNotFound
	run k get sandboxclaim c4 -o jsonpath='{.status.conditions[0].message}'
	[ "$output" = 'SandboxWarmPool "no-such-pool" not found' ]
}

@test "test server: a claim's shutdownTime: Delete deletes the claim and its Sandbox; Retain keeps the claim (ClaimExpired), its Sandbox deleted" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	later=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
	claim c5 "  warmPoolRef:\n    name: sbx\n  lifecycle:\n    shutdownTime: \"$later\"\n    shutdownPolicy: Delete" >/dev/null
	claim c6 "  warmPoolRef:\n    name: sbx\n  lifecycle:\n    shutdownTime: \"$later\"\n    shutdownPolicy: Retain" >/dev/null
	wait_until claim_bound c5
	wait_until claim_bound c6
	s5=$(k get sandboxclaim c5 -o jsonpath='{.status.sandbox.name}')
	s6=$(k get sandboxclaim c6 -o jsonpath='{.status.sandbox.name}')
	# the claim's time is its own: not copied to the Sandbox
	run k get sandbox "$s5" -o json
	assert_json '.spec.shutdownTime == null'
	# the time comes (moved into the past)
	for c in c5 c6; do
		k patch sandboxclaim "$c" --type=merge -p '{"spec":{"lifecycle":{"shutdownTime":"2020-01-01T00:00:00Z"}}}' >/dev/null
	done
	wait_until absent sandboxclaim c5
	wait_until absent sandbox "$s5"
	wait_until claim_reason c6 ClaimExpired
	wait_until absent sandbox "$s6"
	run k get sandboxclaim c6 -o jsonpath='{.status.conditions[0].message}'
	[ "$output" = "Claim expired. Sandbox cleanup initiated." ]
}

@test "test server: finalizers hold a deleted claim and a deleted Sandbox (deletionTimestamp set) until they are removed" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	claim c7 '  warmPoolRef:\n    name: sbx' v1beta1 '  finalizers: ["example.com/hold"]\n' >/dev/null
	wait_until claim_reason c7 DependenciesReady
	sb=$(k get sandboxclaim c7 -o jsonpath='{.status.sandbox.name}')
	run k delete sandboxclaim c7 --wait=false
	assert_status 0
	run k get sandboxclaim c7 -o json
	assert_status 0
	assert_json '.metadata.deletionTimestamp != null'
	k get sandbox "$sb" >/dev/null
	k patch sandboxclaim c7 --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
	wait_until absent sandboxclaim c7
	wait_until absent sandbox "$sb"
	# the same for a Sandbox
	k patch sandbox "$(pool_members sbx | head -1)" --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
	m=$(pool_members sbx | head -1)
	k delete sandbox "$m" --wait=false >/dev/null
	run k get sandbox "$m" -o jsonpath='{.metadata.deletionTimestamp}'
	assert_status 0
	[ -n "$output" ]
	k patch sandbox "$m" --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null
	wait_until absent sandbox "$m"
}

@test "test server: a v1alpha1 claim (sandboxTemplateRef and warmpool) is served and adopts from the pool it names" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	claim c8 '  sandboxTemplateRef:\n    name: sbx\n  warmpool: sbx' v1alpha1 >/dev/null
	wait_until claim_reason c8 DependenciesReady
	run k get sandboxclaims.v1alpha1.extensions.agents.x-k8s.io c8 -o json
	assert_json '.apiVersion == "extensions.agents.x-k8s.io/v1alpha1" and (.status.sandbox.name | startswith("sbx-"))'
}

# refused MESSAGE: sbx-create -warm-pool sbx w3 fails with a usage status saying MESSAGE.
refused() {
	run sbx-create -warm-pool sbx w3
	assert_status 100
	assert_contains "$1"
}

# posted KIND: the bodies of the POSTs to that collection the server saw, one JSON a line.
posted() {
	kts_ctl requests | jq -c --arg k "$1" 'select(.method == "POST" and (.path | endswith("/" + $k))) | .body | fromjson'
}

@test "sbx-create -warm-pool claims a ready Sandbox of the pool: the handle names both; exec, cp, touch and delete follow the claim" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	kts_ctl clear-requests >/dev/null
	run sbx-create -warm-pool sbx -ttl 10m w1
	assert_status 0
	assert_json '.name == "w1" and .warm_pool == "sbx" and (.sandbox | test("^sbx-[a-z0-9]{5}$")) and .reused == false and .pod_security == "restricted" and .homedir == "/home/clawtainer"'
	sb=$(printf '%s' "$output" | jq -r .sandbox)
	# a claim, not a Sandbox: sbx's labels, the pool, the claim's own lifecycle
	run posted sandboxclaims
	assert_json '.apiVersion == "extensions.agents.x-k8s.io/v1beta1" and .metadata.name == "w1" and .metadata.labels["app.kubernetes.io/managed-by"] == "sbx" and .spec.warmPoolRef == {"name": "sbx"} and .spec.lifecycle.shutdownPolicy == "Delete" and (.spec.lifecycle.shutdownTime | test("Z$"))'
	[ -z "$(posted sandboxes)" ]
	# commands run in the bound Sandbox's pod
	run sbx-exec -raw w1 -- sh -c 'echo in-pod; pwd'
	assert_status 0
	[ "$output" = "in-pod
/home/clawtainer" ]
	kts_ctl requests | jq -e -s "map(select(.path | endswith(\"/pods/$sb/exec\"))) | length >= 1" >/dev/null
	echo payload >"$BATS_TEST_TMPDIR/f.txt"
	run sbx-cp "$BATS_TEST_TMPDIR/f.txt" w1:f.txt
	assert_status 0
	run sbx-cp w1:f.txt "$BATS_TEST_TMPDIR/back.txt"
	assert_status 0
	[ "$(cat "$BATS_TEST_TMPDIR/back.txt")" = payload ]
	# touch moves the claim's shutdownTime; the Sandbox keeps none of its own
	before=$(k get sandboxclaim w1 -o jsonpath='{.spec.lifecycle.shutdownTime}')
	run sbx-touch -ttl 2h w1
	assert_status 0
	assert_json '.name == "w1" and .sandbox == "'"$sb"'"'
	after=$(k get sandboxclaim w1 -o jsonpath='{.spec.lifecycle.shutdownTime}')
	[[ $after > $before ]]
	[ -z "$(k get sandbox "$sb" -o jsonpath='{.spec.shutdownTime}')" ]
	run sbx-create -warm-pool sbx w1
	assert_status 0
	assert_json '.reused == true and .sandbox == "'"$sb"'"'
	# delete deletes the claim; the controller deletes its Sandbox
	run sbx-delete w1
	assert_status 0
	wait_until absent sandbox "$sb"
	run k get sandboxclaim w1
	assert_contains "NotFound"
	run sbx-exec w1 -- true
	assert_status 101
}

@test "sbx-create -warm-pool: an empty pool cold-starts a Sandbox named as the claim; touch and delete still go to the claim" {
	k apply -f "$POOL_YAML" >/dev/null
	kts_ctl faults '{"warm_pool_empty": true}' >/dev/null
	run sbx-create -warm-pool sbx w2
	assert_status 0
	assert_json '.name == "w2" and .sandbox == "w2" and .warm_pool == "sbx"'
	run sbx-touch -ttl 1h w2
	assert_status 0
	assert_json '.sandbox == "w2"'
	[ -z "$(k get sandbox w2 -o jsonpath='{.spec.shutdownTime}')" ]
	[ -n "$(k get sandboxclaim w2 -o jsonpath='{.spec.lifecycle.shutdownTime}')" ]
	run sbx-exec -raw w2 -- echo ok
	[ "$output" = ok ]
	# a plain sbx-create of that name does not take the claim's Sandbox over
	run sbx-create w2
	assert_status 100
	assert_contains "belongs to a SandboxClaim"
	sbx-delete w2 >/dev/null
	wait_until absent sandbox w2
	run k get sandboxclaim w2
	assert_contains "NotFound"
}

@test "a Role with no rights on claims, on a cluster serving them, keeps plain sandboxes working: get, exec, touch and delete" {
	kts_ctl faults '{"forbid": ["get sandboxclaims", "patch sandboxclaims", "delete sandboxclaims"]}' >/dev/null
	run sbx-create plain
	assert_status 0
	run sbx-exec -raw plain -- echo ok
	[ "$output" = ok ]
	run sbx-touch -ttl 1h plain
	assert_status 0
	run sbx-delete plain
	assert_status 0
	wait_until absent sandbox plain
	# a name that is neither is deleted as before, not refused as forbidden
	run sbx-delete gone
	assert_status 0
}

@test "sbx-create -warm-pool refuses a missing pool, a missing template, a template that is not restricted or lacks the sandbox container or the home, before anything is made" {
	k apply -f "$POOL_YAML" >/dev/null
	kts_ctl clear-requests >/dev/null
	run sbx-create -warm-pool nope w3
	assert_status 100
	assert_contains "sbx-create: unable to create sandbox w3: failed to claim a Sandbox of warm pool nope: SandboxWarmPool nope not found in namespace default"
	k patch sandboxwarmpool sbx --type=merge -p '{"spec":{"sandboxTemplateRef":{"name":"gone"}}}' >/dev/null
	refused "SandboxTemplate gone of warm pool sbx not found in namespace default"
	k patch sandboxwarmpool sbx --type=merge -p '{"spec":{"sandboxTemplateRef":{"name":"sbx"}}}' >/dev/null
	k patch sandboxtemplate sbx --type=json -p '[{"op": "replace", "path": "/spec/podTemplate/spec/containers/0/securityContext/allowPrivilegeEscalation", "value": true}]' >/dev/null
	refused "SandboxTemplate sbx of warm pool sbx is not Pod Security \"restricted\""
	k patch sandboxtemplate sbx --type=json -p '[{"op": "replace", "path": "/spec/podTemplate/spec/containers/0/securityContext/allowPrivilegeEscalation", "value": false}, {"op": "replace", "path": "/spec/podTemplate/spec/containers/0/name", "value": "main"}]' >/dev/null
	refused "has no \"sandbox\" container first"
	k patch sandboxtemplate sbx --type=json -p '[{"op": "replace", "path": "/spec/podTemplate/spec/containers/0/name", "value": "sandbox"}, {"op": "remove", "path": "/spec/podTemplate/spec/containers/0/volumeMounts/0"}]' >/dev/null
	refused "mounts no volume at the home (/home/clawtainer)"
	k apply -f "$POOL_YAML" >/dev/null
	k patch sandboxtemplate sbx --type=merge -p '{"spec":{"networkPolicyManagement":"Unmanaged"}}' >/dev/null
	refused "has networkPolicyManagement Unmanaged: no NetworkPolicy keeps its pod off the network"
	# nothing was made
	[ -z "$(posted sandboxclaims)" ]
	[ -z "$(posted sandboxes)" ]
	# and on the local backend the flag is refused as a kubernetes setting
	run sbx-create -backend local -warm-pool sbx w4
	assert_status 100
	assert_contains "-warm-pool is a kubernetes setting"
}

@test "sbx-create -warm-pool: a claim the controller cannot serve (ReconcilerError) fails at once with its reason, and the claim is deleted" {
	k apply -f "$POOL_YAML" >/dev/null
	kts_ctl faults '{"claim_reconciler_error": "admission webhook denied the Sandbox"}' >/dev/null
	SBX_KUBE_READY_TIMEOUT=60s run sbx-create -warm-pool sbx w5
	assert_status 111
	assert_contains "SandboxClaim w5 cannot become ready: ReconcilerError: Error seen: admission webhook denied the Sandbox"
	wait_until absent sandboxclaim w5
}

@test "sbx-create -warm-pool on a server serving only v1alpha1: the claim names the pool's template and the pool (spec.warmpool)" {
	kts_stop
	kts_start -ready-delay 100ms -versions v1alpha1
	sed 's|/v1beta1|/v1alpha1|' "$POOL_YAML" | k apply -f - >/dev/null
	wait_until ready_replicas sbx 2
	kts_ctl clear-requests >/dev/null
	run sbx-create -warm-pool sbx w6
	assert_status 0
	assert_json '.name == "w6" and (.sandbox | startswith("sbx-"))'
	run posted sandboxclaims
	assert_json '.apiVersion == "extensions.agents.x-k8s.io/v1alpha1" and .spec.sandboxTemplateRef == {"name": "sbx"} and .spec.warmpool == "sbx"'
	run sbx-exec -raw w6 -- echo ok
	[ "$output" = ok ]
	sbx-delete w6 >/dev/null
	wait_until absent sandboxclaim w6
}

@test "sbx-list shows a claimed sandbox under its claim's name, not the pool's Sandboxes; agent-loop -warm-pool runs its session's tools in a claimed Sandbox" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	run sbx-list
	assert_status 0
	[ -z "$output" ]
	sb=$(sbx-create -warm-pool sbx w7 | jq -r .sandbox)
	run sbx-list
	assert_json '.name == "w7" and .sandbox == "'"$sb"'"'
	[ "${#lines[@]}" -eq 1 ]
	sbx-delete w7 >/dev/null
	wait_until ready_replicas sbx 2
	kts_ctl clear-requests >/dev/null
	run eliza -backend kubernetes -warm-pool sbx -session s1 <<'EOF2'
run: sh -c 'echo from-a-claim > ~/f.txt; cat ~/f.txt'
/exit
EOF2
	assert_status 0
	assert_contains "from-a-claim"
	run posted sandboxclaims
	assert_json '.metadata.name == "s1" and .spec.warmPoolRef.name == "sbx"'
	[ -z "$(posted sandboxes)" ]
	# the tool call's TTL move went to the claim
	kts_ctl requests | jq -s -e 'map(select(.method == "PATCH" and (.path | endswith("/sandboxclaims/s1")))) | length >= 1' >/dev/null
	wait_until absent sandboxclaim s1
}

@test "sbx-port on a claimed sandbox forwards to its bound Sandbox's pod" {
	k apply -f "$POOL_YAML" >/dev/null
	wait_until ready_replicas sbx 2
	sb=$(sbx-create -warm-pool sbx w8 | jq -r .sandbox)
	sbx-exec w8 -- sh -c 'mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html &&
		setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/http.log 2>&1 </dev/null &' >/dev/null
	sbx-port w8 8000 >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err" &
	PORT_PID=$!
	wait_until -p "$PORT_PID" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r '.url' "$BATS_TEST_TMPDIR/port.out")
	wait_until curl -sf -o /dev/null "${url}index.html"
	[ "$(curl -sf "${url}index.html")" = hello ]
	kts_ctl requests | jq -s -e "map(select(.path == \"/api/v1/namespaces/default/pods/$sb/portforward\" and .status == 101)) | length >= 1" >/dev/null
}
