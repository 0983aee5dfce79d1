#!/usr/bin/env bats
# A sandbox's network: none by default (sbx-create.bats), -network (its own namespace, NAT
# through pasta) and -allow-host (no route out but the egress proxy). "The outside" is a test
# host in a network namespace made here (tests/netns.bash); nothing leaves this machine.

load helpers
load netns

setup_file() { netns_up; }
teardown_file() { netns_down; }
setup() { setup_sbx_env; }
teardown() {
	[ -z "${RECORDER_PID:-}" ] || kill "$RECORDER_PID" 2>/dev/null || true
	teardown_sbx_env
	# what a test made outside its temporary directory (for a user other than root)
	if [ -n "${OUTSIDE_DIR:-}" ]; then
		for n in $(XDG_STATE_HOME="$OUTSIDE_DIR/state" sbx-list 2>/dev/null | jq -r .name); do
			XDG_STATE_HOME="$OUTSIDE_DIR/state" sbx-delete "$n" >/dev/null 2>&1 || true
		done
		rm -rf "$OUTSIDE_DIR"
	fi
}

sandbox_dir() { echo "$XDG_STATE_HOME/sbx/default/$1"; }

# Python run in a sandbox: ask(data) sends raw bytes to its proxy, returns all it answers.
PROXY_ASK='
import socket
def ask(data):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(data)
    r = b""
    while True:
        c = s.recv(65536)
        if not c: break
        r += c
    return r
'

@test "-network: a network namespace of its own that reaches a test host, by name through the host's resolver" {
	run sbx-create -network web
	assert_status 0
	assert_json '.network == {"mode":"nat"}'
	[ "$(sbx-exec -raw web -- readlink /proc/self/ns/net)" != "$(readlink /proc/self/ns/net)" ]
	run sbx-exec -raw web -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt
	assert_status 0
	[ "$output" = "hello from web" ]
	run sbx-exec -raw web -- cat /etc/resolv.conf
	assert_contains "nameserver $WEB"
}

@test "-network: the host's loopback services are out of reach" {
	curl -sf -m 5 "http://127.0.0.1:$HOST_PORT/secret.txt" | grep -q host-only-secret
	sbx-create -network web >/dev/null
	run sbx-exec -raw web -- curl -sS -m 5 "http://127.0.0.1:$HOST_PORT/secret.txt"
	[ "$status" -ne 0 ]
	[[ "$output" != *host-only-secret* ]]
	# the host's own address is the sandbox's own inside
	addr=$(sbx-exec -raw web -- sh -c "ip -4 -o addr show dev eth0 | awk '{print \$4}' | cut -d/ -f1")
	[ -n "$addr" ]
	run sbx-exec -raw web -- curl -sS -m 5 "http://$addr:$HOST_PORT/secret.txt"
	[ "$status" -ne 0 ]
	[[ "$output" != *host-only-secret* ]]
}

@test "-network: the host's abstract unix sockets are out of reach" {
	name="sbx-test-abstract-$$"
	/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(4)
print("up", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"host-abstract-secret\n"); c.close()' "$name" >"$BATS_TEST_TMPDIR/abs" 3>&- &
	pid=$!
	wait_until grep -q up "$BATS_TEST_TMPDIR/abs"
	probe='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + sys.argv[1]); print(s.recv(100).decode().strip())
except OSError as e:
    print("refused", e.errno)'
	run /usr/bin/python3 -c "$probe" "$name"
	[ "$output" = host-abstract-secret ]
	sbx-create -network web >/dev/null
	run sbx-exec -raw web -- python3 -c "$probe" "$name"
	kill "$pid"
	assert_status 0
	assert_contains refused
}

@test "-network: two sandboxes cannot reach each other, nor the host them" {
	sbx-create -network a >/dev/null
	sbx-create -network b >/dev/null
	# a port no host server holds, so that reaching the host's own proves nothing wrong
	port=$(closed_port)
	sbx-exec -raw a -- sh -c "cd /tmp && echo from-a >f && setsid python3 -m http.server $port >/dev/null 2>&1 &"
	wait_until sbx-exec -raw a -- curl -sf -m 1 "http://127.0.0.1:$port/f"
	addr=$(sbx-exec -raw a -- sh -c "ip -4 -o addr show dev eth0 | awk '{print \$4}' | cut -d/ -f1")
	for target in "127.0.0.1:$port" "$addr:$port" "$HOSTSIDE:$port"; do
		run sbx-exec -raw b -- curl -sS -m 3 "http://$target/f"
		[ "$status" -ne 0 ]
		[[ "$output" != *from-a* ]]
	done
	run curl -sS -m 3 "http://127.0.0.1:$port/f"
	[ "$status" -ne 0 ]
}

@test "-network: pasta is the supervisor's child and goes with the sandbox" {
	sbx-create -network web >/dev/null
	sup=$(cat "$(sandbox_dir web)/supervisor.pid")
	helper=$(pgrep -P "$sup" -f "pasta -f")
	[ -n "$helper" ]
	[ "$(stat -c %u /proc/$helper)" = "$(stat -c %u "$(sandbox_dir web)/home")" ]	# the sandbox's host uid
	sbx-delete web >/dev/null
	wait_until gone "$helper"
	# and when the supervisor is killed outright
	sbx-create -network web2 >/dev/null
	sup=$(cat "$(sandbox_dir web2)/supervisor.pid")
	helper=$(pgrep -P "$sup" -f "pasta -f")
	kill -KILL "$sup"
	wait_until gone "$helper"
}

@test "-network: without pasta nor slirp4netns, create says what to install and leaves nothing" {
	SBX_PASTA=/nonexistent/pasta SBX_SLIRP4NETNS=/nonexistent/slirp4netns run sbx-create -network web
	assert_status 111
	assert_contains 'install the Debian package "passt" (or "slirp4netns")'
	[ ! -e "$(sandbox_dir web)" ]
}

@test "-network: without pasta, slirp4netns with the same isolation" {
	export SBX_PASTA=/nonexistent/pasta
	sbx-create -network slirp >/dev/null
	run sbx-exec -raw slirp -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt
	[ "$output" = "hello from web" ]
	# the host's loopback: neither as the sandbox's own nor through slirp's gateway address
	for target in "127.0.0.1:$HOST_PORT" "10.0.2.2:$HOST_PORT"; do
		run sbx-exec -raw slirp -- curl -sS -m 5 "http://$target/secret.txt"
		[ "$status" -ne 0 ]
		[[ "$output" != *host-only-secret* ]]
	done
	sup=$(cat "$(sandbox_dir slirp)/supervisor.pid")
	helper=$(pgrep -P "$sup" -x slirp4netns)
	[ "$(stat -c %u /proc/$helper)" = "$(stat -c %u "$(sandbox_dir slirp)/home")" ]
	sbx-delete slirp >/dev/null
	wait_until gone "$helper"
}

@test "a network helper that fails is a clear error at create, and nothing of the sandbox is left running" {
	# the helper runs as the sandbox's host user: somewhere that user may read
	d=$(mktemp -d /tmp/sbx-net-test.XXXXXX)
	OUTSIDE_DIR=$d
	chmod 755 "$d"
	printf '#!/bin/sh\necho "cannot reach the moon" >&2\nexit 1\n' >"$d/bad-helper"
	chmod 755 "$d/bad-helper"
	SBX_PROXY=$d/bad-helper run sbx-create -allow-host web.sbx.test doomed
	assert_status 111
	assert_contains "the network helper failed: cannot reach the moon"
	chmod 700 "$d"
	SBX_PROXY=$d/bad-helper run sbx-create -allow-host web.sbx.test doomed
	rm -rf "$d"
	assert_status 111
	assert_contains "Permission denied (it runs as the sandbox's host user, who must be able to reach and execute it)"
	[ ! -e "$(sandbox_dir doomed)" ]
	run pgrep -f -- "--hostname doomed "
	assert_status 1
}

@test "-allow-host: allowed hosts answer through the proxy (HTTP, HTTPS by CONNECT, SOCKS5, python)" {
	run sbx-create -allow-host "web.sbx.test,*.other.example" prox
	assert_status 0
	assert_json '.network == {"mode":"proxy","allow_hosts":["web.sbx.test","*.other.example"]}'
	cp "$NETNS_CA" "$(sandbox_dir prox)/home/ca.pem"
	run sbx-exec -raw prox -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt
	[ "$output" = "hello from web" ]
	run sbx-exec -raw prox -- curl -sS -m 10 --cacert /home/clawtainer/ca.pem https://web.sbx.test:8443/hello.txt
	[ "$output" = "hello from web" ]
	run sbx-exec -raw prox -- sh -c 'HTTP_PROXY= HTTPS_PROXY= http_proxy= https_proxy= curl -sS -m 10 http://web.sbx.test:8080/hello.txt'
	[ "$output" = "hello from web" ]	# ALL_PROXY: socks5h
	run sbx-exec -raw prox -- python3 -c 'import urllib.request; print(urllib.request.urlopen("http://web.sbx.test:8080/hello.txt", timeout=10).read().decode().strip())'
	[ "$output" = "hello from web" ]
	run sbx-exec -raw prox -- printenv NODE_USE_ENV_PROXY	# what tells newer Node's fetch
	[ "$output" = 1 ]
	run sbx-list
	assert_json '.network.allow_hosts == ["web.sbx.test","*.other.example"]'
}

@test "-allow-host: another host gets 403 naming the rule, and every decision is logged" {
	sbx-create -allow-host web.sbx.test:8080 prox >/dev/null
	run sbx-exec -raw prox -- curl -sS -m 10 -i http://other.sbx.test:8080/hello.txt
	assert_contains "403 Forbidden"
	assert_contains "other.sbx.test:8080 is not allowed: no -allow-host entry matches it (this sandbox allows: web.sbx.test:8080)"
	run sbx-exec -raw prox -- curl -sS -m 10 -o /dev/null -w '%{http_code}' http://web.sbx.test:8443/
	[ "$output" = 403 ]	# the port is part of the rule
	run sbx-exec -raw prox -- curl -sS -m 10 --cacert /dev/null https://other.sbx.test:8443/
	[ "$status" -ne 0 ]
	assert_contains 403
	sbx-exec -raw prox -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt >/dev/null
	log=$(sandbox_dir prox)/net.log
	run jq -c 'select(.host=="other.sbx.test") | [.decision, .port, .sandbox]' "$log"
	[ "$output" = "$(printf '%s\n%s' '["denied",8080,"prox"]' '["denied",8443,"prox"]')" ]
	run jq -c 'select(.decision=="allowed") | [.host, .port, .rule, .address, .bytes_in > 0, (.time | test("Z$"))]' "$log"
	[ "$output" = "[\"web.sbx.test\",8080,\"web.sbx.test:8080\",\"$WEB\",true,true]" ]
}

@test "-allow-host: no way out but the proxy" {
	sbx-create -allow-host web.sbx.test prox >/dev/null
	run sbx-exec -raw prox -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	[ "$output" = lo ]
	run sbx-exec -raw prox -- curl -sS -m 5 --noproxy '*' "http://$WEB:8080/hello.txt"
	[ "$status" -ne 0 ]
	run sbx-exec -raw prox -- python3 -c "import socket; socket.create_connection(('$WEB', 8080), timeout=5)"
	[ "$status" -ne 0 ]
	assert_contains "Network is unreachable"
}

@test "-allow-host: the host's loopback, own and link-local addresses only for a \"+\" entry, metadata never by name" {
	sbx-create -allow-host '*.sbx.test' wild >/dev/null
	run sbx-exec -raw wild -- curl -sS -m 10 -i "http://loop.sbx.test:$HOST_PORT/secret.txt"
	assert_contains "403 Forbidden"
	assert_contains 'resolves to 127.0.0.1 (loopback), which only an entry marked "+" or an IP entry may reach'
	[[ "$output" != *host-only-secret* ]]
	run sbx-exec -raw wild -- curl -sS -m 10 "http://127.0.0.1:$HOST_PORT/secret.txt" --proxy http://127.0.0.1:3128	# (port: the sandbox's own proxy, in its namespace)
	[[ "$output" != *host-only-secret* ]]
	run sbx-exec -raw wild -- curl -sS -m 10 "http://self.sbx.test:$HOST_PORT/"
	assert_contains "resolves to $HOSTSIDE (one of this host's own addresses), which only an entry marked \"+\" or an IP entry may reach"
	run sbx-exec -raw wild -- curl -sS -m 10 "http://meta.sbx.test/latest/meta-data/"
	assert_contains "resolves to 169.254.169.254 (cloud metadata), which only an IP entry naming that address may reach"
	run sbx-exec -raw wild -- curl -sS -m 10 "http://sub.web.sbx.test:8080/hello.txt"
	[ "$output" = "hello from web" ]
	# allowed by the list but not resolvable: 502, logged as allowed with the reason
	run sbx-exec -raw wild -- curl -sS -m 20 -o /dev/null -w '%{http_code}' "http://nowhere.sbx.test:8080/"
	[ "$output" = 502 ]
	run jq -c 'select(.host=="nowhere.sbx.test") | [.decision, .reason]' "$(sandbox_dir wild)/net.log"
	[ "$output" = '["allowed","the name does not resolve"]' ]
	run jq -c 'select(.host=="loop.sbx.test") | [.decision, .address]' "$(sandbox_dir wild)/net.log"
	[ "$output" = '["denied","127.0.0.1"]' ]
	sbx-create -allow-host "+loop.sbx.test:$HOST_PORT,$HOSTSIDE" exact >/dev/null
	run sbx-exec -raw exact -- curl -sS -m 10 "http://loop.sbx.test:$HOST_PORT/secret.txt"
	[ "$output" = host-only-secret ]
}

# Before: a name (or wildcard) entry reached whatever it resolved to but loopback, link-local
# and the host's own addresses: DNS rebinding from an allowed domain reached the LAN, the
# carrier's NAT, AWS's IPv6 metadata and NAT64 gateways.
@test "-allow-host: a name never reaches an internal address (RFC 1918, CGNAT, ULA, NAT64, IPv4-mapped) nor cloud metadata; each refusal logged" {
	sbx-create -allow-host 'intra.sbx.test,*.sbx.test' names >/dev/null
	while IFS='|' read -r name addr cls who; do
		run sbx-exec -raw names -- curl -sS -m 20 -i "http://$name:8080/hello.txt"
		assert_contains "403 Forbidden"
		assert_contains "$name:8080 is not allowed: it resolves to $addr ($cls), which only $who may reach"
		[[ "$output" != *"hello from web"* ]]
		run jq -c --arg h "$name" 'select(.host==$h) | [.decision, .address, .rule]' "$(sandbox_dir names)/net.log"
		rule='*.sbx.test'
		[ "$name" = intra.sbx.test ] && rule=$name
		[ "$output" = "[\"denied\",\"$addr\",\"$rule\"]" ]
	done <<LIST
intra.sbx.test|$INTRA|private|an entry marked "+" or an IP entry
p172.sbx.test|172.16.$NETNS_ID.2|private|an entry marked "+" or an IP entry
p192.sbx.test|192.168.$NETNS_ID.2|private|an entry marked "+" or an IP entry
cgnat.sbx.test|100.64.$NETNS_ID.2|carrier-grade NAT|an entry marked "+" or an IP entry
nat64.sbx.test|$NAT64|NAT64|an entry marked "+" or an IP entry
mapped.sbx.test|::ffff:$INTRA|private|an entry marked "+" or an IP entry
ec2.sbx.test|fd00:ec2::254|cloud metadata|an IP entry naming that address
alibaba.sbx.test|100.100.100.200|cloud metadata|an IP entry naming that address
LIST
	# a name with a public and an internal address: only the public one is tried
	run sbx-exec -raw names -- curl -sS -m 20 "http://mixed.sbx.test:8080/hello.txt"
	[ "$output" = "hello from web" ]
	run jq -r 'select(.host=="mixed.sbx.test") | .address' "$(sandbox_dir names)/net.log"
	[ "$output" = "$WEB" ]
}

@test "-allow-host: a \"+\" entry reaches the intranet host it names, an IP or CIDR entry what it names; metadata only by its address" {
	sbx-create -allow-host "+intra.sbx.test:8080,+mapped.sbx.test,+alibaba.sbx.test,$INTRA:8080,10.77.$NETNS_ID.0/24:8443,100.100.100.200:8080" plus >/dev/null
	run sbx-exec -raw plus -- curl -sS -m 10 http://intra.sbx.test:8080/hello.txt
	[ "$output" = "hello from web" ]
	run sbx-exec -raw plus -- curl -sS -m 10 http://mapped.sbx.test:8080/hello.txt
	[ "$output" = "hello from web" ]
	run sbx-exec -raw plus -- curl -sS -m 10 "http://$INTRA:8080/hello.txt"
	[ "$output" = "hello from web" ]
	run sbx-exec -raw plus -- curl -sS -m 10 -k "https://$INTRA:8443/hello.txt"
	[ "$output" = "hello from web" ]
	run sbx-exec -raw plus -- curl -sS -m 10 http://alibaba.sbx.test:8080/
	assert_contains "resolves to 100.100.100.200 (cloud metadata), which only an IP entry naming that address may reach (entry +alibaba.sbx.test)"
	# (by its IP entry it would be tried: tests/unit/test_net.c; no test connects to a
	# metadata address, whose route into the test host other runs may share)
	run sbx-list
	assert_json ".network.allow_hosts == [\"+intra.sbx.test:8080\",\"+mapped.sbx.test\",\"+alibaba.sbx.test\",\"$INTRA:8080\",\"10.77.$NETNS_ID.0/24:8443\",\"100.100.100.200:8080\"]"
}

# Before: only the first request head on a connection was checked; what followed it was
# relayed as it came, so a request pipelined behind an allowed one reached the server with
# any Host.
@test "-allow-host: a plain HTTP connection carries one request: one pipelined behind it, for another Host, never reaches the server" {
	got=$BATS_TEST_TMPDIR/received
	# a server that records every byte it receives and answers each request line it sees
	ip netns exec "$NETNS" /usr/bin/python3 -c '
import socket, sys, threading
srv = socket.create_server((sys.argv[1], 8081))
srv.settimeout(120)
out = open(sys.argv[2], "ab", buffering=0)
print("ready", flush=True)
def serve(c):
    c.settimeout(1)
    data = b""
    try:
        while True:
            b = c.recv(65536)
            if not b: break
            data += b
    except socket.timeout:
        pass
    out.write(data + b"\n--\n")
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" * data.count(b" HTTP/1.1\r\n"))
    c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()' "$WEB" "$got" >"$BATS_TEST_TMPDIR/rec.out" 2>&1 3>&- &
	RECORDER_PID=$!
	wait_until grep -q ready "$BATS_TEST_TMPDIR/rec.out"
	sbx-create -allow-host web.sbx.test:8081 ka >/dev/null
	run sbx-exec -raw ka -- python3 -c "$PROXY_ASK"'
print(ask(b"GET http://web.sbx.test:8081/first HTTP/1.1\r\nHost: web.sbx.test:8081\r\n\r\n"
          b"GET http://other.sbx.test:8081/second HTTP/1.1\r\nHost: other.sbx.test:8081\r\n\r\n").count(b"200 OK"))
print(ask(b"POST http://web.sbx.test:8081/third HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
          b"helloGET /fourth HTTP/1.1\r\nHost: other.sbx.test\r\n\r\n").count(b"200 OK"))
print(ask(b"POST http://web.sbx.test:8081/fifth HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"5\r\nhello\r\n0\r\n\r\nGET /sixth HTTP/1.1\r\nHost: other.sbx.test\r\n\r\n").split(b"\r\n")[0].decode())'
	assert_status 0
	[ "${lines[0]}" = 1 ]
	[ "${lines[1]}" = 1 ]
	[ "${lines[2]}" = "HTTP/1.1 411 Length Required" ]
	grep -q '^GET /first HTTP/1.1' "$got"
	grep -q '^POST /third HTTP/1.1' "$got"
	grep -qx 'hello' "$got"	# the body, and not a byte after it
	run grep -c -e second -e fourth -e fifth -e sixth -e other.sbx.test "$got"
	[ "$output" = 0 ]
	run jq -c '[.host, .decision]' "$(sandbox_dir ka)/net.log"
	[ "$output" = "$(printf '%s\n%s' '["web.sbx.test","allowed"]' '["web.sbx.test","allowed"]')" ]
}

@test "sbx-proxy serves under no_new_privs and a seccomp filter of its own, which refuses exec" {
	sbx-create -allow-host web.sbx.test:8080 sc >/dev/null
	sup=$(cat "$(sandbox_dir sc)/supervisor.pid")
	pid=$(pgrep -P "$sup" -x sbx-proxy)
	run grep -E '^(NoNewPrivs|Seccomp):' "/proc/$pid/status"
	[ "$output" = "$(printf 'NoNewPrivs:\t1\nSeccomp:\t2')" ]
	run sbx-exec -raw sc -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt
	[ "$output" = "hello from web" ]
	# the same filter, loaded by a test program: exec, writing a file, fork, a Unix socket,
	# signalling or tracing another process refused; IP sockets, threads, reading allowed
	run "$SBX_UNIT/test_proxyfilter"
	assert_status 0
	assert_contains "ok 5 - execve is refused"
	[[ "$output" != *"not ok"* ]]
}

@test "-allow-host: bad lists are refused before anything starts, and a reused sandbox must match" {
	for bad in '' '*' 'a..b' '*.com:0' 'x:99999' '::1' 'a b' '*.*.example.com' 'ex*ample.com'; do
		run sbx-create -allow-host "$bad" prox
		assert_status 100
		assert_contains "invalid value"
	done
	SANDBOX_ALLOW_HOSTS='Web.SBX.test.' run sbx-create prox
	assert_status 0
	assert_json '.network.allow_hosts == ["web.sbx.test"]'
	run sbx-create -allow-host other.sbx.test prox
	assert_status 100
	assert_contains 'exists with -allow-host "web.sbx.test"'
}

@test "agent-loop, acp-server and sbx-tool: -allow-host handed on, checked at start, used by tool calls" {
	run agent-loop -allow-host '*' -session al </dev/null
	assert_status 100
	assert_contains 'invalid value "*" for flag -allow-host'
	run acp-server -allow-host 'a..b' -listen 127.0.0.1:0 </dev/null
	assert_status 100
	assert_contains 'invalid value "a..b" for flag -allow-host'
	export OPENAI_MODEL=fake-eliza
	run agent-loop -v -allow-host web.sbx.test -session al <<<'run: curl -sS -m 10 http://web.sbx.test:8080/hello.txt'
	assert_status 0
	assert_contains '-allow-host=web.sbx.test al'
	assert_contains 'hello from web'
	sbx-create -allow-host web.sbx.test tool >/dev/null
	run sbx-tool tool <<<'{"id":"1","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"curl -sS -m 10 http://other.sbx.test:8080/\"}"}}'
	assert_contains 'is not allowed'
	run timeout 120 acp-client -cmd "acp-server -stdio -allow-host web.sbx.test:8080" -yolo \
		-prompt 'run: curl -sS -m 10 http://web.sbx.test:8080/hello.txt'
	assert_status 0
	assert_contains 'hello from web'
	# as the Kubernetes manifest's Secret would set them, through the environment
	run timeout 120 env SANDBOX_ALLOW_HOSTS=web.sbx.test acp-client -cmd "acp-server -stdio" -yolo \
		-prompt 'run: curl -sS -m 10 http://other.sbx.test:8080/hello.txt'
	assert_contains 'is not allowed'
	run timeout 120 env SANDBOX_NETWORK=true acp-client -cmd "acp-server -stdio" -yolo \
		-prompt 'run: curl -sS -m 10 http://other.sbx.test:8080/hello.txt'
	assert_contains 'hello from web'
	SANDBOX_NETWORK=maybe run sbx-create x
	assert_status 100
	assert_contains 'invalid SANDBOX_NETWORK: want true or false'
}

@test "-allow-host: the proxy's inputs are bounded: head size, request line, connections at once" {
	sbx-create -allow-host web.sbx.test prox >/dev/null
	run sbx-exec -raw prox -- python3 -c "$PROXY_ASK"'
def ask_line(data):
    r = ask(data)
    return r.split(b"\r\n")[0].decode() + " | " + r.split(b"\r\n\r\n", 1)[-1].decode().strip()
head = b"GET http://web.sbx.test:8080/ HTTP/1.1\r\nX: "
print(ask_line(head + b"a" * (65536 - len(head))))   # all of it read, so the answer is not reset
print(ask_line(b"GET http://web.sbx.test:8080/" + b"a" * 9000))
print(ask_line(b"GET http://web.sbx.test:8080/ HTTP/1.1\r\n folded: x\r\n\r\n"))
held = [socket.create_connection(("127.0.0.1", 3128), timeout=20) for _ in range(256)]
print(ask_line(b""))   # the proxy answers before any request: nothing sent, nothing reset
for s in held: s.close()'
	assert_status 0
	[ "${lines[0]}" = "HTTP/1.1 400 Bad Request | sbx-proxy: bad request: request head too long" ]
	[ "${lines[1]}" = "HTTP/1.1 400 Bad Request | sbx-proxy: bad request: request head too long" ]
	[ "${lines[2]}" = "HTTP/1.1 400 Bad Request | sbx-proxy: bad request: malformed request head" ]
	[ "${lines[3]}" = "HTTP/1.1 503 Service Unavailable | sbx-proxy: too many connections at once" ]
	# and it serves again once they are gone
	wait_until sbx-exec -raw prox -- curl -sf -m 5 http://web.sbx.test:8080/hello.txt -o /dev/null
}

@test "-allow-host for a user who is not root: the same proxy, run as that user" {
	d=$(mktemp -d /tmp/sbx-net-user.XXXXXX)
	OUTSIDE_DIR=$d
	chmod 777 "$d"
	cp "$SBX_RESOLV_CONF" "$d/resolv.conf"	# where that user can read it
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$d" XDG_STATE_HOME="$d/state" SBX_RESOLV_CONF="${RC:-$d/resolv.conf}" "$@"; }
	# a resolver given on purpose that cannot be used is an error, never the host's instead
	RC=/nonexistent run as_nobody sbx-create -limits none -allow-host web.sbx.test mine
	assert_status 100
	assert_contains "names no usable nameserver"
	as_nobody sbx-create -limits none -allow-host web.sbx.test:8080 mine >/dev/null
	run as_nobody sbx-exec -raw mine -- curl -sS -m 10 http://web.sbx.test:8080/hello.txt
	sup=$(cat "$d/state/sbx/default/mine/supervisor.pid")
	[ "$(stat -c %u "/proc/$(pgrep -P "$sup" -x sbx-proxy)")" = 65534 ]
	as_nobody sbx-delete mine >/dev/null
	rm -rf "$d"
	[ "$output" = "hello from web" ]
}

@test "-network with an OCI image: its resolv.conf is replaced when it has one, left alone when not" {
	base='["hostfile","bin/busybox","/bin/busybox"],["symlink","bin/sh","busybox"],["dir","etc"],["file","etc/passwd","root:x:0:0:root:/root:/bin/sh\n"]'
	for img in with without; do
		extra=
		[ "$img" = with ] && extra=',["file","etc/resolv.conf","nameserver 192.0.2.53\n"]'
		printf '{"layers":[{"compress":"gzip","entries":[%s%s]}],"tag":"v1"}\n' "$base" "$extra" \
			>"$BATS_TEST_TMPDIR/$img.json"
		python3 "$SBX_TOP/tests/oci/mkimage.py" "$BATS_TEST_TMPDIR/$img.json" "$BATS_TEST_TMPDIR/$img.tar"
		sbx-create -network -image "oci-archive:$BATS_TEST_TMPDIR/$img.tar:v1" "img$img" >/dev/null
	done
	run sbx-exec -raw imgwith -- busybox cat /etc/resolv.conf
	assert_contains "nameserver $WEB"
	run sbx-exec -raw imgwithout -- busybox ls /etc
	[[ "$output" != *resolv.conf* ]]
	run sbx-exec -raw imgwithout -- busybox wget -q -O - "http://$WEB:8080/hello.txt"
	[ "$output" = "hello from web" ]
}
