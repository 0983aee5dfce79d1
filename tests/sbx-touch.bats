#!/usr/bin/env bats
# sbx-touch: moving the shutdown time, and the not-found status.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "touch moves the shutdown time" {
	sbx-create -ttl 1m demo >/dev/null
	run sbx-touch -ttl 2h demo
	assert_status 0
	assert_json '.name == "demo"'
	t=$(printf '%s' "$output" | jq -r .shutdown_time)
	[ "$(date -d "$t" +%s)" -gt $(( $(date +%s) + 7000 )) ]
	[ "$(sbx-list | jq -r .shutdown_time)" = "$t" ]
}

@test "a shorter ttl brings the shutdown forward" {
	sbx-create -ttl 1h demo >/dev/null
	sbx-touch -ttl 1s demo >/dev/null
	wait_until test ! -e "$XDG_STATE_HOME/sbx/default/demo"
}

@test "a touched sandbox outlives its first ttl" {
	sbx-create -ttl 2s demo >/dev/null
	sbx-touch -ttl 1h demo >/dev/null
	sleep 3
	run sbx-exec demo -- true
	assert_status 0
}

@test "touching a sandbox that is gone exits 101" {
	run sbx-touch nosuch
	assert_status 101
	assert_contains "sbx-touch: unable to touch sandbox nosuch: sandbox nosuch not found"
}

# (bad input: tests/usage-errors.txt)

@test "man page examples run" {
	run_man_examples sbx-touch
}
