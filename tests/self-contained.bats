#!/usr/bin/env bats
# self-contained.bats — the repository needs nothing beside it (issue 20 item 6): no tracked
# file refers to the team's reference directory next to the checkout, and the Kubernetes test
# server with sbx's kubernetes backend works in a mount namespace where the checkout's parent
# directory holds nothing but the checkout itself.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	setup_sbx_env
}

teardown() {
	teardown_sbx_env
}

@test "no tracked file refers to a directory beside the checkout" {
	cd "$SBX_TOP"
	# the pattern is split so that this file does not match itself
	local dots='\.\.' dir='/shared'
	run bash -c "git ls-files -z | xargs -0 grep -n -E '${dots}${dir}(/|\\b)|/work${dir}' -- |
		grep -v -E '^[^:]+\\.md:|^[^:]+:[0-9]+:[[:space:]]*(\\*|/\\*|//)'"
	[ "$status" -eq 1 ]		# grep found nothing
	[ -z "$output" ]
	# the CRD the test server validates against is the repository's own, with its licence
	[ -s third_party/agent-sandbox/agents.x-k8s.io_sandboxes.yaml ]
	for r in sandboxtemplates sandboxwarmpools sandboxclaims; do
		grep -q "^  group: extensions.agents.x-k8s.io$" "third_party/agent-sandbox/extensions.agents.x-k8s.io_$r.yaml"
	done
	grep -q "Apache License" third_party/agent-sandbox/LICENSE
	grep -q 2fd412d55ecae90861a101a5424a75473de97c36 third_party/agent-sandbox/README.md
}

@test "kubernetes backend against the test server with the checkout's parent hidden" {
	local parent top
	top=$(cd "$SBX_TOP" && pwd -P)
	parent=$(dirname "$top")
	[ "$parent" != / ]
	# Everything the run needs outside the parent stays visible; the parent itself is an
	# empty tmpfs with only the checkout (and, should they live there, the test's own
	# directories) bound back.
	local binds=(--bind "$top" "$top")
	case $BATS_TEST_TMPDIR in "$parent"/*) binds+=(--bind "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR") ;; esac
	case $SBX_BIN in "$parent"/*) case $SBX_BIN in "$top"/*) ;; *) binds+=(--bind "$SBX_BIN" "$SBX_BIN") ;; esac ;; esac
	cat >"$BATS_TEST_TMPDIR/inside.sh" <<'EOF'
set -eu
. "$TOP/tests/helpers.bash"
ls -A "$PARENT" >"$TMPD/listing"
kc=$TMPD/kc
"$TOP/scripts/kube-test-server" -kubeconfig "$kc" >"$TMPD/kts.out" 2>"$TMPD/kts.err" 3>&- &
pid=$!
wait_until -p $pid test -s "$kc" || { cat "$TMPD/kts.err" >&2; exit 1; }
export KUBECONFIG=$kc SANDBOX_BACKEND=kubernetes
sbx-create hidden >"$TMPD/create.json"
sbx-exec -raw hidden -- sh -c 'echo from-inside >"$HOME/f"; cat "$HOME/f"' >"$TMPD/exec.out"
sbx-delete hidden
kill $pid
wait $pid || true
EOF
	run bwrap --dev-bind / / --tmpfs "$parent" "${binds[@]}" --setenv PARENT "$parent" \
		--setenv TOP "$top" --setenv TMPD "$BATS_TEST_TMPDIR" bash "$BATS_TEST_TMPDIR/inside.sh"
	assert_status 0
	# inside, the parent held the checkout only (plus the test's own directories)
	grep -qx "$(basename "$top")" "$BATS_TEST_TMPDIR/listing"
	run grep -c . "$BATS_TEST_TMPDIR/listing"
	[ "$output" -le 2 ]
	run cat "$BATS_TEST_TMPDIR/create.json"
	assert_json '.name == "hidden" and .backend == "kubernetes"'
	[ "$(cat "$BATS_TEST_TMPDIR/exec.out")" = from-inside ]
}
