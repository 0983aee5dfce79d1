#!/usr/bin/env bats
# kube-claims.bats — issue 32 on the kubernetes backend: the Agent Sandbox extensions
# (SandboxTemplate, SandboxWarmPool, SandboxClaim) as scripts/kube-test-server plays their
# controllers, read with the real kubectl v1.35 and python3-kubernetes; finalizers; the fault
# knobs; and sbx's -warm-pool, which claims a Sandbox of a pool instead of making one.

bats_require_minimum_version 1.5.0
load helpers
load kube/server

POOL_YAML="$BATS_TEST_DIRNAME/../images/sbx-warm-pool/sbx-warm-pool.yaml"

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	kts_setup -ready-delay 100ms
	kts_kubectl
	export SBX_KUBE_READY_TIMEOUT=20s
}

teardown() { kts_teardown; }

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
	soon=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
	claim c5 "  warmPoolRef:\n    name: sbx\n  lifecycle:\n    shutdownTime: \"$soon\"\n    shutdownPolicy: Delete" >/dev/null
	claim c6 "  warmPoolRef:\n    name: sbx\n  lifecycle:\n    shutdownTime: \"$soon\"\n    shutdownPolicy: Retain" >/dev/null
	wait_until claim_bound c5
	wait_until claim_bound c6
	s5=$(k get sandboxclaim c5 -o jsonpath='{.status.sandbox.name}')
	s6=$(k get sandboxclaim c6 -o jsonpath='{.status.sandbox.name}')
	# the claim's time is its own: not copied to the Sandbox
	run k get sandbox "$s5" -o json
	assert_json '.spec.shutdownTime == null'
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
