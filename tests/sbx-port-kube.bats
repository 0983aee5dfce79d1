#!/usr/bin/env bats
# sbx-port on the kubernetes backend, against the test server: the portforward subresource
# over WebSocket into the pod's sandbox — HTTP, 50 connections at once, 100 MB, a WebSocket
# echo, half-close, a port nothing listens on, a stream cut by the server, RBAC, the Sandbox's
# deletion, -d / -list / -close, and python3-kubernetes' portforward() as the oracle for the
# server.

load helpers
load kube/server

# One server for the file (tests/kube/server.bash: kts_file_*, ctl).
setup_file() { kts_file_start -ready-delay 100ms; }
teardown_file() { kts_file_stop; }

setup() {
	kts_file_test
	PORT_PID=
}

teardown() {
	[ -z "$PORT_PID" ] || { kill "$PORT_PID" 2>/dev/null; wait "$PORT_PID" 2>/dev/null; } || true
	ctl reset || true
	sbx-delete demo >/dev/null 2>&1 || true
	teardown_sbx_env
}

# port_up ARG…: sbx-port ARG… in the background (PORT_PID), once it printed its line: $url,
# $hp (the host port).
port_up() {
	sbx-port "$@" >"$BATS_TEST_TMPDIR/port.out" 2>"$BATS_TEST_TMPDIR/port.err" &
	PORT_PID=$!
	wait_until -p "$PORT_PID" test -s "$BATS_TEST_TMPDIR/port.out"
	url=$(jq -r '.url // empty' "$BATS_TEST_TMPDIR/port.out")
	hp=${url##*:}
	hp=${hp%/}
}

# http_up: python3's HTTP server on port 8000 of demo's pod, serving /tmp/www (index.html says
# hello), in the background of a session of its own.
http_up() {
	sbx-exec demo -- sh -c 'mkdir -p /tmp/www && cd /tmp/www && echo hello >index.html &&
		setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/http.log 2>&1 </dev/null &' >/dev/null
}

demo_http() {
	sbx-create demo >/dev/null
	http_up
	port_up demo 8000
	wait_until curl -sf -o /dev/null "${url}index.html"
}

@test "an HTTP server in the pod is reached from the host; 50 connections at once, each answered" {
	demo_http
	run cat "$BATS_TEST_TMPDIR/port.out"
	assert_json '.name == "demo" and .port == 8000 and .url == "http://" + .listen + "/"'
	[ "$(curl -sf "${url}index.html")" = hello ]
	run fifty "$hp"
	assert_status 0
	[ "$output" = 50 ]
	# one WebSocket per connection, each asking for the port
	run kts_ctl_requests
	[ "$(jq -s '[.[] | select(.path == "/api/v1/namespaces/default/pods/demo/portforward" and .query.ports == ["8000"] and .status == 101)] | length' <<<"$output")" -ge 51 ]
}

kts_ctl_requests() { "$SBX_TOP/scripts/kube-test-server" -kubeconfig "$KS/kubeconfig" -ctl requests; }

@test "100 MB come through intact, both ways" {
	demo_http
	want=$(sbx-exec -raw demo -- sh -c 'head -c 100000000 /dev/urandom >/tmp/www/big && sha256sum </tmp/www/big')
	got=$(curl -sf "${url}big" | sha256sum)
	[ "$got" = "$want" ]
}

@test "a WebSocket echo in the pod answers through the forward, 20 clients at once" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'cat >/tmp/wsecho.py' <<-'EOF'
	from aiohttp import web
	async def echo(request):
	    ws = web.WebSocketResponse()
	    await ws.prepare(request)
	    async for m in ws:
	        await ws.send_bytes(m.data) if m.type == 2 else await ws.send_str(m.data)
	    return ws
	app = web.Application()
	app.add_routes([web.get("/", echo)])
	web.run_app(app, host="127.0.0.1", port=8765, print=None)
	EOF
	sbx-exec demo -- sh -c 'setsid nohup /usr/bin/python3 /tmp/wsecho.py >/tmp/ws.log 2>&1 </dev/null &' >/dev/null
	port_up demo 8765
	cat >"$BATS_TEST_TMPDIR/wsclient.py" <<-'EOF'
	import asyncio, os, sys, aiohttp
	async def one(s, url):
	    async with s.ws_connect(url) as ws:
	        for i in range(20):
	            data = os.urandom(1000 * i)
	            await ws.send_bytes(data)
	            m = await ws.receive(timeout=30)
	            assert m.data == data
	        await ws.send_str("bye")
	        assert (await ws.receive(timeout=30)).data == "bye"
	        return 1
	async def main():
	    async with aiohttp.ClientSession() as s:
	        print(sum(await asyncio.gather(*[one(s, sys.argv[1]) for _ in range(20)])))
	asyncio.run(main())
	EOF
	wait_until /usr/bin/python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$hp"
	wait_until /usr/bin/python3 "$BATS_TEST_TMPDIR/wsclient.py" "ws://127.0.0.1:$hp/"
	run /usr/bin/python3 "$BATS_TEST_TMPDIR/wsclient.py" "ws://127.0.0.1:$hp/"
	assert_status 0
	[ "$output" = 20 ]
}

@test "half-close: a client that sends its request and shuts down its writing side gets the answer" {
	demo_http
	run python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
c.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
c.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = c.recv(65536)
    if not b:
        break
    got += b
print(got.endswith(b"hello\n"))' "$hp"
	assert_status 0
	[ "$output" = True ]
}

@test "a port nothing listens on: the client sees a clean close, sbx-port says why and serves on" {
	sbx-create demo >/dev/null
	port_up demo 9
	run python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
c.sendall(b"hello?")
print(repr(c.recv(100)))' "$hp"
	assert_status 0
	[ "$output" = "b''" ]
	wait_until grep -q "^sbx-port: port 9 of sandbox demo: error forwarding port 9 to pod demo, uid .*: failed to connect to localhost:9 inside the pod: Connection refused$" "$BATS_TEST_TMPDIR/port.err"
	gone "$PORT_PID" && false
	status=0
	terminate "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 143
}

@test "a stream the server cuts: the client gets a reset, sbx-port says so, the next connection works" {
	demo_http
	sbx-exec -raw demo -- sh -c 'head -c 1000000 /dev/zero >/tmp/www/mb'
	ctl faults '{"portforward_drop_after_bytes": 50000}'
	run curl -sS -o /dev/null "${url}mb"
	assert_status 56
	wait_until grep -q "^sbx-port: port 8000 of sandbox demo: the stream was cut" "$BATS_TEST_TMPDIR/port.err"
	[ "$(curl -sf "${url}mb" | wc -c)" = 1000000 ]
}

@test "RBAC without create pods/portforward: sbx-port names what is missing and serves on" {
	sbx-create demo >/dev/null
	port_up demo 8000
	ctl faults '{"forbid": ["create pods/portforward"]}'
	run curl -sS "${url}"
	assert_status 52
	wait_until grep -q "^sbx-port: port 8000 of sandbox demo: the API server refused the portforward (403): RBAC must allow create pods/portforward$" "$BATS_TEST_TMPDIR/port.err"
	run gone "$PORT_PID"
	assert_status 1
}

@test "the forward ends when the Sandbox is deleted: exit 101, saying so" {
	sbx-create demo >/dev/null
	port_up demo 8000
	sbx-delete demo >/dev/null
	status=0
	finish "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 101
	[ "$(cat "$BATS_TEST_TMPDIR/port.err")" = "sbx-port: sandbox demo is gone" ]
}

@test "a Sandbox that does not exist: exit 101" {
	run sbx-port nosuch 8000
	assert_status 101
	assert_contains "unable to open port 8000 of nosuch"
}

@test "-d detaches; -list shows it; -close stops it; it ends with its Sandbox" {
	sbx-create demo >/dev/null
	http_up
	run sbx-port -d demo 8000
	assert_status 0
	url=$(jq -r .url <<<"$output")
	wait_until curl -sf -o /dev/null "${url}index.html"
	run sbx-port -list demo
	assert_status 0
	assert_json ".port == 8000 and .url == \"$url\" and .pid > 1"
	pid=$(jq -r .pid <<<"$output")
	run sbx-list
	assert_status 0
	assert_json "select(.name == \"demo\") | .ports == [{\"port\":8000,\"url\":\"$url\",\"listen\":$(jq .listen <<<"$(sbx-port -list demo)")}]"
	run sbx-port -close demo 8000
	assert_status 0
	gone "$pid"
	run sbx-port -list demo
	assert_status 0
	[ -z "$output" ]
	run sbx-port -d demo 8000
	assert_status 0
	pid=$(sbx-port -list demo | jq -r .pid)
	sbx-delete demo >/dev/null
	wait_until gone "$pid"
	run sbx-port -list demo
	assert_status 101
}

@test "the server's portforward agrees with python3-kubernetes' portforward() (the oracle)" {
	demo_http
	cat >"$BATS_TEST_TMPDIR/oracle.py" <<-'EOF'
	import sys
	from kubernetes import client, config
	from kubernetes.stream import portforward
	config.load_kube_config()
	port = int(sys.argv[1])
	pf = portforward(client.CoreV1Api().connect_get_namespaced_pod_portforward, "demo", "default",
	                 ports=str(port))
	s = pf.socket(port)
	s.settimeout(30)
	try:
	    s.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
	except OSError:
	    pass
	out = b""
	while True:
	    try:
	        d = s.recv(65536)
	    except OSError:
	        break
	    if not d:
	        break
	    out += d
	print(out.split(b"\r\n\r\n", 1)[-1].decode().strip())
	print("error:", pf.error(port))
	EOF
	run /usr/bin/python3 "$BATS_TEST_TMPDIR/oracle.py" 8000
	assert_status 0
	[ "$output" = "hello
error: None" ]
	run /usr/bin/python3 "$BATS_TEST_TMPDIR/oracle.py" 9
	assert_status 0
	assert_contains "error: error forwarding port 9 to pod demo"
	assert_contains "Connection refused"
}

# kpf_up PORT: kubectl port-forward to PORT of demo in the background (KPF_PID); $kp: its
# local port.
kpf_up() {
	kts_kubectl
	"$KUBECTL" port-forward pod/demo ":$1" >"$BATS_TEST_TMPDIR/kpf.out" 2>"$BATS_TEST_TMPDIR/kpf.err" &
	PORT_PID=$!
	wait_until -p "$PORT_PID" grep -q "^Forwarding from 127.0.0.1:" "$BATS_TEST_TMPDIR/kpf.out"
	kp=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/kpf.out")
}

@test "kubectl port-forward (SPDY tunneled over WebSocket) reaches the same server: 10 MB intact" {
	sbx-create demo >/dev/null
	http_up
	want=$(sbx-exec -raw demo -- sh -c 'head -c 10000000 /dev/urandom >/tmp/www/ten && sha256sum </tmp/www/ten')
	kpf_up 8000
	wait_until curl -sf -o /dev/null "http://127.0.0.1:$kp/index.html"
	[ "$(curl -sf "http://127.0.0.1:$kp/index.html")" = hello ]
	[ "$(curl -sf "http://127.0.0.1:$kp/ten" | sha256sum)" = "$want" ]
	# the tunnel is logged once it ends
	kill "$PORT_PID"
	wait "$PORT_PID" || true
	PORT_PID=
	wait_until spdy_logged
}

spdy_logged() {
	kts_ctl_requests | jq -se '[.[] | select(.path == "/api/v1/namespaces/default/pods/demo/portforward" and .headers["Sec-WebSocket-Protocol"] == "SPDY/3.1+portforward.k8s.io" and .status == 101)] | length >= 1' >/dev/null
}

@test "kubectl port-forward to a port nothing listens on: kubectl reports the kubelet's error" {
	sbx-create demo >/dev/null
	kpf_up 9
	run curl -sS "http://127.0.0.1:$kp/"
	assert_status 52
	wait_until grep -q "error forwarding port 9 to pod demo, uid .*: failed to connect to localhost:9 inside the pod: Connection refused" "$BATS_TEST_TMPDIR/kpf.err"
}

@test "-unix on kubernetes: a socket of mode 0600 serves the pod's port, removed at the end" {
	sbx-create demo >/dev/null
	http_up
	sock=$BATS_TEST_TMPDIR/demo.sock
	port_up -unix "$sock" demo 8000
	run cat "$BATS_TEST_TMPDIR/port.out"
	assert_json ".unix == \"$sock\" and .port == 8000 and (has(\"url\") | not)"
	[ "$(stat -c %a "$sock")" = 600 ]
	wait_until curl -sf -o /dev/null --unix-socket "$sock" http://demo/index.html
	[ "$(curl -sf --unix-socket "$sock" http://demo/index.html)" = hello ]
	status=0
	terminate "$PORT_PID" || status=$?
	PORT_PID=
	assert_status 143
	[ ! -e "$sock" ]
}
