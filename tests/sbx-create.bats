#!/usr/bin/env bats
# sbx-create: creation, reuse, isolation, lifecycle, bad input.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "create prints the handle and the sandbox runs commands" {
	run sbx-create demo
	assert_status 0
	assert_json '.name == "demo" and .namespace == "default" and .backend == "local"'
	assert_json '.image == "host" and .homedir == "/home/clawtainer" and .reused == false'
	assert_json '.shutdown_time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$")'
	run sbx-exec -raw demo -- sh -c 'echo $HOME; pwd'
	assert_status 0
	[ "$output" = "$(printf '/home/clawtainer\n/home/clawtainer')" ]	# commands start in the home
}

@test "a second create with the same spec reuses the sandbox; another spec is an error" {
	sbx-create demo >/dev/null
	sbx-exec demo -- touch /tmp/marker >/dev/null
	run sbx-create demo
	assert_status 0
	assert_json '.reused == true'
	run sbx-exec -raw demo -- ls /tmp/marker
	assert_status 0
	run sbx-create -homedir /home/other demo
	assert_status 100
	assert_contains "sbx-create: unable to create sandbox demo: sandbox demo exists with homedir /home/clawtainer, not /home/other"
}

@test "concurrent creates of one name make one sandbox" {
	for i in 1 2 3 4 5 6; do sbx-create race >"$BATS_TEST_TMPDIR/out.$i" & done
	wait
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -s 'map(select(.reused == false)) | length')" = 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -s 'map(select(.reused == true)) | length')" = 5 ]
	[ "$(pgrep -fc "sbx-init supervise $XDG_STATE_HOME/sbx/default/race ")" = 1 ]
}

@test "invalid names are refused with upstream's rule, worded for a sandbox" {
	run sbx-create ../x
	assert_status 100
	assert_contains "sandbox name must be lowercase alphanumeric"
	run sbx-create my-box
	assert_status 100
	[ "$output" = 'sbx-create: invalid sandbox name "my-box": sandbox name must be lowercase alphanumeric' ]
	for prog in sbx-exec sbx-touch sbx-delete sbx-tool; do
		run "$prog" my-box </dev/null
		assert_status 100
		assert_contains "sandbox name must be lowercase alphanumeric"
		[[ "$output" != *"session name"* ]]
	done
	run sbx-create Demo
	assert_status 100
	run sbx-create aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
	assert_status 100
	assert_contains "sandbox name must be no more than 40 characters long"
	[ ! -e "$XDG_STATE_HOME/sbx/default/Demo" ]
}

# (-h, bad flags and values: tests/usage-errors.txt)

@test "a missing bubblewrap is named" {
	SBX_BWRAP=/nonexistent/bwrap run sbx-create demo
	assert_status 111
	assert_contains 'install the Debian package "bubblewrap"'
	[ ! -e "$XDG_STATE_HOME/sbx/default/demo" ]
}

@test "the sandbox is isolated: no network, scrubbed environment, hidden host state" {
	echo secret >"$HOME/host-file"
	GEMINI_API_KEY=sk-should-not-leak OPENAI_API_KEY=sk-nor-this sbx-create demo >/dev/null
	run sbx-exec -raw demo -- env
	assert_status 0
	[[ "$output" != *sk-should-not-leak* && "$output" != *sk-nor-this* ]]
	[[ "$output" == *"HOME=/home/clawtainer"* ]]
	# only the loopback device
	run sbx-exec -raw demo -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	[ "$output" = "lo" ]
	run sbx-exec -raw demo -- ls "$HOME"
	[ "$status" -ne 0 ]
	run sbx-exec -raw demo -- ls "$XDG_STATE_HOME"
	[ "$status" -ne 0 ]
	run sbx-exec -raw demo -- cat /etc/shadow
	[[ "$output" != *root:* ]]
	# the root is the sandbox's own overlay (tests/rootfs.bats): nothing reaches the host's
	sbx-exec -raw demo -- touch /usr/sbx-write-test
	[ ! -e /usr/sbx-write-test ]
	run sbx-exec -raw demo -- sh -c 'echo kept > ~/f && cat ~/f'
	[ "$output" = kept ]
	# the home is backed by the state directory on the host
	[ "$(cat "$XDG_STATE_HOME/sbx/default/demo/home/f")" = kept ]
}

@test "-network gives the sandbox a network of its own (lo and pasta's interface; tests/network.bats)" {
	sbx-create -network net >/dev/null
	run sbx-exec -raw net -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " "'
	[ "$output" = "$(ip route show default | awk '{print $5; exit}') lo " ]
	[ "$(sbx-exec -raw net -- readlink /proc/self/ns/net)" != "$(readlink /proc/self/ns/net)" ]
}

@test "when the shutdown time passes the sandbox, its processes and its home are removed" {
	sbx-create -ttl 1s short >/dev/null
	sbx-exec -raw short -- sh -c 'setsid sleep 300 >/dev/null 2>&1 &'
	wait_until test ! -e "$XDG_STATE_HOME/sbx/default/short"
	run sbx-exec short -- true
	assert_status 101
	! pgrep -f "sbx-init supervise $XDG_STATE_HOME/sbx/default/short "
}

@test "a stale state directory (supervisor gone, as after a reboot) is detected and cleaned" {
	sbx-create stale >/dev/null
	pid=$(cat "$XDG_STATE_HOME/sbx/default/stale/supervisor.pid")
	# everything dies at once, as in a power cut: the supervisor gets no chance to clean up
	kill -STOP "$pid"
	pkill -KILL -P "$pid" || true
	kill -KILL "$pid"
	wait_until gone "$pid"
	[ -d "$XDG_STATE_HOME/sbx/default/stale" ]
	run sbx-exec stale -- true
	assert_status 101
	run sbx-list
	assert_status 0
	[ -z "$output" ]
	[ ! -e "$XDG_STATE_HOME/sbx/default/stale" ]
	run sbx-create stale
	assert_status 0
	assert_json '.reused == false'
}

@test "namespaces keep sandboxes apart" {
	sbx-create -namespace team1 demo >/dev/null
	run sbx-exec -namespace team2 demo -- true
	assert_status 101
	SANDBOX_NAMESPACE=team1 run sbx-exec demo -- true
	assert_status 0
	sbx-delete -namespace team1 demo >/dev/null
}

@test "man page examples run" {
	run_man_examples sbx-create
}
