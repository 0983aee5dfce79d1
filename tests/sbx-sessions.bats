#!/usr/bin/env bats
# sbx-sessions: the session store listed (history, backups, size, who uses a session) and
# sessions removed, never one in use.

load helpers
load agent
bats_require_minimum_version 1.5.0

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# (-h, bad flags and arguments: tests/usage-errors.txt)

@test "no store yet lists nothing; sessions are listed by name with their history and backups" {
	run sbx-sessions
	assert_status 0
	[ -z "$output" ]
	turn beta 'run: echo b'
	turn alpha 'hello'
	run sbx-sessions
	assert_status 0
	[ "${#lines[@]}" = 2 ]
	printf '%s\n' "${lines[0]}" | jq -e '.name == "alpha" and .messages == 3 and .backups == 0 and .in_use_by == null'
	printf '%s\n' "${lines[1]}" | jq -e '.name == "beta" and .messages == 5 and .backups == 1 and .bytes > 0'
	printf '%s\n' "${lines[1]}" | jq -e '.updated | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$")'
	# directories that are not sessions are not listed
	mkdir -p "$HOME/.local/sandboxed-tools/Not-A-Session"
	run sbx-sessions
	[ "${#lines[@]}" = 2 ]
}

@test "a session in use shows its user and is not removed; once free, -delete removes it all" {
	turn busy 'run: echo b'
	agent_fed -session busy
	pid=$FED_PID
	wait_until -p "$pid" grep -q "^$pid agent-loop$" "$HOME/.local/sandboxed-tools/busy/sessions/.lock"
	run sbx-sessions
	assert_json ".name == \"busy\" and .in_use_by == \"agent-loop (pid $pid)\""
	turn other 'hi'
	run --separate-stderr sbx-sessions -delete busy other
	assert_status 111
	[ "$stderr" = "sbx-sessions: unable to delete session busy: session \"busy\" is in use by agent-loop (pid $pid): a session is used by one process at a time" ]
	[ "$output" = '{"name":"other","deleted":true}' ]
	[ -s "$(hist busy)" ]
	[ ! -e "$HOME/.local/sandboxed-tools/other" ]
	echo /exit >&4
	fed_end
	# one that does not exist is said so (101), the others still go
	run --separate-stderr sbx-sessions -delete never busy
	assert_status 101
	[ "$stderr" = 'sbx-sessions: unable to delete session never: session "never" does not exist' ]
	[ "$output" = '{"name":"busy","deleted":true}' ]
	[ ! -e "$HOME/.local/sandboxed-tools/busy" ]
	run sbx-sessions
	[ -z "$output" ]
}

@test "an invalid name removes nothing" {
	turn keep 'hi'
	run sbx-sessions -delete keep ../x
	assert_status 100
	assert_contains 'invalid session name "../x": session name must be lowercase alphanumeric'
	[ -s "$(hist keep)" ]
}

@test "man page examples run" {
	run_man_examples sbx-sessions
}
