#!/usr/bin/env bats
# sbx-delete: removal of processes and home, idempotence, bad input.

load helpers
bats_require_minimum_version 1.5.0

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "delete removes the sandbox, its processes and its home" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo x > ~/f; setsid sleep 6017.'$$' >/dev/null 2>&1 &'
	sup=$(cat "$XDG_STATE_HOME/sbx/default/demo/supervisor.pid")
	run sbx-delete demo
	assert_status 0
	assert_json '.name == "demo" and .deleted == true'
	[ ! -e "$XDG_STATE_HOME/sbx/default/demo" ]
	gone "$sup"
	run ! pgrep -f -x "sleep 6017.$$"
	run sbx-exec demo -- true
	assert_status 101
}

@test "deleting twice, or something that never existed, succeeds" {
	sbx-create demo >/dev/null
	run sbx-delete demo demo never
	assert_status 0
	[ "$(printf '%s\n' "$output" | jq -s 'length')" = 3 ]
}

@test "an invalid name deletes nothing" {
	sbx-create demo >/dev/null
	run sbx-delete demo ../x
	assert_status 100
	run sbx-exec demo -- true
	assert_status 0
	run sbx-delete
	assert_status 100
}

@test "a recreated sandbox starts with an empty home" {
	sbx-create demo >/dev/null
	sbx-exec demo -- sh -c 'echo x > ~/f' >/dev/null
	sbx-delete demo >/dev/null
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- ls -A /home/clawtainer
	[ -z "$output" ]
}

@test "man page examples run" {
	run_man_examples sbx-delete
}
