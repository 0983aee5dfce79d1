#!/usr/bin/env bats
# sbx-pool: warm pools of local sandboxes — fill, take by sbx-create, spec mismatch, recycling
# on expiry, concurrent takes, sbx-list, kills in the middle of a take.

load helpers
bats_require_minimum_version 1.5.0

setup() { setup_sbx_env; NS=$XDG_STATE_HOME/sbx/default; POOL_PID=; }
teardown() {
	if [ -n "$POOL_PID" ]; then terminate "$POOL_PID" || true; fi
	teardown_sbx_env
}

pooled() { sbx-list | jq -s 'map(select(.state == "pooled")) | length'; }
pooled_is() { [ "$(pooled)" = "$1" ]; }
stopped() { case $(ps -o stat= -p "$1" 2>/dev/null) in T*) return 0 ;; esac; return 1; }

@test "-once fills the pool with ready sandboxes that sbx-list shows apart; a second -once makes none" {
	run sbx-pool -size 2 -once
	assert_status 0
	assert_json '.ready == 2 and .made == 2 and .namespace == "default" and (.pool | test("^[0-9a-f]{16}$"))'
	key=$(jq -r .pool <<<"$output")
	run sbx-list
	assert_status 0
	[ "$(jq -s 'length' <<<"$output")" = 2 ]
	assert_json 'select(.state == "pooled") | .pool == "'"$key"'" and .ready and (.name | startswith("pool-"))'
	run sbx-pool -size 2 -once
	assert_json '.ready == 2 and .made == 0'
	run sbx-pool -size 0 -once
	assert_json '.ready == 0'
	pooled_is 0
}

@test "sbx-create of the pool's spec takes one: renamed, its clock started, nothing ran in it before" {
	sbx-pool -size 1 -once -ttl 1m >/dev/null
	slot=$(sbx-list | jq -r 'select(.state == "pooled") | .name')
	sleep 1
	run sbx-create demo
	assert_status 0
	assert_json '.name == "demo" and .pooled == true and .reused == false'
	# its shutdown time is the create's ttl from now, not what was left of the pool's
	left=$(( $(date -d "$(jq -r .shutdown_time <<<"$output")" +%s) - $(date +%s) ))
	[ "$left" -gt 240 ]
	pooled_is 0
	[ ! -e "$NS/$slot" ]
	[ -d "$NS/demo" ]
	run sbx-list
	assert_json '.name == "demo" and .state == "running" and (.created | fromdateiso8601) >= (now - 5)'
	# the home is empty and nothing but the service runs: no command ever ran in it
	run sbx-exec -raw demo -- sh -c 'ls -A ~ | wc -l; ls /proc | grep -c "^[0-9]"'
	assert_status 0
	[ "$(head -1 <<<"$output")" = 0 ]
	# its hostname (its slot's) is a valid one: programs that resolve it work as in a cold one
	run sbx-exec -raw demo -- python3 -c 'import socket; print(socket.getfqdn(""))'
	assert_status 0
	[[ $output == pool-* ]]
	run sbx-create demo
	assert_json '.reused == true'
	sbx-delete demo >/dev/null
	[ ! -e "$NS/demo" ]
}

@test "a create whose spec differs from the pool's starts a sandbox; the pool stays for its spec" {
	sbx-pool -size 1 -once -memory 512M >/dev/null
	run sbx-create cold
	assert_json '.pooled == null and .limits.memory != 536870912'
	run sbx-create -homedir /home/other -memory 512M other
	assert_json '.pooled == null'
	pooled_is 1
	run sbx-create -memory 512M warm
	assert_json '.pooled == true and .limits.memory == 536870912'
	pooled_is 0
}

@test "a taken sandbox is contained as a cold one: its own ids, cgroup, seccomp, network, capped home" {
	sbx-pool -size 2 -once -disk 64M >/dev/null
	sbx-create -disk 64M a | jq -e '.pooled' >/dev/null
	sbx-create -disk 64M b | jq -e '.pooled' >/dev/null
	# a host id range of its own
	[ "$(stat -c %u "$NS/a/home")" != "$(stat -c %u "$NS/b/home")" ]
	[ "$(stat -c %u "$NS/a/home")" -ge 65536 ]
	run sbx-exec -raw a -- sh -c 'grep ^Seccomp: /proc/self/status; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; df -k ~ | tail -1'
	assert_status 0
	assert_contains "Seccomp:	2"
	[ "$(sed -n 2p <<<"$output")" = lo ]	# a network namespace with loopback only
	[ "$(sed -n 3p <<<"$output" | awk '{print $2}')" -lt 70000 ]
	# the capped home holds no more than its cap
	run sbx-exec -raw a -- sh -c 'head -c 100M /dev/zero > ~/big'
	assert_contains "No space left on device"
	# its cgroup (named after the slot it was made in) is its own
	grep -q memory "$NS/a/cgroups"
	[ "$(cat "$NS/a/cgroups")" != "$(cat "$NS/b/cgroups")" ]
}

@test "an unclaimed pooled sandbox that expires is recycled; stopping the pool removes its sandboxes" {
	sbx-pool -size 1 -ttl 6s >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$! POOL_PID=$!
	wait_until -p "$pid" pooled_is 1
	first=$(sbx-list | jq -r 'select(.state == "pooled") | .name')
	# it goes at its shutdown time; a new one is made a little before, so a take finds one
	wait_until -p "$pid" eval '[ ! -e "$NS/$first" ]'
	[ "$(pooled)" -ge 1 ]
	[ "$(sbx-list | jq -r 'select(.state == "pooled") | .name' | grep -c "^$first$")" = 0 ]
	# a take is replaced too
	made=$(wc -l <"$BATS_TEST_TMPDIR/out")
	sbx-create demo | jq -e '.pooled' >/dev/null
	wait_until -p "$pid" eval '[ "$(wc -l <"$BATS_TEST_TMPDIR/out")" -gt "$made" ]'
	rc=0
	terminate "$pid" || rc=$?
	POOL_PID=
	[ "$rc" = 143 ]
	pooled_is 0
	[ "$(sbx-list | jq -r .name)" = demo ]
	# no lock is left of the slots gone
	[ "$(find "$NS" -maxdepth 1 -name '.pool-*' | wc -l)" = 0 ]
	[ -s "$BATS_TEST_TMPDIR/out" ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
}

@test "concurrent creates never take the same pooled sandbox; those the pool cannot serve start cold" {
	sbx-pool -size 6 -once >/dev/null
	for i in 1 2 3 4 5 6 7 8; do sbx-create "c$i" >"$BATS_TEST_TMPDIR/out.$i" & done
	wait
	run cat "$BATS_TEST_TMPDIR"/out.*
	[ "$(jq -s 'length' <<<"$output")" = 8 ]
	[ "$(jq -s 'map(select(.pooled)) | length' <<<"$output")" = 6 ]
	pooled_is 0
	# eight sandboxes, each with a supervisor and a home of its own
	[ "$(cat "$NS"/c*/supervisor.pid | sort -u | wc -l)" = 8 ]
	[ "$(stat -c %u "$NS"/c*/home | sort -u | wc -l)" = 8 ]
	for i in 1 2 3 4 5 6 7 8; do
		sbx-exec -raw "c$i" -- sh -c "echo $i > ~/who"
	done
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(sbx-exec -raw "c$i" -- cat ~/who)" = "$i" ] || [ "$(sbx-exec -raw "c$i" -- cat /home/clawtainer/who)" = "$i" ]
	done
}

@test "kill -9 mid-take, before the rename: the name never appears; the torn slot is never taken and is removed" {
	sbx-pool -size 1 -once >/dev/null
	slot=$(sbx-list | jq -r 'select(.state == "pooled") | .name')
	SBX_TEST_POOL_STOP=written sbx-create demo >/dev/null 2>&1 &
	pid=$!
	wait_until -p "$pid" stopped "$pid"
	kill -9 "$pid"
	run sbx-exec demo -- true
	assert_status 101
	pooled_is 0
	# the slot's spec names demo: no take accepts it, and it goes with its supervisor
	run sbx-create demo
	assert_status 0
	assert_json '.pooled == null'
	[ ! -e "$NS/$slot" ]
	[ "$(sbx-exec -raw demo -- sh -c 'ls -A ~ | wc -l')" = 0 ]
}

@test "kill -9 mid-take, after the rename: the sandbox is whole under its new name, with its new clock" {
	sbx-pool -size 1 -once -ttl 4s >/dev/null
	SBX_TEST_POOL_STOP=renamed sbx-create demo >/dev/null 2>&1 &
	pid=$!
	wait_until -p "$pid" stopped "$pid"
	kill -9 "$pid"
	run sbx-list
	assert_json '.name == "demo" and .state == "running"'
	pooled_is 0
	# outlives the pool's ttl: its supervisor re-reads the deadline the take wrote
	sleep 5
	run sbx-exec -raw demo -- echo alive
	assert_status 0
	[ "$output" = alive ]
	run sbx-create demo
	assert_json '.reused == true'
}

@test "agent-loop -warm N keeps a pool of its sessions' spec: the first tool call takes a pooled sandbox; the pool ends with it" {
	fed env OPENAI_MODEL=fake-eliza agent-loop -warm 1 -memory 256M -session warm
	wait_until -p "$FED_PID" pooled_is 1
	pool=$(pgrep -P "$FED_PID" -f "sbx-pool -size=1 .*-with-parent -memory=256M")
	echo 'run: echo $HOSTNAME' >&4
	wait_until -p "$FED_PID" grep -q "saved filesystem state" "$BATS_TEST_TMPDIR/err"
	# the session's sandbox was the pooled one: its hostname is still its slot's
	grep -q 'pool-[0-9a-f]*-' "$BATS_TEST_TMPDIR/out"
	[ "$(sbx-list | jq -r 'select(.name == "warm") | .limits.memory')" = 268435456 ]
	echo /exit >&4
	fed_end
	wait_until gone "$pool"
	pooled_is 0
}

@test "sbx-mcp and acp-server take -warm too, and refuse a bad count" {
	run sbx-mcp -warm 65
	assert_status 100
	assert_contains "-warm must be between 0 and 64"
	run acp-server -stdio -warm -1
	assert_status 100
	assert_contains "-warm must be between 0 and 64"
}
