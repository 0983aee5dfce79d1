#!/usr/bin/env bats
# sbx-port: a sandbox's port reached from the host — HTTP, many connections, a large transfer,
# half-close, a sandbox without network, the end of the sandbox, a port nothing listens on,
# -unix, -d / -list / -close, and a user's sandbox.

load helpers

setup() {
	setup_sbx_env
	PORT_PID=
}

teardown() {
	[ -z "$PORT_PID" ] || { kill "$PORT_PID" 2>/dev/null; wait "$PORT_PID" 2>/dev/null; } || true
	if [ -n "${ud-}" ]; then
		as_user sbx-delete demo >/dev/null 2>&1 || true
		rm -rf "$ud"
	fi
	teardown_sbx_env
}

# port_up ARG…: sbx-port ARG… in the background (PORT_PID), once it printed its line: $url.
port_up() {
	sbx-port "$@" >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err" &
	PORT_PID=$!
	wait_until -p "$PORT_PID" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r '.url // empty' "$BATS_TEST_TMPDIR/port.out")
}

# http_up NAME: python3's HTTP server on port 8000 of sandbox NAME's loopback, serving /tmp/www
# (index.html says hello), in the background of a session of its own.
http_up() {
	sbx-exec "$1" -- sh -c 'mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html &&
		setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/http.log 2>&1 </dev/null &' >/dev/null
}

# host_port URL: the port of the host's listener.
host_port() { local p=${1##*:}; echo "${p%/}"; }

@test "an HTTP server inside is reached from the host: the line names the URL" {
	sbx-create demo >/dev/null
	http_up demo
	port_up demo 8000
	run cat "$BATS_TEST_TMPDIR/port.out"
	assert_json '.name == "demo" and .port == 8000 and (.url | test("^http://127\\.0\\.0\\.1:[0-9]+/$")) and .url == "http://" + .listen + "/"'
	wait_until curl -sf -o /dev/null "${url}index.html"
	run curl -sf "${url}index.html"
	assert_status 0
	[ "$output" = hello ]
}

@test "50 connections at once, each answered" {
	sbx-create demo >/dev/null
	http_up demo
	port_up demo 8000
	wait_until curl -sf -o /dev/null "${url}index.html"
	run fifty "$(host_port "$url")"
	assert_status 0
	[ "$output" = 50 ]
}

@test "with few descriptors (ulimit -n 64) 50 connections at once are still all answered" {
	sbx-create demo >/dev/null
	http_up demo
	# more connections than descriptors: the rest wait in the backlog, none is refused
	(ulimit -n 64 && exec sbx-port demo 8000 >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err") &
	PORT_PID=$!
	wait_until -p "$PORT_PID" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r .url "$BATS_TEST_TMPDIR/port.out")
	wait_until curl -sf -o /dev/null "${url}index.html"
	run fifty "$(host_port "$url")"
	assert_status 0
	[ "$output" = 50 ]
}

@test "100 MB come through intact" {
	sbx-create demo >/dev/null
	http_up demo
	port_up demo 8000
	want=$(sbx-exec -raw demo -- sh -c 'head -c 100000000 /dev/urandom >/tmp/www/big && sha256sum </tmp/www/big')
	wait_until curl -sf -o /dev/null "${url}index.html"
	got=$(curl -sf "${url}big" | sha256sum)
	[ "$got" = "$want" ]
}

@test "half-close: the client's end of input reaches the server, which still answers" {
	sbx-create demo >/dev/null
	# echoes until its input ends, then says how much it got, then closes
	sbx-exec -raw demo -- sh -c 'cat >/tmp/echo.py' <<-'EOF'
	import socket
	s = socket.socket()
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("127.0.0.1", 7000))
	s.listen(16)
	while True:
	    c, _ = s.accept()
	    n = 0
	    while True:
	        b = c.recv(65536)
	        if not b:
	            break
	        n += len(b)
	        c.sendall(b)
	    c.sendall(b"count %d\n" % n)
	    c.close()
	EOF
	sbx-exec demo -- sh -c 'setsid nohup python3 /tmp/echo.py >/tmp/echo.log 2>&1 </dev/null &' >/dev/null
	port_up demo 7000
	cat >"$BATS_TEST_TMPDIR/client.py" <<-'EOF'
	import os, socket, sys, threading
	data = os.urandom(1 << 20)
	c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
	def send():
	    c.sendall(data)
	    c.shutdown(socket.SHUT_WR)
	t = threading.Thread(target=send)
	t.start()
	got = bytearray()
	while True:
	    b = c.recv(65536)
	    if not b:
	        break
	    got += b
	t.join()
	sys.exit(0 if got == data + b"count %d\n" % len(data) else 1)
	EOF
	wait_until python3 "$BATS_TEST_TMPDIR/client.py" "$(host_port "$url")"
	run python3 "$BATS_TEST_TMPDIR/client.py" "$(host_port "$url")"
	assert_status 0
}

@test "a sandbox without network is reachable on its port and still reaches nothing" {
	sbx-create demo >/dev/null
	http_up demo
	port_up demo 8000
	wait_until curl -sf -o /dev/null "${url}index.html"
	# nothing new inside: only its loopback, and the host's listener is not there
	run sbx-exec -raw demo -- sh -c "awk -F: 'NR > 2 { print \$1 }' /proc/net/dev | tr -d ' '"
	[ "$output" = lo ]
	run sbx-exec -raw demo -- python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)' "$(host_port "$url")"
	assert_status 1
	assert_contains ConnectionRefusedError
}

@test "a sandbox with -network is reached the same way" {
	sbx-create -network demo >/dev/null
	http_up demo
	port_up demo 8000
	wait_until curl -sf -o /dev/null "${url}index.html"
	[ "$(curl -sf "${url}index.html")" = hello ]
}

@test "the forward ends when the sandbox is deleted: exit 101, saying so" {
	sbx-create demo >/dev/null
	port_up demo 8000
	sbx-delete demo >/dev/null
	status=0
	finish "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 101
	[ "$(cat "$BATS_TEST_TMPDIR/port.err")" = "sbx-port: sandbox demo is gone" ]
}

@test "the forward ends when the sandbox expires" {
	sbx-create -ttl 6s demo >/dev/null
	port_up demo 8000
	status=0
	finish "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 101
	[ "$(cat "$BATS_TEST_TMPDIR/port.err")" = "sbx-port: sandbox demo is gone" ]
}

@test "a port nothing listens on: the client sees a clean close, sbx-port says why and serves on" {
	sbx-create demo >/dev/null
	port_up demo 9
	run python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
c.sendall(b"hello?")
print(repr(c.recv(100)))' "$(host_port "$url")"
	assert_status 0
	[ "$output" = "b''" ]
	wait_until grep -qx "sbx-port: cannot connect to port 9 in sandbox demo: nothing listens there" "$BATS_TEST_TMPDIR/port.err"
	gone "$PORT_PID" && false
	status=0
	terminate "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 143
}

@test "-unix serves on a socket of mode 0600, refuses an existing file, removes it at the end" {
	sbx-create demo >/dev/null
	http_up demo
	# a directory every user may enter, so only the socket's own mode keeps another user out
	ud=$(mktemp -d /tmp/sbx-port-user.XXXXXX)
	chmod 755 "$ud"
	sock=$ud/demo.sock
	port_up -unix "$sock" demo 8000
	run cat "$BATS_TEST_TMPDIR/port.out"
	assert_json ".unix == \"$sock\" and .port == 8000 and (has(\"url\") | not)"
	[ "$(stat -c %a "$sock")" = 600 ]
	wait_until curl -sf -o /dev/null --unix-socket "$sock" http://demo/index.html
	[ "$(curl -sf --unix-socket "$sock" http://demo/index.html)" = hello ]
	# another user of the machine cannot connect
	run setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$sock"
	assert_status 1
	assert_contains PermissionError
	run sbx-port -unix "$sock" demo 8000
	assert_status 111
	assert_contains "Address already in use"
	status=0
	terminate "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 143
	[ ! -e "$sock" ]
}

@test "-d detaches; -list shows it; -close stops it; a second -close finds none" {
	sbx-create demo >/dev/null
	http_up demo
	run sbx-port -d demo 8000
	assert_status 0
	assert_json '.name == "demo" and .port == 8000'
	url=$(jq -r .url <<<"$output")
	wait_until curl -sf -o /dev/null "${url}index.html"
	run sbx-port -list demo
	assert_status 0
	assert_json ".port == 8000 and .url == \"$url\" and .pid > 1"
	pid=$(jq -r .pid <<<"$output")
	run sbx-port -close demo 8000
	assert_status 0
	gone "$pid"
	run curl -s "${url}index.html"
	assert_status 7
	run sbx-port -list demo
	assert_status 0
	[ -z "$output" ]
	run sbx-port -close demo 8000
	assert_status 101
	assert_contains "no detached forward of port 8000 of sandbox demo is open"
}

@test "sbx-list shows each sandbox's detached forwards, and none once they are closed" {
	sbx-create demo >/dev/null
	sbx-create other >/dev/null
	url=$(sbx-port -d demo 8000 | jq -r .url)
	sbx-port -d -unix "$BATS_TEST_TMPDIR/s" demo 9000 >/dev/null
	run sbx-list
	assert_status 0
	printf '%s\n' "$output" | jq -se --arg url "$url" --arg u "$BATS_TEST_TMPDIR/s" '
		(.[0].ports | sort_by(.port)) == [
			{port: 8000, url: $url, listen: ($url | ltrimstr("http://") | rtrimstr("/"))},
			{port: 9000, unix: $u}]
		and .[1].name == "other" and .[1].ports == []' >/dev/null
	sbx-port -close demo 8000
	sbx-port -close demo 9000
	run sbx-list
	printf '%s\n' "$output" | jq -se '.[0].ports == [] and .[1].ports == []' >/dev/null
}

@test "a detached forward holds none of its caller's descriptors: a pipe it inherited ends" {
	sbx-create demo >/dev/null
	# fd 4 is the pipe to cat: cat ends once every holder closed it
	run timeout 20 sh -c 'sbx-port -d demo 8000 4>&1 >"$1" | cat' _ "$BATS_TEST_TMPDIR/d.out"
	assert_status 0
	run cat "$BATS_TEST_TMPDIR/d.out"
	assert_json '.port == 8000'
}

@test "a detached forward ends with its sandbox" {
	sbx-create demo >/dev/null
	run sbx-port -d demo 8000
	assert_status 0
	pid=$(sbx-port -list demo | jq -r .pid)
	[ "$pid" -gt 1 ]
	sbx-delete demo >/dev/null
	wait_until gone "$pid"
}

# as_user CMD…: CMD as an unprivileged user (65534) with a home of its own in $ud.
as_user() {
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -i PATH="$PATH" HOME="$ud" XDG_STATE_HOME="$ud/state" "$@"
}

@test "a user's sandbox is reached by that user's sbx-port" {
	ud=$(mktemp -d /tmp/sbx-port-user.XXXXXX)
	chmod 755 "$ud"
	chown 65534:65534 "$ud"
	as_user sbx-create -limits none demo >/dev/null
	as_user sbx-exec demo -- sh -c 'mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html &&
		setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/http.log 2>&1 </dev/null &' >/dev/null
	as_user sbx-port demo 8000 >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err" &
	PORT_PID=$!
	wait_until -p "$PORT_PID" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r .url "$BATS_TEST_TMPDIR/port.out")
	wait_until curl -sf -o /dev/null "${url}index.html"
	[ "$(curl -sf "${url}index.html")" = hello ]
}

@test "the manual's examples run" {
	run_man_examples sbx-port
}
