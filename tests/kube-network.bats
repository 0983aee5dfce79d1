#!/usr/bin/env bats
# kube-network.bats — issue 15 item 5: every Sandbox sbx makes gets a NetworkPolicy, made and
# deleted with it and labelled as sbx's, that admits no ingress and lets egress reach only the
# cluster's DNS, or with -network the public internet (private, link-local and loopback ranges
# excepted). Each object validates against the Kubernetes schemas (kubernetes-models, from the
# Kubernetes OpenAPI specification) and the API server's own NetworkPolicy rules.

bats_require_minimum_version 1.5.0
load helpers
load kube/server

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	kts_setup -ready-delay 100ms
	kts_kubectl
}

teardown() { kts_teardown; }

netpol() { k get networkpolicy "sbx-$1" -o json; }

netpol_gone() { ! k get networkpolicy "sbx-$1" >/dev/null 2>&1; }

DNS_RULE='{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}'

@test "a Sandbox gets a NetworkPolicy: no ingress, egress to DNS only; labelled, owned, deleted with it" {
	run sbx-create n1
	assert_status 0
	assert_json '.network == {"mode": "none"}'
	run netpol n1
	assert_status 0
	uid=$(k get sandbox n1 -o jsonpath='{.metadata.uid}')
	assert_json '.metadata.labels == {"app.kubernetes.io/managed-by": "sbx", "app.kubernetes.io/instance": "n1"}'
	assert_json ".metadata.ownerReferences == [{\"apiVersion\": \"agents.x-k8s.io/v1beta1\", \"kind\": \"Sandbox\", \"name\": \"n1\", \"uid\": \"$uid\"}]"
	assert_json '.spec.podSelector == {"matchLabels": {"app.kubernetes.io/managed-by": "sbx", "app.kubernetes.io/instance": "n1"}}'
	assert_json '.spec.policyTypes == ["Ingress", "Egress"] and .spec.ingress == []'
	assert_json ".spec.egress == [$DNS_RULE]"
	# the selector matches the Sandbox's pod, and only it
	run k get pods -l app.kubernetes.io/instance=n1 -o name
	[ "$output" = pod/n1 ]
	run k get sandbox n1 -o jsonpath='{.metadata.annotations.sbx/network}'
	[ "$output" = none ]
	# sbx-delete removes both
	sbx-delete n1
	wait_until netpol_gone n1
	# an expired Sandbox (deleted by the controller, not by sbx) loses its policy too
	sbx-create n2 >/dev/null
	netpol n2 >/dev/null
	kts_ctl expire default/n2 >/dev/null
	wait_until netpol_gone n2
}

@test "-network: egress to public addresses, private and link-local ranges excepted; reuse keeps the network" {
	run sbx-create -network n3
	assert_status 0
	assert_json '.network == {"mode": "nat"}'
	run netpol n3
	assert_json ".spec.egress[0] == $DNS_RULE"
	assert_json '.spec.egress[1].to == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8"]}}, {"ipBlock": {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10", "::1/128"]}}]'
	assert_json '(.spec.egress[1] | has("ports") | not) and .spec.ingress == []'
	run sbx-create -network n3
	assert_json '.reused == true'
	run sbx-create n3
	assert_status 100
	assert_contains "its network is internet, not none"
	# a policy edited by hand is put back by the next create
	k patch networkpolicy sbx-n3 --type merge -p '{"spec": {"ingress": [{}]}}' >/dev/null
	run sbx-create -network n3
	assert_status 0
	assert_json '.network == {"mode": "nat"}'
	run netpol n3
	assert_json '.spec.ingress == []'
}

@test "every NetworkPolicy sbx sends validates: kubernetes-models and the API server's rules; a broken one is refused" {
	sbx-create n4 >/dev/null
	sbx-create -network n5 >/dev/null
	kts_ctl requests | jq -c 'select(.method == "POST" and (.path | endswith("/networkpolicies")) and .status == 201) | .body | fromjson' >"$BATS_TEST_TMPDIR/posts"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/posts")" -eq 2 ]
	split -l 1 "$BATS_TEST_TMPDIR/posts" "$BATS_TEST_TMPDIR/np."
	run "$SBX_TOP/tests/kube/k8s-validate" "$BATS_TEST_TMPDIR"/np.*
	assert_status 0
	assert_contains "NetworkPolicy sbx-n4: ok"
	assert_contains "NetworkPolicy sbx-n5: ok"
	# kubectl's view of the same object: a server-side dry run of it is accepted ...
	netpol n5 | jq '.metadata |= {name: "copy", labels}' >"$BATS_TEST_TMPDIR/copy.json"
	run k apply --dry-run=server -f "$BATS_TEST_TMPDIR/copy.json"
	assert_status 0
	assert_contains "networkpolicy.networking.k8s.io/copy created (server dry run)"
	# ... and both checkers refuse a broken one
	jq '.spec.egress[1].to[1].ipBlock.except[0] = "10.0.0.0/8" | .spec.egress[0].ports[0].protocol = "ICMP"' \
		"$BATS_TEST_TMPDIR/copy.json" >"$BATS_TEST_TMPDIR/bad.json"
	run k apply --dry-run=server -f "$BATS_TEST_TMPDIR/bad.json"
	[ "$status" -ne 0 ]
	assert_contains 'spec.egress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'
	assert_contains 'spec.egress[1].to[1].ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`'
	run "$SBX_TOP/tests/kube/k8s-validate" "$BATS_TEST_TMPDIR/bad.json"
	assert_status 1
	assert_contains "protocol"
}

@test "a NetworkPolicy of that name that is not sbx's is not taken over; no RBAC for policies is an error" {
	cat >"$BATS_TEST_TMPDIR/theirs.yaml" <<-'EOF'
	apiVersion: networking.k8s.io/v1
	kind: NetworkPolicy
	metadata: {name: sbx-n6}
	spec: {podSelector: {}, policyTypes: [Ingress]}
	EOF
	k apply -f "$BATS_TEST_TMPDIR/theirs.yaml" >/dev/null
	run sbx-create n6
	assert_status 100
	assert_contains "cannot set up the NetworkPolicy sbx-n6 that confines it: a NetworkPolicy named sbx-n6 exists in namespace default and is not sbx's"
	run k get networkpolicy sbx-n6 -o jsonpath='{.spec.policyTypes}'
	[ "$output" = '["Ingress"]' ]
	run k get sandbox n6
	assert_contains "NotFound"		# the Sandbox it made is deleted again
	kts_ctl faults '{"forbid": ["create networkpolicies"]}' >/dev/null
	run sbx-create n7
	assert_status 111
	assert_contains "cannot set up the NetworkPolicy sbx-n7 that confines it: forbidden (403): the credentials may not create networkpolicies.networking.k8s.io in namespace default"
	run k get sandbox n7
	assert_contains "NotFound"
}

@test "-allow-host is refused on this backend, saying what to use instead; nothing is made" {
	run sbx-create -allow-host pypi.org,files.pythonhosted.org n8
	assert_status 100
	assert_contains "-allow-host is not available on the kubernetes backend: its proxy runs on the sandbox's host, which a pod does not share; use -network"
	assert_contains "FQDN-aware network policy"
	SANDBOX_ALLOW_HOSTS=pypi.org run sbx-create n8
	assert_status 100
	assert_contains "-allow-host is not available on the kubernetes backend"
	# the programs that hand it on refuse it at start, not at their first tool call
	run agent-loop -allow-host pypi.org -session n8 <<<'run: true'
	assert_status 100
	assert_contains "agent-loop: -allow-host is not available on the kubernetes backend"
	SANDBOX_ALLOW_HOSTS=pypi.org run sbx-mcp -session n8 </dev/null
	assert_status 100
	assert_contains "sbx-mcp: -allow-host is not available on the kubernetes backend"
	run kts_ctl requests
	[ -z "$(printf '%s' "$output" | jq -c 'select(.method == "POST")')" ]
	run k get sandbox n8
	assert_contains "NotFound"
}
