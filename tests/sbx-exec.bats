#!/usr/bin/env bats
# sbx-exec: JSON and raw modes, request documents, caps, timeouts, signals, bad input.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	setup_sbx_env
	sbx-create demo >/dev/null
}
teardown() { teardown_sbx_env; }

@test "JSON result with both streams and the exit code, passed through as the status" {
	run sbx-exec demo -- sh -c 'echo out; echo err >&2; exit 3'
	assert_status 3
	assert_json '.stdout == "out\n" and .stderr == "err\n" and .exit_code == 3'
	assert_json 'has("timed_out") | not'
	run sbx-exec demo sh -c 'echo no-dashes'
	assert_json '.stdout == "no-dashes\n"'
}

@test "-raw streams bytes both ways and exits with the command's status" {
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/blob"
	want=$(sha256sum <"$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)
	got=$(sbx-exec -raw demo -- sha256sum <"$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)
	[ "$want" = "$got" ]
	sbx-exec -raw demo -- cat <"$BATS_TEST_TMPDIR/blob" >"$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/blob" "$BATS_TEST_TMPDIR/back"
	run sbx-exec -raw demo -- sh -c 'exit 42'
	assert_status 42
}

@test "a request document on stdin" {
	run sbx-exec demo <<<'{"command":["sh","-c","cat; echo \"[$X]\"; pwd"],"stdin":"in\n","env":{"X":"y"},"workdir":"/tmp"}'
	assert_status 0
	assert_json '.stdout == "in\n[y]\n/tmp\n"'
	run sbx-exec demo <<<'{"command":["sleep","5"],"timeout":"200ms"}'
	assert_status 124
	assert_json '.timed_out == true and .exit_code == 124'
}

@test "malformed request documents are usage errors" {
	run sbx-exec demo <<<'not json'
	assert_status 100
	assert_contains "sbx-exec: invalid request: not valid JSON"
	run sbx-exec demo <<<'{"command":"ls"}'
	assert_status 100
	assert_contains '"command" must be a non-empty array of strings'
	run sbx-exec demo <<<'{"command":[]}'
	assert_status 100
	run sbx-exec demo <<<'{"command":["ls"],"stdin":5}'
	assert_status 100
	run sbx-exec demo <<<'{"command":["ls"],"timeout":"soon"}'
	assert_status 100
	run sbx-exec demo <<<'{"command":["ls"],"env":{"A=B":"c"}}'
	assert_status 100
	run sbx-exec demo <<<'[1,2]'
	assert_status 100
	run sbx-exec -raw demo
	assert_status 100
}

@test "a request string holding a NUL byte is refused, never cut short" {
	sbx-create demo >/dev/null
	run --separate-stderr sbx-exec demo <<<'{"command":["sh","-c","echo ran > ~/ran\u0000; echo other"]}'
	assert_status 100
	[ "$stderr" = 'sbx-exec: invalid request: a string of "command" holds a NUL byte' ]
	run --separate-stderr sbx-exec demo <<<'{"command":["true"],"env":{"A":"b\u0000c"}}'
	assert_status 100
	[ "$stderr" = 'sbx-exec: invalid request: a string of "env" holds a NUL byte' ]
	run --separate-stderr sbx-exec demo <<<'{"command":["true"],"workdir":"/tmp\u0000/x"}'
	assert_status 100
	[ "$stderr" = 'sbx-exec: invalid request: a string of "workdir" holds a NUL byte' ]
	run sbx-exec -raw demo -- sh -c 'ls ~'
	[ -z "$output" ]
	# stdin is bytes: a NUL there is data.
	run sbx-exec demo <<<'{"command":["od","-An","-c"],"stdin":"a\u0000b"}'
	assert_status 0
	assert_json '.stdout | test("a *\\\\0 *b")'
}

@test "a request's own timeout wins over -timeout, \"0s\" (none) too" {
	sbx-create demo >/dev/null
	run sbx-exec -timeout 200ms demo <<<'{"command":["sh","-c","sleep 1; echo done"],"timeout":"0s"}'
	assert_status 0
	assert_json '.stdout == "done\n"'
	run sbx-exec -timeout 10s demo <<<'{"command":["sleep","5"],"timeout":"200ms"}'
	assert_status 124
	run sbx-exec -timeout 200ms demo <<<'{"command":["sleep","5"]}'
	assert_status 124
}

@test "an unknown field in a request is refused, naming it: nothing runs without the timeout it asked for" {
	sbx-create demo >/dev/null
	run --separate-stderr sbx-exec demo <<<'{"command":["sh","-c","echo ran > ~/ran"],"timout":"1s"}'
	assert_status 100
	[ "$stderr" = 'sbx-exec: invalid request: unknown field "timout" (a request has command, stdin, timeout, workdir, env)' ]
	run sbx-exec demo <<<'{"command":["true"],"std\nin":"x"}'
	assert_status 100
	assert_contains 'unknown field "std\nin"'
	run sbx-exec -raw demo -- sh -c 'ls ~'
	[ -z "$output" ]
	run sbx-exec demo <<<'{"command":["echo","ok"],"stdin":"","timeout":"5s","workdir":"/","env":{}}'
	assert_status 0
	assert_json '.stdout == "ok\n"'
}

@test "-stdin passes standard input in JSON mode; otherwise the command reads EOF" {
	run sbx-exec -stdin demo -- cat <<<'hello'
	assert_json '.stdout == "hello\n"'
	run sbx-exec demo -- cat <<<'hello'
	assert_json '.stdout == ""'
}

@test "a command that is not found is 127, one that cannot run is 126" {
	run -127 sbx-exec demo -- no-such-command
	assert_status 127
	assert_json '.exit_code == 127 and (.stderr | contains("cannot run no-such-command"))'
	run sbx-exec demo -- /tmp
	assert_status 126
	assert_contains "Permission denied"
}

@test "commands start in the home; a -workdir that cannot be entered is named, status 126" {
	run sbx-exec -raw demo -- sh -c 'pwd; echo hi > greeting.txt'
	assert_status 0
	[ "$output" = /home/clawtainer ]
	[ "$(cat "$XDG_STATE_HOME/sbx/default/demo/home/greeting.txt")" = hi ]
	run sbx-exec -raw -workdir /nonexistent demo -- true
	assert_status 126
	[ "$output" = "sbx-exec: cannot enter working directory /nonexistent: No such file or directory" ]
	run sbx-exec demo <<<'{"command":["true"],"workdir":"/etc/hostname"}'
	assert_status 126
	assert_json '.exit_code == 126 and .stderr == "sbx-exec: cannot enter working directory /etc/hostname: Not a directory\n"'
}

@test "output beyond the cap is dropped and reported" {
	run sbx-exec -max-output 1K demo -- sh -c 'head -c 100000 /dev/zero | tr "\0" x; echo done >&2'
	assert_status 0
	assert_json '.truncated == true and (.stdout | length) == 1024 and .stderr == "done\n"'
	run sbx-exec -max-output 0 demo -- true
	assert_status 100
}

@test "a timeout kills every process the command started, however it hid" {
	run sbx-exec -timeout 500ms demo -- sh -c 'sleep 301 & setsid sleep 302 & (setsid sh -c "sleep 303 &") ; sleep 304'
	assert_status 124
	assert_json '.timed_out == true'
	run sbx-exec -raw demo -- ps -eo args
	[[ "$output" != *"sleep 30"* ]]
	run sbx-exec -raw -timeout 300ms demo -- sleep 10
	assert_status 124
	assert_contains "timed out after 300ms and was killed"
}

@test "SIGINT and SIGTERM stop the command, leave no orphans and keep the sandbox usable" {
	for sig in INT TERM; do
		sbx-exec -raw demo -- sh -c 'sleep 401 & setsid sleep 402 & echo started; sleep 403' >"$BATS_TEST_TMPDIR/o" &
		pid=$!
		wait_until -p "$pid" grep -q started "$BATS_TEST_TMPDIR/o"
		kill -"$sig" "$pid"
		status=0
		wait "$pid" || status=$?
		if [ "$sig" = INT ]; then [ "$status" -eq 130 ]; else [ "$status" -eq 143 ]; fi
		run sbx-exec -raw demo -- ps -eo args
		[[ "$output" != *"sleep 40"* ]]
	done
	run sbx-exec demo -- echo still-here
	assert_json '.stdout == "still-here\n"'
}

@test "background processes of a command that exits normally keep running" {
	sbx-exec -raw demo -- sh -c 'setsid sleep 500 >/dev/null 2>&1 &'
	run sbx-exec -raw demo -- ps -eo args
	assert_contains "sleep 500"
}

@test "a server started with & keeps answering after its exec returns; its output goes to a capped log" {
	# python's http.server writes an access-log line to stderr per request: a pipe nobody
	# reads any more would fail (EPIPE) or fill, and the request with it
	run sbx-exec demo -- sh -c 'python3 -m http.server -b 127.0.0.1 8000 &' # (port: inside the sandbox's own network namespace)
	assert_status 0
	run sbx-exec -raw demo -- python3 -c '
import time, urllib.request
for i in range(600):
    try:
        urllib.request.urlopen("http://127.0.0.1:8000/", timeout=5).read(); break  # (port: inside the sandbox)
    except OSError:
        time.sleep(0.05)
ok = sum(urllib.request.urlopen("http://127.0.0.1:8000/", timeout=5).status == 200 for _ in range(100))  # (port: inside the sandbox)
print(ok)' # (port: inside the sandbox's own network namespace)
	assert_status 0
	[ "$output" = 100 ]
	run sbx-exec -raw demo -- cat /tmp/sbx-background.log
	[ "$(grep -c '"GET / HTTP/1.1" 200' <<<"$output")" -ge 100 ]
	# a background writer far past the cap: the log stays under it, the writer finishes
	run sbx-exec demo -- sh -c '(head -c 3000000 /dev/zero | tr "\0" x; echo; echo last-line) >&2 &'
	assert_status 0
	wait_until sbx-exec -raw demo -- grep -q last-line /tmp/sbx-background.log
	size=$(sbx-exec -raw demo -- stat -c %s /tmp/sbx-background.log)
	[ "$size" -le $((1024 * 1024 + 65536)) ]
}

@test "output written before the command exits still reaches the caller, in order with 2>&1" {
	run sbx-exec -raw demo -- sh -c 'for i in 1 2 3; do echo out$i; echo err$i >&2; done; head -c 200000 /dev/zero | wc -c'
	assert_status 0
	[ "$output" = "$(printf 'out1\nerr1\nout2\nerr2\nout3\nerr3\n200000')" ]
}

@test "a missing sandbox is status 101; a bad name 100" {
	run sbx-exec nosuch -- true
	assert_status 101
	assert_contains "sbx-exec: unable to run true in sandbox nosuch: sandbox nosuch not found"
	run sbx-exec Bad -- true
	assert_status 100
	run sbx-exec demo
	assert_status 100
}

@test "many concurrent commands in one sandbox all work" {
	for i in $(seq 20); do sbx-exec demo -- sh -c "echo $i" >"$BATS_TEST_TMPDIR/c.$i" & done
	wait
	[ "$(cat "$BATS_TEST_TMPDIR"/c.* | jq -j .stdout | sort -n | tr '\n' ' ')" = "$(seq 20 | tr '\n' ' ')" ]
}

@test "man page examples run" {
	sbx-delete demo >/dev/null
	run_man_examples sbx-exec
}

@test "the programs of every tool call (sbx-create, sbx-exec, sbx-touch, sbx-tool) load neither OpenSSL nor libarchive: their start is each call's cost" {
	for p in sbx-create sbx-exec sbx-touch sbx-tool; do
		run ldd "$SBX_BIN/$p"
		assert_status 0
		run grep -E 'libcrypto|libssl|libarchive' <<<"$output"
		[ "$status" = 1 ] || { echo "$p loads: $output"; false; }
	done
}
