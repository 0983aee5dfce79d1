#!/usr/bin/env bats
# The fault matrix, end to end: each step of a turn (create, restore, exec, touch, snapshot, the
# LLM call) meets a failure — API server down, 500s, a 409 storm, an exec stream cut, a full
# disk under the backups or the history, SIGKILL of agent-loop, a sandbox expiring mid-turn.
# Each test asserts what the user sees (a clear message, the session still usable) and that
# nothing is lost (history lines, earlier backups) or left behind (sandboxes, processes).

load helpers
load agent
load stub
load kube/server
bats_require_minimum_version 1.5.0

setup() {
	setup_sbx_env
	KTS_PID=
	STUB_PID=
}

teardown() {
	stop_stub
	if [ -n "$KTS_PID" ]; then
		kts_stop
		unset KUBECONFIG
	fi
	teardown_sbx_env
}

# agent-loop (fake-eliza) for session $1 in the background (agent_fed: input on fd 4); runs
# the first turn, $2, and waits for its snapshot.
agent_start() {
	agent_fed -session "$1"
	echo "$2" >&4
	wait_snapshot
}

# Sends /exit, closes the input and waits for agent-loop; shows its stderr.
agent_stop() {
	echo "/exit" >&4
	fed_end || true
	cat "$BATS_TEST_TMPDIR/err"
}
backups() { ls "$HOME/.local/sandboxed-tools/$1/fs/"backup-*.tar.gz 2>/dev/null; }

kube() { SANDBOX_BACKEND=kubernetes "$@"; }

# ---- kubernetes: API server down, 500s, 409 storm, exec cut, expiry ----

@test "kube: API server down — create, exec, touch fail with a clear message" {
	kts_start
	kts_stop
	run kube sbx-create fdown
	assert_status 111
	assert_contains "sbx-create:"
	assert_contains "fdown"
	run kube sbx-exec fdown -- true
	[ "$status" -ne 0 ]
	assert_contains "sbx-exec:"
	run kube sbx-touch fdown
	[ "$status" -ne 0 ]
	assert_contains "sbx-touch:"
}

@test "kube: 500 on create — clear message, nothing left behind, a retry works" {
	kts_start
	kts_ctl faults '{"fail_requests": 50, "fail_status": 500, "fail_match": "^POST "}' >/dev/null
	run kube sbx-create f500
	[ "$status" -ne 0 ]
	assert_contains "sbx-create:"
	assert_contains "500"
	kts_ctl reset >/dev/null
	run kube sbx-list
	[[ "$output" != *'"f500"'* ]]
	run kube sbx-create f500
	assert_status 0
	run kube sbx-exec f500 -- echo alive
	assert_json '.stdout == "alive\n"'
	kube sbx-delete f500 >/dev/null
}

@test "kube: a 409 storm on touch is retried; a longer one fails clearly and the sandbox stays" {
	kts_start
	kube sbx-create f409 >/dev/null
	kts_ctl faults '{"conflict_updates": 2}' >/dev/null
	run kube sbx-touch f409
	assert_status 0
	kts_ctl faults '{"conflict_updates": 1000}' >/dev/null
	run kube sbx-touch f409
	[ "$status" -ne 0 ]
	assert_contains "sbx-touch:"
	kts_ctl reset >/dev/null
	run kube sbx-exec f409 -- echo still-here
	assert_json '.stdout == "still-here\n"'
	kube sbx-delete f409 >/dev/null
}

@test "kube: an exec stream cut mid-output is an error, not a hang; the sandbox stays usable" {
	kts_start
	kube sbx-create fcut >/dev/null
	kts_ctl faults '{"exec_drop_after_bytes": 1000}' >/dev/null
	run kube sbx-exec fcut -- sh -c 'head -c 100000 /dev/zero'
	[ "$status" -ne 0 ]
	assert_contains "sbx-exec:"
	run kube sbx-exec fcut -- echo after-cut
	assert_status 0
	assert_json '.stdout == "after-cut\n"'
	kube sbx-delete fcut >/dev/null
}

@test "kube: 500s on exec and touch during an agent-loop turn — reported, history intact, next turn works" {
	kts_start
	printf 'run: echo one\n' | OPENAI_MODEL=fake-eliza SANDBOX_BACKEND=kubernetes agent-loop -session kt >/dev/null 2>&1
	nl=$(wc -l <"$(hist kt)")
	[ "$nl" -gt 0 ]
	kts_ctl faults '{"fail_requests": 1000, "fail_status": 500}' >/dev/null
	run bash -c "printf 'run: echo two\n' | OPENAI_MODEL=fake-eliza SANDBOX_BACKEND=kubernetes agent-loop -session kt"
	echo "$output"
	assert_contains "500"
	kts_ctl reset >/dev/null
	# every line written before is still there, and the file still loads
	[ "$(wc -l <"$(hist kt)")" -ge "$nl" ]
	jq -e . "$(hist kt)" >/dev/null
	run bash -c "printf 'run: echo three\n' | OPENAI_MODEL=fake-eliza SANDBOX_BACKEND=kubernetes agent-loop -session kt"
	assert_status 0
	assert_contains "three"
}

# ---- local: disk full, SIGKILL, expiry ----

@test "disk full under the backups: snapshot fails clearly, the earlier backup stays intact" {
	sbx-create dfull >/dev/null
	sbx-exec dfull -- sh -c 'echo first >~/f' >/dev/null
	sbx-snapshot dfull >/dev/null
	first=$(backups dfull)
	[ -n "$first" ]
	sum=$(sha256sum "$first" | cut -d' ' -f1)
	sbx-exec dfull -- sh -c 'head -c 3000000 /dev/urandom >~/big' >/dev/null
	# A private mount namespace: a 1 MiB tmpfs over a copy of the session's fs directory.
	run unshare -m bash -c '
		set -e
		d=$HOME/.local/sandboxed-tools/dfull/fs
		cp -a "$d" "$d.saved"
		mount -t tmpfs -o size=1m tmpfs "$d"
		cp -a "$d.saved/." "$d/"
		sbx-snapshot dfull'
	[ "$status" -ne 0 ]
	assert_contains "sbx-snapshot:"
	rm -rf "$HOME/.local/sandboxed-tools/dfull/fs.saved"
	[ "$(backups dfull)" = "$first" ]
	[ "$(sha256sum "$first" | cut -d' ' -f1)" = "$sum" ]
	sbx-delete dfull >/dev/null
	sbx-create dfull >/dev/null
	run sbx-restore dfull
	assert_status 0
	run sbx-exec dfull -- sh -c 'cat ~/f'
	assert_json '.stdout == "first\n"'
}

@test "disk full under the history: the turn reports it, the lines already written stay loadable" {
	turn hfull 'run: echo one'
	h=$(hist hfull)
	cp "$h" "$BATS_TEST_TMPDIR/before"
	run unshare -m bash -c '
		set -e
		d=$(dirname "$1")
		cp -a "$d" "$d.saved"
		mount -t tmpfs -o size=64k tmpfs "$d"
		cp -a "$d.saved/." "$d/"
		head -c $((60 * 1024)) /dev/zero >"$d/filler" || true
		printf "run: head -c 20000 /dev/zero | tr \"\\\\0\" x\n" | OPENAI_MODEL=fake-eliza agent-loop -session hfull
		' _ "$h"
	echo "$output"
	[ "$status" -ne 0 ] || [[ "$output" == *"No space left"* ]]
	assert_contains "space"
	rm -rf "$(dirname "$h").saved"
	# outside the namespace nothing changed: the history is the one before
	cmp "$h" "$BATS_TEST_TMPDIR/before"
	run bash -c "printf 'run: echo two\n' | OPENAI_MODEL=fake-eliza agent-loop -session hfull"
	assert_status 0
	assert_contains "two"
}

@test "SIGKILL of agent-loop mid-step: the history stays loadable and the session resumes" {
	turn kill9 'run: echo one'
	n=$(wc -l <"$(hist kill9)")
	agent_fed -session kill9
	echo "run: sleep 30.$$" >&4
	wait_until pgrep -f -x "sleep 30.$$"
	kill -9 "$FED_PID"
	fed_end || true
	# the file loads (a torn last line is skipped with a warning, never an error)
	run bash -c "printf 'run: echo resumed\n' | OPENAI_MODEL=fake-eliza agent-loop -session kill9"
	assert_status 0
	assert_contains "resumed"
	[ "$(wc -l <"$(hist kill9)")" -gt "$n" ]
	pkill -f -x "sleep 30.$$" || true
}

@test "the sandbox expires between turns: the next turn makes a new one from the latest backup" {
	turn exp2 'run: echo one'
	nl=$(wc -l <"$(hist exp2)")
	for n in $(sbx-list | jq -r .name); do sbx-delete "$n" >/dev/null; done
	run bash -c "printf 'run: echo again\n' | OPENAI_MODEL=fake-eliza agent-loop -session exp2"
	echo "$output"
	assert_status 0
	assert_contains "again"
	assert_contains "restoring filesystem from latest backup"
	[ "$(wc -l <"$(hist exp2)")" -gt "$nl" ]
}

@test "LLM call fails (500): a clear message, the history keeps every earlier line" {
	turn llm5 'run: echo one'
	cp "$(hist llm5)" "$BATS_TEST_TMPDIR/before"
	start_stub '{"status":500,"json":{"error":{"message":"upstream exploded"}},"repeat":true}'
	# (SBX_TEST_TIME_SCALE: llm-chat's four retries happen, their waits are not slept out)
	run bash -c "printf 'hello\n' | SBX_TEST_TIME_SCALE=0.01 OPENAI_MODEL=m agent-loop -session llm5"
	echo "$output"
	assert_contains "500"
	[ "$(request_count)" = 5 ]	# llm-chat's four retries
	head -c "$(stat -c %s "$BATS_TEST_TMPDIR/before")" "$(hist llm5)" | cmp - "$BATS_TEST_TMPDIR/before"
}

@test "the sandbox disappears mid-turn (expiry while a tool runs): the call fails, is never run again, the next one recreates it, nothing is left" {
	agent_start midexp "run: echo v1 > ~/f"
	echo "run: sleep 27.$$; echo never" >&4
	wait_until pgrep -f -x "sleep 27.$$"
	sbx-delete midexp >/dev/null	# what the supervisor does at the shutdown time
	echo "run: cat ~/f" >&4
	agent_stop
	# the interrupted call is answered with the reason and never run again in a new sandbox
	jq -s -e '[.[] | select(.role == "tool") | .content][1] ==
		"Error calling tool \"run_command\": failed to run tool: sandbox midexp went away during the command"' "$(hist midexp)"
	run ! grep -q never "$BATS_TEST_TMPDIR/out"
	run ! jq -s -e 'any(.[]; .role == "tool" and (.content | contains("never")))' "$(hist midexp)"
	grep -q "sandbox midexp went away while the tool ran; the call is not repeated" "$BATS_TEST_TMPDIR/err"
	# the next call sees the restored home
	jq -s -e '.[-2].content | startswith("stdout:\nv1\n")' "$(hist midexp)"
	# nothing left behind: no sandbox, no command
	[ -z "$(sbx-list | jq -r 'select(.name == "midexp") | .name')" ]
	run ! pgrep -f -x "sleep 27.$$"
}

@test "sbx-tool: a sandbox gone while the tool runs exits 102 with the message, one that was not there exits 101" {
	sbx-create gone >/dev/null
	call='{"id":"c1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"sleep 29.'$$'; echo never\"}"}}'
	sbx-tool gone <<<"$call" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	wait_until pgrep -f -x "sleep 29.$$"
	sbx-delete gone >/dev/null
	st=0
	finish "$pid" || st=$?
	echo "sbx-tool exited $st"; cat "$BATS_TEST_TMPDIR/err"
	[ "$st" = 102 ]
	run jq -r .content "$BATS_TEST_TMPDIR/out"
	[ "$output" = 'Error calling tool "run_command": failed to run tool: sandbox gone went away during the command' ]
	run sbx-tool gone <<<"$call"
	assert_status 101
	assert_contains "sandbox gone not found"
	run sbx-exec gone -- true
	assert_status 101
}

@test "disk full during a restore: a clear error, the backup intact, the sandbox usable" {
	# Everything in a private mount namespace whose state directory is a 2 MiB tmpfs, so the
	# sandbox home (backed by it) fills up while a 3 MB backup is extracted.
	sbx-create rfull >/dev/null
	sbx-exec rfull -- sh -c 'head -c 3000000 /dev/urandom >~/big; echo small >~/a' >/dev/null
	sbx-snapshot rfull >/dev/null
	b=$(backups rfull)
	sum=$(sha256sum "$b" | cut -d' ' -f1)
	sbx-delete rfull >/dev/null
	run unshare -m bash -c '
		set -e
		mount -t tmpfs -o size=2m tmpfs "$XDG_STATE_HOME"
		sbx-create rfull >/dev/null
		status=0
		sbx-restore rfull || status=$?
		echo "restore-status=$status"
		sbx-exec -raw rfull -- sh -c "echo still-usable"
		sbx-delete rfull >/dev/null'
	assert_contains "sbx-restore:"
	[[ "$output" != *"restore-status=0"* ]]
	assert_contains "still-usable"
	[ "$(backups rfull)" = "$b" ]
	[ "$(sha256sum "$b" | cut -d' ' -f1)" = "$sum" ]
	# The half-restored home is marked: no snapshot may save it (and prune the good one)
	# until a restore completes.
	[ -s "$HOME/.local/sandboxed-tools/rfull/fs/.restore-incomplete" ]
	sbx-create rfull >/dev/null
	run sbx-snapshot rfull
	assert_status 111
	assert_contains "the home of sandbox rfull is only partly restored"
	[ "$(backups rfull)" = "$b" ]
	# whatever the mark holds (here garbage), it still stops the snapshot
	head -c 64 /dev/urandom >"$HOME/.local/sandboxed-tools/rfull/fs/.restore-incomplete"
	run sbx-snapshot rfull
	assert_status 111
	assert_contains "only partly restored"
	run sbx-restore rfull
	assert_status 0
	[ ! -e "$HOME/.local/sandboxed-tools/rfull/fs/.restore-incomplete" ]
	run sbx-snapshot rfull
	assert_status 0
}

@test "a backup that fails to extract (disk full) falls back to the previous good one, alone; the mark goes" {
	sbx-create rfb >/dev/null
	sbx-exec rfb -- sh -c 'echo small >~/a' >/dev/null
	sbx-snapshot rfb >/dev/null
	fs=$HOME/.local/sandboxed-tools/rfb/fs
	old=$fs/backup-20000101T000000.tar.gz	# an older name, so the next snapshot is newer
	mv "$(backups rfb)" "$old"
	mv "$(ls "$fs"/backup-*.sha256)" "$old.sha256"
	sbx-exec rfb -- sh -c 'head -c 3000000 /dev/urandom >~/big; echo later >~/b' >/dev/null
	sbx-snapshot rfb >/dev/null
	new=$(backups rfb | tail -n 1)
	[ "$new" != "$old" ]
	sbx-delete rfb >/dev/null
	# a 2 MiB state directory: the newest (3 MB) cannot be extracted, the older one can
	run unshare -m bash -c '
		set -e
		mount -t tmpfs -o size=2m tmpfs "$XDG_STATE_HOME"
		sbx-create rfb >/dev/null
		sbx-restore rfb
		echo "restore-status=$?"
		sbx-exec -raw rfb -- sh -c "cd ~ && echo home: \$(ls -A) \$(cat a)"
		sbx-delete rfb >/dev/null'
	echo "$output"
	assert_contains "restore-status=0"
	assert_contains "sbx-restore: warning: skipping backup $new: cannot be extracted: "
	assert_contains "\"restored\":\"$old\""
	# only the older backup's files: the partial newer ones were emptied out first
	[ "${lines[-1]}" = "home: a small" ]
	[ ! -e "$fs/.restore-incomplete" ]
}

@test "an unfinished restore is finished first: agent-loop restores again before the next turn" {
	agent_start part "run: echo keep > ~/a"
	b=$(backups part)
	# as an interrupted restore leaves things: the mark, and a home missing part of the backup
	sbx-exec part -- rm /home/clawtainer/a >/dev/null
	echo "$b" >"$HOME/.local/sandboxed-tools/part/fs/.restore-incomplete"
	echo "run: cat ~/a" >&4
	agent_stop
	grep -q "the last restore into sandbox part (from $b) did not finish; restoring again" "$BATS_TEST_TMPDIR/err"
	jq -s -e '.[-2].content | startswith("stdout:\nkeep\n")' "$(hist part)"
	[ ! -e "$HOME/.local/sandboxed-tools/part/fs/.restore-incomplete" ]
}

@test "kube: the LLM call fails (500) on the kubernetes backend — clear message, history intact, no Sandbox left" {
	kts_start
	turn kllm 'run: echo one' -backend kubernetes
	cp "$(hist kllm)" "$BATS_TEST_TMPDIR/before"
	grep -q '"tool_call_id":"eliza-run-1"' "$BATS_TEST_TMPDIR/before"
	start_stub '{"status":500,"json":{"error":{"message":"upstream exploded"}},"repeat":true}'
	run bash -c "printf 'run: echo two\n' | SBX_TEST_TIME_SCALE=0.01 OPENAI_MODEL=m agent-loop -backend kubernetes -session kllm"
	assert_status 111
	assert_contains "failed to call LLM"
	assert_contains "500"
	[ "$(request_count)" = 5 ]
	head -c "$(stat -c %s "$BATS_TEST_TMPDIR/before")" "$(hist kllm)" | cmp - "$BATS_TEST_TMPDIR/before"
	run sbx-list -backend kubernetes
	[ -z "$output" ]
}

# ---- issue 28: history and state (kill -9 mid-tool and mid-history, a full history disk,
# garbage history and spec, the create/probe race) ----

@test "create vs liveness probes: 200 creates against a tight probe loop all succeed" {
	lock=$XDG_STATE_HOME/sbx/default/race/lock
	# what a liveness probe does (is_alive: open the sandbox's lock, try it, let go), as fast
	# as it goes, and sbx-list, which probes every sandbox, in a loop beside it
	/usr/bin/python3 -c '
import fcntl, os, sys
while True:
    try:
        fd = os.open(sys.argv[1], os.O_RDWR)
    except OSError:
        continue
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass
    os.close(fd)' "$lock" &
	probe=$!
	bash -c 'while :; do sbx-list >/dev/null 2>&1; done' &
	lister=$!
	fails=0
	for _ in $(seq 200); do
		sbx-create race >/dev/null 2>>"$BATS_TEST_TMPDIR/create.err" || fails=$((fails + 1))
		sbx-delete race >/dev/null
	done
	kill "$probe" "$lister"
	wait "$probe" "$lister" || true
	sort "$BATS_TEST_TMPDIR/create.err" | uniq -c
	[ "$fails" = 0 ]
}

# every_call_answered N: in request N to the stub, each assistant's tool calls are answered by
# tool messages right after it (what OpenAI-compatible endpoints require; 400 otherwise).
every_call_answered() {
	request "$1" | jq -e '.body.messages | reduce .[] as $m ({open: [], ok: true};
		if $m.role == "tool" then .open -= [$m.tool_call_id]
		else (if .open != [] then .ok = false else . end) | .open = [$m.tool_calls[]?.id] end)
		| .ok and .open == []' >/dev/null
}

# every_line_parses FILE: each line of FILE is a JSON message (none torn, none glued).
every_line_parses() { jq -e -s 'all(.[]; type == "object" and (.role | type) == "string")' "$1" >/dev/null; }

@test "kill -9 mid-tool: the resumed session answers the call as interrupted, never runs it again, never sends it unanswered" {
	start_stub "$(stub_call c1 run_command '{"command":"echo ran >>~/count; sleep 31.'$$'"}')" \
		"$(stub_text 'after the crash')"
	OPENAI_MODEL=m agent_fed -session kmid
	echo "go" >&4
	wait_until pgrep -f -x "sleep 31.$$"
	kill -9 "$FED_PID"
	fed_end || true
	run bash -c "printf 'next\n' | OPENAI_MODEL=m agent-loop -session kmid"
	echo "$output"
	assert_status 0
	assert_contains "after the crash"
	[ "$(request_count)" = 2 ]
	every_call_answered 2
	assert_contains "agent-loop: warning: 1 tool call in $(hist kmid) had no result"
	request 2 | jq -e '.body.messages[-2] | .role == "tool" and .tool_call_id == "c1" and
		(.content | startswith("Error calling tool \"run_command\": the call was interrupted"))'
	every_line_parses "$(hist kmid)"
	# the call ran once, before the kill: never again
	run sbx-exec -raw kmid -- sh -c 'cat ~/count'
	[ "$output" = ran ]
	sbx-delete kmid >/dev/null
}

@test "kill -9 mid-history: a torn tool message after an unanswered call goes aside; the session resumes whole" {
	start_stub "$(stub_call c1 run_command '{"command":"sleep 32.'$$'"}')" "$(stub_text 'resumed whole')"
	OPENAI_MODEL=m agent_fed -session khist
	echo "go" >&4
	wait_until pgrep -f -x "sleep 32.$$"
	kill -9 "$FED_PID"
	fed_end || true
	sbx-delete khist >/dev/null
	# what a kill (or power loss) in the middle of appending the tool message leaves
	printf '{"role":"tool","content":"stdout:\\npart' >>"$(hist khist)"
	run bash -c "printf 'next\n' | OPENAI_MODEL=m agent-loop -session khist"
	echo "$output"
	assert_status 0
	assert_contains "resumed whole"
	every_call_answered 2
	assert_contains "agent-loop: warning: moved 1 bad line of $(hist khist) aside to $(hist khist).corrupt"
	run ! grep -q part <<<"$(request 2)"
	[ "$(cat "$(hist khist).corrupt")" = '{"role":"tool","content":"stdout:\npart' ]
	every_line_parses "$(hist khist)"
}

@test "disk full while appending history: the half-written line is cut, the next run resumes whole" {
	start_stub "$(stub_call c1 run_command '{"command":"head -c 20000 /dev/zero | tr \"\\\\0\" x"}')" \
		"$(stub_text 'space again')"
	turn hdisk 'hello' 	# (eliza: makes the session and its system prompt)
	h=$(hist hdisk)
	run unshare -m bash -c '
		d=$(dirname "$1")
		cp -a "$d" "$d.saved"
		mount -t tmpfs -o size=64k tmpfs "$d"
		cp -a "$d.saved/." "$d/"
		head -c $((56 * 1024)) /dev/zero >"$d/filler"
		printf "go\n" | OPENAI_MODEL=m agent-loop -session hdisk
		echo "first-status=$?"
		cp "$1" "$2/after-full"
		rm "$d/filler"
		printf "next\n" | OPENAI_MODEL=m agent-loop -session hdisk
		echo "second-status=$?"
		cp "$1" "$2/after-next"
		' _ "$h" "$BATS_TEST_TMPDIR"
	echo "$output"
	rm -rf "$(dirname "$h").saved"
	assert_contains "No space left on device"
	assert_contains "first-status=111"
	# the failed append left no torn line behind
	every_line_parses "$BATS_TEST_TMPDIR/after-full"
	[ "$(tail -c 1 "$BATS_TEST_TMPDIR/after-full" | od -An -c | tr -d ' ')" = '\n' ]
	assert_contains "second-status=0"
	assert_contains "space again"
	[ "$(request_count)" = 2 ]
	every_call_answered 2
	every_line_parses "$BATS_TEST_TMPDIR/after-next"
}

@test "a garbage line in the middle of the history goes aside to a named .corrupt file; the session goes on" {
	turn hgarb 'run: echo one'
	turn hgarb 'run: echo two'
	n=$(wc -l <"$(hist hgarb)")
	sed -i '4s/.*/{"role": true, garbage/' "$(hist hgarb)"
	run bash -c "printf 'run: echo three\n' | OPENAI_MODEL=fake-eliza agent-loop -session hgarb"
	echo "$output"
	assert_status 0
	assert_contains "three"
	assert_contains "agent-loop: warning: moved 1 bad line of $(hist hgarb) aside to $(hist hgarb).corrupt (line 4: "
	[ "$(cat "$(hist hgarb).corrupt")" = '{"role": true, garbage' ]
	every_line_parses "$(hist hgarb)"
	[ "$(wc -l <"$(hist hgarb)")" -gt "$((n - 1))" ]
	# nothing more to set right the next time
	run bash -c "printf 'run: echo four\n' | OPENAI_MODEL=fake-eliza agent-loop -session hgarb"
	assert_status 0
	[[ "$output" != *"warning"* ]]
}

@test "a garbage spec.json: sbx-list shows the sandbox broken, sbx-touch says what to do, the next turn replaces it from the last backup" {
	agent_start gspec "run: echo keep > ~/a"
	kill -9 "$FED_PID"	# the sandbox stays, as after a crash
	fed_end || true
	spec=$XDG_STATE_HOME/sbx/default/gspec/spec.json
	echo 'garbage{' >"$spec"
	run sbx-list
	assert_status 0
	assert_json '.name == "gspec" and .state == "broken" and .ready == false and
		(.reason | startswith("corrupt '"$spec"': "))'
	run sbx-touch gspec
	assert_status 111
	assert_contains "sbx-touch: "
	assert_contains "sandbox gspec is broken (corrupt $spec: "
	assert_contains "sbx-create gspec replaces it, sbx-delete gspec removes it"
	# commands still run in it: its home stays reachable until it is replaced
	run sbx-exec -raw gspec -- sh -c 'cat ~/a'
	[ "$output" = keep ]
	run bash -c "printf 'run: cat ~/a\n' | OPENAI_MODEL=fake-eliza agent-loop -session gspec"
	echo "$output"
	assert_status 0
	jq -s -e '.[-2].content | startswith("stdout:\nkeep\n")' "$(hist gspec)"
	run sbx-list
	[[ "$output" != *broken* ]]
	# sbx-create alone says what it did
	sbx-create gspec >/dev/null
	echo '{"name":"other"}' >"$spec"
	run sbx-create gspec
	assert_status 0
	assert_contains "sbx-create: warning: sandbox gspec was broken (corrupt $spec: it is not the spec of sandbox gspec): replaced it"
	run sbx-list
	assert_json '.name == "gspec" and .ready == true and .state == "running"'
	sbx-delete gspec >/dev/null
}

# ---- backups: a crash, a bad sidecar, a full disk or junk never costs a good backup ----

# kill_at PROG: agent-loop run from a copy of the programs in $BATS_TEST_TMPDIR/kbin (it runs
# its sbx-* from its own directory), where PROG first kills agent-loop (kill -9 of its
# parent) and then does what $KILL_THEN says (nothing: PROG never ran). Only the first call.
kill_at() {
	local k=$BATS_TEST_TMPDIR/kbin f
	mkdir -p "$k"
	for f in "$SBX_BIN"/*; do ln -sf "$f" "$k/"; done
	rm -f "$k/agent-loop" "$k/$1"
	cp "$SBX_BIN/agent-loop" "$k/agent-loop"
	cat >"$k/$1" <<-SH
	#!/bin/sh
	if [ -e "$k/fired" ]; then exec "$SBX_BIN/$1" "\$@"; fi
	: >"$k/fired"
	kill -9 "\$PPID"
	${KILL_THEN:-exit 137}
	SH
	chmod +x "$k/$1"
}

# A session whose backup holds ~/keep ("precious"), its sandbox gone (expired).
session_with_keep() {
	turn "$1" 'run: echo precious > ~/keep'
	[ -n "$(backups "$1")" ]
	sbx-delete "$1" >/dev/null
}

# Five more turns (a snapshot each) and then one that reads ~/keep: what the user has then.
five_turns_then_keep() {
	local i
	for i in 1 2 3 4 5; do turn "$1" "run: echo turn$i > ~/t$i"; done
	printf 'run: cat ~/keep\n' | eliza -session "$1" 2>&1
}

@test "kill -9 of agent-loop before sbx-create: the next run restores, nothing is pruned wrongly" {
	session_with_keep kbc
	kill_at sbx-create
	printf 'run: true\n' | OPENAI_MODEL=fake-eliza "$BATS_TEST_TMPDIR/kbin/agent-loop" -session kbc >/dev/null 2>&1 || true
	run five_turns_then_keep kbc
	assert_contains "precious"
}

@test "kill -9 of agent-loop between sbx-create and sbx-restore: the next run restores before any command" {
	session_with_keep kcr
	kill_at sbx-restore
	run bash -c "printf 'run: true\n' | OPENAI_MODEL=fake-eliza '$BATS_TEST_TMPDIR/kbin/agent-loop' -session kcr"
	[ "$status" -ne 0 ]
	# the sandbox is there, made new, never restored: the mark says so
	[ -n "$(sbx-list | jq -r 'select(.name == "kcr") | .name')" ]
	[ -e "$HOME/.local/sandboxed-tools/kcr/fs/.restore-owed" ]
	# a snapshot of that empty home is refused
	run sbx-snapshot kcr
	assert_status 111
	assert_contains "owes a restore"
	run bash -c "printf 'run: cat ~/keep\n' | OPENAI_MODEL=fake-eliza agent-loop -session kcr 2>&1"
	assert_contains "never restored from the session's backups; restoring now"
	assert_contains "precious"
	[ ! -e "$HOME/.local/sandboxed-tools/kcr/fs/.restore-owed" ]
	run five_turns_then_keep kcr
	assert_contains "precious"
}

@test "kill -9 of agent-loop and of its restore mid-way: the next run restores, the backups stay" {
	session_with_keep kmr
	# agent-loop dies at the restore, and the restore itself is killed at once
	KILL_THEN="exec timeout -s KILL 0.05 '$SBX_BIN/sbx-restore' \"\$@\"" kill_at sbx-restore
	run bash -c "printf 'run: true\n' | OPENAI_MODEL=fake-eliza '$BATS_TEST_TMPDIR/kbin/agent-loop' -session kmr"
	[ "$status" -ne 0 ]
	run five_turns_then_keep kmr
	assert_contains "precious"
}

@test "kill -9 of sbx-snapshot: its temporary goes with the next snapshot, not a minute later" {
	sbx-create ksn >/dev/null
	sbx-exec -raw ksn -- sh -c 'head -c 40000000 /dev/urandom > ~/big.bin' >/dev/null
	fs=$HOME/.local/sandboxed-tools/ksn/fs
	sbx-snapshot ksn >/dev/null 2>&1 &
	bg=$!
	wait_until -p "$bg" sh -c "ls '$fs' 2>/dev/null | grep -q '\.tmp\$'"
	kill -9 "$bg"
	wait "$bg" || true
	ls "$fs" | grep -q '\.tmp$'
	sbx-exec -raw ksn -- sh -c 'rm ~/big.bin'
	sbx-snapshot ksn >/dev/null
	run ls "$fs"
	[[ $output != *.tmp* ]]
	# and -prune, too
	: >"$fs/backup-20200101T000000.tar.gz.ABCDEF.tmp"
	sbx-snapshot -prune ksn >/dev/null
	[ ! -e "$fs/backup-20200101T000000.tar.gz.ABCDEF.tmp" ]
}

@test "disk full on HOME during a restore: agent-loop says disk full and runs no command on the empty home" {
	turn dfh 'run: head -c 3000000 /dev/urandom > ~/big; echo precious > ~/keep'
	b=$(backups dfh)
	sbx-delete dfh >/dev/null
	run unshare -m bash -c '
		set -e
		mount -t tmpfs -o size=2m tmpfs "$XDG_STATE_HOME"
		printf "run: echo ran-on-empty > ~/marker; cat ~/marker\n" | OPENAI_MODEL=fake-eliza agent-loop -session dfh 2>&1 || true
		sbx-delete dfh >/dev/null 2>&1 || true'
	echo "$output"
	assert_contains "disk full"
	[[ $output != *"none of the"* ]]
	# the command never ran: no tool output with its text
	run ! jq -s -e 'any(.[]; .role == "tool" and (.content | contains("stdout:\nran-on-empty")))' "$(hist dfh)"
	[ "$(backups dfh)" = "$b" ]
	run bash -c "printf 'run: cat ~/keep\n' | OPENAI_MODEL=fake-eliza agent-loop -session dfh 2>&1"
	assert_contains "precious"
}

@test "every sidecar wrong, the archives intact: restored from the archives, never pruned" {
	turn bsc 'run: echo precious > ~/keep'
	turn bsc 'run: echo second > ~/second'
	for s in "$HOME"/.local/sandboxed-tools/bsc/fs/*.sha256; do sed -i 's/^./0/; s/^\(.\)./\10/' "$s"; done
	sbx-delete bsc >/dev/null
	run bash -c "printf 'run: cat ~/keep\n' | OPENAI_MODEL=fake-eliza agent-loop -session bsc 2>&1"
	assert_contains "precious"
	[[ $output != *"starting with a fresh sandbox"* ]]
	run five_turns_then_keep bsc
	assert_contains "precious"
}

@test "50 junk backup-2099… files take no kept slot: five real backups stay" {
	turn jnk 'run: echo precious > ~/keep'
	fs=$HOME/.local/sandboxed-tools/jnk/fs
	for i in $(seq 10 59); do echo junk >"$fs/backup-209901${i:0:1}${i:1:1}T000000.tar.gz"; done
	for i in 1 2 3 4 5 6; do turn jnk "run: echo $i > ~/n"; done
	real=$(ls "$fs" | grep -v '^backup-2099' | grep -c '\.tar\.gz$')
	[ "$real" = 5 ]
	[ "$(ls "$fs" | grep -c '^backup-2099')" = 50 ]
	sbx-delete jnk >/dev/null
	run bash -c "printf 'run: cat ~/keep; cat ~/n\n' | OPENAI_MODEL=fake-eliza agent-loop -session jnk 2>&1"
	assert_contains "precious"
}

@test "snapshots in the same second never share a name: what each printed stays true" {
	sbx-create sss >/dev/null
	for i in 1 2 3 4; do
		sbx-exec -raw sss -- sh -c "echo $i > ~/v"
		sbx-snapshot sss >"$BATS_TEST_TMPDIR/s$i"
	done
	for i in 1 2 3 4; do
		p=$(jq -r .path "$BATS_TEST_TMPDIR/s$i")
		[ "$(sha256sum "$p" | cut -d' ' -f1)" = "$(jq -r .sha256 "$BATS_TEST_TMPDIR/s$i")" ]
		[ "$(tar -xzOf "$p" ./v)" = "$i" ]
	done
	# sorted by name they come in the order made, after an upstream name of the same second
	p1=$(jq -r .path "$BATS_TEST_TMPDIR/s1")
	up=$(basename "$p1" | sed 's/_[0-9]*\.tar\.gz$/.tar.gz/')
	cp "$p1" "$(dirname "$p1")/$up"
	[ "$(ls "$(dirname "$p1")" | grep '\.tar\.gz$' | head -1)" = "$up" ]
}

@test "kill -9 of agent-loop at its snapshot: the turn's work stays in the sandbox and the next snapshot saves it" {
	session_with_keep ksa
	kill_at sbx-snapshot
	run bash -c "printf 'run: echo late > ~/late\n' | OPENAI_MODEL=fake-eliza '$BATS_TEST_TMPDIR/kbin/agent-loop' -session ksa"
	[ "$status" -ne 0 ]
	run bash -c "printf 'run: cat ~/keep ~/late\n' | OPENAI_MODEL=fake-eliza agent-loop -session ksa 2>&1"
	assert_contains "reusing the ready sandbox ksa"
	assert_contains "precious"
	assert_contains "late"
	newest=$(backups ksa | tail -n 1)
	[ "$(tar -xzOf "$newest" ./late)" = late ]
	[ "$(tar -xzOf "$newest" ./keep)" = precious ]
}

# ---- sbx-cp out over an existing file (issue 28, item 2) ----

@test "kill -9 of sbx-cp out overwriting a 30 MB host file: the old file or the new one, whole; later runs remove what killed ones left" {
	local d=$BATS_TEST_TMPDIR/cp i ms t sum kept=0 boot
	mkdir "$d"
	sbx-create cpkill >/dev/null
	sbx-exec -raw cpkill -- sh -c 'head -c 30M /dev/urandom >~/big'
	head -c 30M /dev/urandom >"$d/old"
	t=$(date +%s%N)
	sbx-cp cpkill:big "$d/new" >/dev/null
	ms=$((($(date +%s%N) - t) / 1000000))
	old=$(sha256sum <"$d/old")
	new=$(sha256sum <"$d/new")
	for ((i = 0; i < 25; i++)); do
		cp "$d/old" "$d/big"
		sbx-cp cpkill:big "$d/big" >/dev/null 2>&1 &
		sleep "$(awk -v ms="$ms" -v r="$RANDOM" 'BEGIN { printf "%.3f", ms * 1.2 * r / 32768 / 1000 }')"	# a random moment in a copy (not a wait)
		kill -9 $! 2>/dev/null || true
		wait $! || true
		sum=$(sha256sum <"$d/big")
		[ "$sum" = "$old" ] || [ "$sum" = "$new" ]
		[ "$sum" = "$new" ] || kept=$((kept + 1))
	done
	echo "kills that left the old file: $kept of 25" >&2
	# what killed runs left, one of a maker long gone and one of a live process: the next copy
	# into the directory removes the first and keeps the second
	boot=$(head -c 8 /proc/sys/kernel/random/boot_id)
	mkdir "$d/.sbx-cp-$boot-999999999-1.d"
	touch "$d/.sbx-cp-$boot-999999999-1.d/part" "$d/.sbx-cp-00000000-$$-1.f"
	sleep 300 3>&- &
	live=".sbx-cp-$boot-$!-$(awk '{ print $22 }' "/proc/$!/stat").f"
	touch "$d/$live"
	run sbx-cp cpkill:big "$d/big"
	kill $!
	assert_status 0
	[ "$(sha256sum <"$d/big")" = "$new" ]
	run env LC_ALL=C ls -A "$d"
	[ "$output" = "$(printf '%s\n' "$live" big new old)" ]
}
