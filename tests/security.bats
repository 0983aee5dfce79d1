#!/usr/bin/env bats
# Security properties that no tool's own file covers (see SECURITY.md for the full map).

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "root's sandbox is root inside and uid/gid 65534 on the host" {
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- sh -c 'id -u; id -g; echo x >~/owned'
	assert_status 0
	[ "$output" = "$(printf '0\n0')" ]
	[ "$(stat -c %u:%g "$XDG_STATE_HOME/sbx/default/demo/home/owned")" = "65534:65534" ]
}

@test "masked host secrets read as empty or missing inside" {
	sbx-create demo >/dev/null
	for f in /etc/shadow /etc/gshadow /etc/sudoers; do
		[ -e "$f" ] || continue
		run sbx-exec -raw demo -- sh -c "cat $f 2>/dev/null"
		[ -z "$output" ]
	done
	run sbx-exec -raw demo -- ls /etc/ssh
	[ -z "$output" ]
}
