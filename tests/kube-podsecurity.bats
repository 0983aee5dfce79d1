#!/usr/bin/env bats
# kube-podsecurity.bats — issue 22: sbx's Sandboxes meet Pod Security "restricted" and are
# admitted in a namespace that enforces it; a violating pod is refused with the API server's
# 403 and its words, which kubectl v1.35 shows as it would from a real cluster; -run-as-root is
# the explicit opt-out (baseline); -runtime-class sets runtimeClassName, and a RuntimeClass the
# cluster lacks fails sbx-create at once with the admission error.

bats_require_minimum_version 1.5.0
load helpers
load kube/server

WAIT=60s

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	kts_setup -ready-delay 100ms
	kts_kubectl
}

teardown() { kts_teardown; }

# namespace NAME LEVEL [MODE]: a namespace whose Pod Security MODE (enforce) is LEVEL.
namespace() {
	printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {pod-security.kubernetes.io/%s: %s}\n' \
		"$1" "${3:-enforce}" "$2" >"$BATS_TEST_TMPDIR/ns-$1.yaml"
	k apply -f "$BATS_TEST_TMPDIR/ns-$1.yaml" >/dev/null
}

# The pod template of Sandbox $2 in namespace $1 as a Pod (for kubectl's own admission check).
pod_of() {
	k -n "$1" get sandbox "$2" -o json |
		jq --arg n "$2-pod" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n}, spec: .spec.podTemplate.spec}'
}

UPSTREAM_VIOLATIONS='violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "sandbox" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "sandbox" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "sandbox" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "sandbox" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'

@test "sbx's Sandbox is admitted where restricted is enforced, and works there" {
	namespace secure restricted
	run sbx-create -namespace secure p1
	assert_status 0
	assert_json '.pod_security == "restricted" and .namespace == "secure" and (has("runtime_class") | not)'
	run sbx-exec -namespace secure p1 -- sh -c 'echo hi > "$HOME/x"; cat x; pwd'
	assert_status 0
	assert_json '.stdout == "hi\n/home/clawtainer\n"'
	# kubectl sees the same: the pod template passes the server's admission as a Pod too
	pod_of secure p1 >"$BATS_TEST_TMPDIR/p1.json"
	run k -n secure apply --dry-run=server -f "$BATS_TEST_TMPDIR/p1.json"
	assert_status 0
	assert_contains "pod/p1-pod created (server dry run)"
	# reused as it is; a create asking for something else is refused
	run sbx-create -namespace secure p1
	assert_json '.reused == true and .pod_security == "restricted"'
	run sbx-create -namespace secure -run-as-root p1
	assert_status 100
	assert_contains "its pod meets Pod Security restricted, not baseline"
}

@test "a violating pod is refused with 403 and the API server's words, through kubectl and through sbx" {
	namespace secure restricted
	# upstream's own template (no securityContext) as kubectl applies it: refused at admission
	cat >"$BATS_TEST_TMPDIR/pod.yaml" <<-'EOF'
	apiVersion: v1
	kind: Pod
	metadata: {name: plain}
	spec:
	  containers:
	  - {name: sandbox, image: debian:bookworm-slim, command: [sleep, infinity]}
	EOF
	run k -n secure apply -f "$BATS_TEST_TMPDIR/pod.yaml"
	[ "$status" -ne 0 ]
	[ "$output" = "Error from server (Forbidden): error when creating \"$BATS_TEST_TMPDIR/pod.yaml\": pods \"plain\" is forbidden: $UPSTREAM_VIOLATIONS" ]
	run kts_curl -X POST -H 'Content-Type: application/json' --data "$(/usr/bin/python3 -c 'import sys,yaml,json; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$BATS_TEST_TMPDIR/pod.yaml")" \
		"$KTS_URL/api/v1/namespaces/secure/pods"
	[ "$(printf '%s\n' "$output" | tail -n 1)" = 403 ]
	printf '%s\n' "$output" | sed '$d' | jq -e '.kind == "Status" and .reason == "Forbidden" and .code == 403 and .details == {"name": "plain", "kind": "pods"}'
	# a Sandbox with upstream's template is stored (admission checks pods, not Sandboxes), and
	# its pod is refused: Ready=False ReconcilerError with the same message
	sed 's/^  name: demo$/  name: upstream\n  namespace: secure/' "$SBX_TOP/tests/kube/demo-sandbox.yaml" >"$BATS_TEST_TMPDIR/sb.yaml"
	run k apply -f "$BATS_TEST_TMPDIR/sb.yaml"
	assert_status 0
	run k -n secure wait --for=jsonpath='{.status.conditions[0].reason}'=ReconcilerError sandbox/upstream --timeout=$WAIT
	assert_status 0
	run k -n secure get sandbox upstream -o jsonpath='{.status.conditions[0].message}'
	[ "$output" = "Error seen: pods \"upstream\" is forbidden: $UPSTREAM_VIOLATIONS" ]
	run k -n secure get pod upstream
	assert_contains 'pods "upstream" not found'
	# the opt-out runs as root: refused under restricted at once, with the reason
	SBX_KUBE_READY_TIMEOUT=60s run sbx-create -namespace secure -run-as-root p2
	assert_status 111
	assert_contains 'Sandbox p2 cannot become ready: ReconcilerError: Error seen: pods "p2" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "sandbox" must not include "AUDIT_WRITE", "CHOWN", '
	assert_contains '"SYS_CHROOT" in securityContext.capabilities.add), runAsNonRoot != true (pod or container "sandbox" must set securityContext.runAsNonRoot=true), runAsUser=0 (pod must not set runAsUser=0)'
	run k -n secure get sandbox p2
	assert_contains "NotFound"
}

@test "-run-as-root: baseline, shown in the handle; admitted where baseline is enforced" {
	namespace base baseline
	run sbx-create -namespace base -run-as-root p3
	assert_status 0
	assert_json '.pod_security == "baseline"'
	kts_ctl requests | jq -s -c '[.[] | select(.method == "POST" and (.path | endswith("/sandboxes")))][-1].body | fromjson | .spec.podTemplate.spec' >"$BATS_TEST_TMPDIR/spec"
	jq -e '.securityContext == {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}}' "$BATS_TEST_TMPDIR/spec"
	jq -e '.containers[0].securityContext | .allowPrivilegeEscalation == false and .readOnlyRootFilesystem == false and .capabilities.drop == ["ALL"] and (.capabilities.add | index("NET_RAW") | not) and (.capabilities.add | index("CHOWN"))' "$BATS_TEST_TMPDIR/spec"
	jq -e '[.volumes[].name] == ["home"]' "$BATS_TEST_TMPDIR/spec"
	SANDBOX_RUN_AS_ROOT=true run sbx-create -namespace base p3
	assert_json '.reused == true'
	# the environment variable is checked like the flag
	SANDBOX_RUN_AS_ROOT=maybe run sbx-create -namespace base p4
	assert_status 100
	assert_contains "invalid SANDBOX_RUN_AS_ROOT: want true or false"
	# a namespace that only warns admits the default and names what restricted would refuse
	namespace loose restricted warn
	sed 's/^  name: demo$/  name: warned\n  namespace: loose/' "$SBX_TOP/tests/kube/demo-sandbox.yaml" >"$BATS_TEST_TMPDIR/sb.yaml"
	k apply -f "$BATS_TEST_TMPDIR/sb.yaml" >/dev/null
	k -n loose wait --for=condition=Ready sandbox/warned --timeout=$WAIT
	pod_of loose warned >"$BATS_TEST_TMPDIR/w.json"
	run --separate-stderr k -n loose apply --dry-run=server -f "$BATS_TEST_TMPDIR/w.json"
	assert_status 0
	[[ "$stderr" == *"Warning: would $UPSTREAM_VIOLATIONS"* ]]
}

@test "-runtime-class: runtimeClassName set; a missing RuntimeClass fails at once, an existing one is used" {
	SBX_KUBE_READY_TIMEOUT=60s run sbx-create -runtime-class gvisor p5
	assert_status 111
	assert_contains 'Sandbox p5 cannot become ready: ReconcilerError: Error seen: pods "p5" is forbidden: pod rejected: RuntimeClass "gvisor" not found'
	printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' >"$BATS_TEST_TMPDIR/rc.yaml"
	run k apply -f "$BATS_TEST_TMPDIR/rc.yaml"
	assert_status 0
	assert_contains "runtimeclass.node.k8s.io/gvisor created"
	SANDBOX_RUNTIME_CLASS=gvisor run sbx-create p5
	assert_status 0
	assert_json '.runtime_class == "gvisor" and .pod_security == "restricted"'
	run k get sandbox p5 -o jsonpath='{.spec.podTemplate.spec.runtimeClassName}'
	[ "$output" = gvisor ]
	run sbx-create p5
	assert_status 100
	assert_contains "its RuntimeClass is gvisor, not (none)"
	for bad in Bad_Name '' -gvisor gvisor- .gvisor gvisor. a..b a.-b "$(printf 'a%.0s' $(seq 254))"; do
		run sbx-create -runtime-class "$bad" p6
		assert_status 100
		assert_contains "invalid value \"$bad\" for flag -runtime-class: a RuntimeClass name "
	done
	# the local backend has no runtime to choose: refused, never silently ignored
	run sbx-create -backend local -runtime-class gvisor p7
	assert_status 100
	assert_contains "-runtime-class is a kubernetes setting"
	SANDBOX_RUNTIME_CLASS=gvisor run agent-loop -backend local -session p7 <<<'run: true'
	assert_status 100
	assert_contains "agent-loop: -runtime-class is a kubernetes setting"
	[ -z "$(sbx-list -backend local)" ]
}
