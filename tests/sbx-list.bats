#!/usr/bin/env bats
# sbx-list: one JSON line per sandbox.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "nothing to list prints nothing" {
	run sbx-list
	assert_status 0
	[ -z "$output" ]
}

@test "lists each sandbox once, sorted, with its fields" {
	sbx-create zeta >/dev/null
	sbx-create alpha >/dev/null
	run sbx-list
	assert_status 0
	[ "$(printf '%s\n' "$output" | jq -r .name | tr '\n' ' ')" = "alpha zeta " ]
	printf '%s\n' "$output" | jq -se '.[0] | .name == "alpha" and .ready == true and .backend == "local" and .state == "running" and (.age | test("^[0-9]+s$"))' >/dev/null
}

@test "only the requested namespace" {
	sbx-create -namespace other one >/dev/null
	run sbx-list
	[ -z "$output" ]
	run sbx-list -namespace other
	assert_json '.name == "one" and .namespace == "other"'
	sbx-delete -namespace other one >/dev/null
}

# (bad input: tests/usage-errors.txt)

@test "man page examples run" {
	run_man_examples sbx-list
}
