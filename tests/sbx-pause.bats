#!/usr/bin/env bats
# sbx-pause and sbx-resume: a sandbox frozen through its cgroup keeps its processes and their
# memory, uses no CPU, is resumed by the next call on it, and can be deleted while paused.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# The sandbox's directory: its cgroups file names the cgroup directories (one per v1
# hierarchy, the freezer's among them; one on v2).
sbxdir() { echo "$XDG_STATE_HOME/sbx/default/$1"; }
cgdirs() { sed -n 's/^dir //p' "$(sbxdir "$1")/cgroups"; }

# cpu_ticks NAME: CPU time (user + system, in clock ticks) used so far by the processes in
# the sandbox's cgroup — a counter, so a frozen sandbox is seen to use none whatever the
# machine's load. Summed over the members of its first cgroup directory (every directory
# holds the same processes).
cpu_ticks() {
	local d pid sum=0 t
	d=$(cgdirs "$1" | head -1)
	for pid in $(cat "$d/cgroup.procs"); do
		t=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || continue
		sum=$((sum + ${t:-0}))
	done
	echo "$sum"
}
ticks_above() { [ "$(cpu_ticks "$1")" -gt "$2" ]; }

state_is() { [ "$(sbx-list | jq -r --arg n "$1" 'select(.name == $n) | .state')" = "$2" ]; }

# A counter server in the sandbox: every GET answers how many GETs it has served, from memory.
start_counter() {
	cat >"$BATS_TEST_TMPDIR/counter.py" <<'PY'
import http.server
n = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        n += 1
        body = str(n).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", 8765), H).serve_forever()
PY
	sbx-cp "$BATS_TEST_TMPDIR/counter.py" "$1:counter.py" >/dev/null
	sbx-exec "$1" -- sh -c 'setsid /usr/bin/python3 counter.py >counter.log 2>&1 </dev/null &'
}
# The server listens in the sandbox's own network namespace, where no user's server can be.
get_count() {
	sbx-exec -raw "$1" -- /usr/bin/python3 -c \
		'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8765/", timeout=5).read().decode())' # (port: the sandbox's own)
}

@test "pause keeps a background server and its memory; the next exec resumes it" {
	sbx-create demo >/dev/null
	start_counter demo
	wait_until get_count demo
	run get_count demo
	assert_status 0
	[ "$output" -ge 2 ] || { echo "count: $output" >&2; false; }
	before=$output
	run sbx-pause demo
	assert_status 0
	assert_json '.name == "demo" and .state == "paused"'
	state_is demo paused
	run get_count demo
	assert_status 0
	[ "$output" -eq $((before + 1)) ]
	state_is demo running
}

@test "a paused sandbox uses no CPU; resumed, it runs on" {
	sbx-create demo >/dev/null
	sbx-exec demo -- sh -c 'setsid sh -c "while :; do :; done" >/dev/null 2>&1 </dev/null &'
	wait_until ticks_above demo 0
	sbx-pause demo >/dev/null
	frozen=$(cpu_ticks demo)
	sleep 2
	[ "$(cpu_ticks demo)" -eq "$frozen" ]
	run sbx-resume demo
	assert_status 0
	assert_json '.state == "running"'
	wait_until ticks_above demo "$frozen"
}

@test "a command's -timeout does not count while its sandbox is paused" {
	sbx-create demo >/dev/null
	# 8 s of sleep under a 5 s timeout, 6 s of it paused: 2 s of its own time, so it ends well.
	sbx-exec -raw -timeout 5s demo -- sleep 8.$$ >"$BATS_TEST_TMPDIR/out" 2>&1 &
	exec_pid=$!
	wait_until pgrep -f "^sleep 8\.$$"
	sbx-pause demo >/dev/null
	sleep 6
	sbx-resume demo >/dev/null
	rc=0
	finish "$exec_pid" || rc=$?
	[ "$rc" -eq 0 ] || { echo "sbx-exec exited $rc: $(cat "$BATS_TEST_TMPDIR/out")" >&2; false; }
}

@test "pausing twice and resuming a running sandbox are fine" {
	sbx-create demo >/dev/null
	sbx-pause demo >/dev/null
	run sbx-pause demo
	assert_status 0
	assert_json '.state == "paused"'
	sbx-resume demo >/dev/null
	run sbx-resume demo
	assert_status 0
	assert_json '.state == "running"'
	state_is demo running
}

@test "sbx-touch, sbx-tool, sbx-cp and a reusing sbx-create resume a paused sandbox" {
	sbx-create demo >/dev/null
	sbx-pause demo >/dev/null
	run sbx-touch -ttl 1h demo
	assert_status 0
	state_is demo running
	sbx-pause demo >/dev/null
	run sh -c 'jq -cn '\''{id:"c1",type:"function",function:{name:"run_command",arguments:"{\"command\":\"echo hi\"}"}}'\'' | sbx-tool demo'
	assert_status 0
	assert_contains hi
	state_is demo running
	sbx-pause demo >/dev/null
	echo data >"$BATS_TEST_TMPDIR/f.txt"
	run sbx-cp "$BATS_TEST_TMPDIR/f.txt" demo:f.txt
	assert_status 0
	state_is demo running
	sbx-pause demo >/dev/null
	run sbx-create demo
	assert_status 0
	assert_json '.reused == true'
	state_is demo running
}

@test "delete of a paused sandbox leaves nothing behind" {
	sbx-create demo >/dev/null
	sbx-exec demo -- sh -c "setsid sleep 313.$$ >/dev/null 2>&1 </dev/null &"
	wait_until pgrep -f "sleep 313.$$"
	pid=$(pgrep -f "sleep 313.$$")
	mapfile -t dirs < <(cgdirs demo)
	[ "${#dirs[@]}" -ge 1 ]
	sbx-pause demo >/dev/null
	run sbx-delete demo
	assert_status 0
	wait_until gone "$pid"
	[ ! -e "$(sbxdir demo)" ]
	for d in "${dirs[@]}"; do [ ! -e "$d" ]; done
	[ -z "$(sbx-list)" ]
}

@test "a paused sandbox is deleted at its shutdown time, its frozen processes too" {
	sbx-create demo >/dev/null
	sbx-exec demo -- sh -c "setsid sleep 317.$$ >/dev/null 2>&1 </dev/null &"
	wait_until pgrep -f "sleep 317.$$"
	pid=$(pgrep -f "sleep 317.$$")
	mapfile -t dirs < <(cgdirs demo)
	sbx-pause demo >/dev/null
	# Its shutdown time comes now (a touch would resume it): the deadline file the
	# supervisor reads, which SIGHUP has it read again.
	date +%s%N >"$(sbxdir demo)/deadline"
	kill -HUP "$(cat "$(sbxdir demo)/supervisor.pid")"
	wait_until test ! -e "$(sbxdir demo)"
	wait_until gone "$pid"
	for d in "${dirs[@]}"; do wait_until test ! -e "$d"; done
}

@test "a sandbox without a cgroup cannot be paused, and is running" {
	sbx-create -limits none demo >/dev/null
	run sbx-pause demo
	assert_status 111
	assert_contains "sbx-pause: unable to pause sandbox demo: sandbox demo has no cgroup to freeze (it was made with -limits none)"
	run sbx-resume demo
	assert_status 0
	assert_json '.state == "running"'
}

@test "-idle pause: at its shutdown time the sandbox is paused, not deleted; the next exec resumes it with its ttl again" {
	run sbx-create -idle pause -paused-ttl 1h -ttl 2s demo
	assert_status 0
	assert_json '.idle == "pause" and .paused_ttl == "1h0m0s" and
		((.delete_time | fromdateiso8601) - (.shutdown_time | fromdateiso8601)) == 3600'
	sbx-exec demo -- sh -c "setsid sleep 331.$$ >/dev/null 2>&1 </dev/null &"
	wait_until pgrep -f "sleep 331.$$"
	pid=$(pgrep -f "sleep 331.$$")
	wait_until state_is demo paused
	[ "$(sbx-list | jq -r '.idle')" = pause ]
	t0=$(date +%s)
	run sbx-exec demo -- pgrep -f "sleep 331.$$"
	assert_status 0
	# alive again for its 2 s from the resume (after t0), then paused again
	[ "$(sbx-list | jq --argjson t0 "$t0" '(.shutdown_time | fromdateiso8601) >= $t0 + 1')" = true ]
	wait_until state_is demo paused
	run sbx-resume demo
	assert_json '.state == "running"'
	kill -0 "$pid"
}

@test "-idle pause: a paused sandbox past -paused-ttl is deleted with its frozen processes; nobody need call" {
	sbx-create -idle pause -paused-ttl 3s -ttl 2s demo >/dev/null
	sbx-exec demo -- sh -c "setsid sleep 337.$$ >/dev/null 2>&1 </dev/null &"
	wait_until pgrep -f "sleep 337.$$"
	pid=$(pgrep -f "sleep 337.$$")
	mapfile -t dirs < <(cgdirs demo)
	wait_until state_is demo paused
	wait_until test ! -e "$(sbxdir demo)"
	wait_until gone "$pid"
	for d in "${dirs[@]}"; do wait_until test ! -e "$d"; done
	run sbx-exec demo -- true
	assert_status 101
}

@test "-idle pause: a command running past the shutdown time is not left frozen: its caller waits, so it is not idle" {
	sbx-create -idle pause -ttl 1s demo >/dev/null
	# 4 s of sleep in a sandbox whose 1 s lifetime passes meanwhile: the supervisor pauses
	# it, the waiting sbx-exec resumes it within a moment, and the command ends.
	run timeout 60 sbx-exec demo -- sleep 4
	assert_status 0
	wait_until state_is demo paused		# idle afterwards: paused again
}

@test "-idle delete (the default) and a reusing create that changes the policy" {
	run sbx-create demo
	assert_json 'has("idle") | not'
	run sbx-create -idle pause -paused-ttl 5m demo
	assert_status 0
	assert_json '.reused and .idle == "pause" and .paused_ttl == "5m0s"'
	run env SANDBOX_IDLE=delete sbx-create demo
	assert_json '.reused and (has("idle") | not)'
	[ ! -e "$(sbxdir demo)/idle" ]
}

@test "pause and resume of a missing sandbox exit 101" {
	run sbx-pause nosuch
	assert_status 101
	assert_contains "sbx-pause: unable to pause sandbox nosuch: sandbox nosuch not found"
	run sbx-resume nosuch
	assert_status 101
	assert_contains "sbx-resume: unable to resume sandbox nosuch: sandbox nosuch not found"
}

# (bad input: tests/usage-errors.txt)

@test "man page examples run" {
	run_man_examples sbx-pause
	run_man_examples sbx-resume
}
