#!/usr/bin/env bats
# -secret: a credential a sandbox can use but never see. The sandbox holds a placeholder;
# sbx-proxy puts the value in its place in header fields of requests to the secret's hosts
# only, and refuses a placeholder anywhere else. "The outside" is the test host of
# tests/netns.bash, with an echo server here that answers with the request it received.

load helpers
load netns

# The echo server: on port 8090 of WEB and OTHER (and HTTPS on 8453, with the certificate of
# tests/netns.bash's own CA, NETNS_CA), answers every request with what it got
# (method, path, header fields, body) as JSON, and records each request, one line, in
# $SECRETS_DIR/seen.
setup_file() {
	netns_up
	export SECRETS_DIR=$BATS_FILE_TMPDIR/secrets
	mkdir -p "$SECRETS_DIR"
	cat >"$SECRETS_DIR/echo.py" <<'PY'
import http.server, json, socketserver, sys, threading
seen = open(sys.argv[1], "a")
class Echo(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("latin-1") if n else ""
        doc = json.dumps({"method": self.command, "path": self.path,
                          "headers": {k.lower(): v for k, v in self.headers.items()},
                          "body": body})
        seen.write(doc + "\n"); seen.flush()
        out = (doc + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_PUT = handle_one
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
import ssl
cert, key = sys.argv[2], sys.argv[3]
servers = []
for a in sys.argv[4:]:
    servers.append(S((a, 8090), Echo))
    t = S((a, 8453), Echo)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    t.socket = ctx.wrap_socket(t.socket, server_side=True)
    servers.append(t)
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
servers[0].serve_forever()
PY
	ip netns exec "$NETNS" /usr/bin/python3 "$SECRETS_DIR/echo.py" "$SECRETS_DIR/seen" \
		"$BATS_FILE_TMPDIR/netns/web.pem" "$BATS_FILE_TMPDIR/netns/web.key" "$WEB" "$OTHER" >"$SECRETS_DIR/echo.out" 2>"$SECRETS_DIR/echo.err" 3>&- &
	echo $! >"$SECRETS_DIR/echo.pid"
	wait_until grep -q ready "$SECRETS_DIR/echo.out"
	# A git smart-HTTP server: git http-backend behind HTTPS (port 8463 of WEB) with Basic
	# authentication, the password it wants read from $SECRETS_DIR/git-cred at each request.
	git init -q --bare "$SECRETS_DIR/repo.git"
	git -C "$SECRETS_DIR/repo.git" config http.receivepack true
	cat >"$SECRETS_DIR/githttp.py" <<'PY'
import base64, http.server, os, socketserver, ssl, subprocess, sys
root, credfile, cert, key, addr = sys.argv[1:6]
class Git(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    self.rfile.readline(); return out
                out += self.rfile.read(n); self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))
    def handle_one(self):
        data = self.body()
        want = "Basic " + base64.b64encode(("git:" + open(credfile).read()).encode()).decode()
        if self.headers.get("Authorization") != want:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers(); return
        path, _, query = self.path.partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", REMOTE_USER="git",
                   REQUEST_METHOD=self.command, PATH_INFO=path, QUERY_STRING=query,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(data)),
                   HTTP_GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
        out = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        hdrs = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status": status = int(v.split()[0])
            elif k: hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs: self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
    do_GET = do_POST = handle_one
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
s = S((addr, 8463), Git)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print("ready", flush=True)
s.serve_forever()
PY
	ip netns exec "$NETNS" /usr/bin/python3 "$SECRETS_DIR/githttp.py" "$SECRETS_DIR" \
		"$SECRETS_DIR/git-cred" "$BATS_FILE_TMPDIR/netns/web.pem" "$BATS_FILE_TMPDIR/netns/web.key" \
		"$WEB" >"$SECRETS_DIR/git.out" 2>"$SECRETS_DIR/git.err" 3>&- &
	echo $! >"$SECRETS_DIR/git.pid"
	wait_until grep -q ready "$SECRETS_DIR/git.out"
}
teardown_file() {
	[ -f "$SECRETS_DIR/echo.pid" ] && kill "$(cat "$SECRETS_DIR/echo.pid")" 2>/dev/null
	[ -f "$SECRETS_DIR/git.pid" ] && kill "$(cat "$SECRETS_DIR/git.pid")" 2>/dev/null
	netns_down
}
setup() {
	setup_sbx_env
	# A value no test writes anywhere but here: found anywhere else, it leaked.
	export API_TOKEN; API_TOKEN=tok-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
}
teardown() { teardown_sbx_env; }

sandbox_dir() { echo "$XDG_STATE_HOME/sbx/default/$1"; }

@test "-secret: the sandbox holds a placeholder; the listed host gets the value in headers (Bearer, Basic, any field)" {
	run sbx-create -secret API_TOKEN@web.sbx.test:8090 sec
	assert_status 0
	assert_json '.network.allow_hosts == ["web.sbx.test:8090"]'
	run sbx-exec -raw sec -- sh -c 'printf %s "$API_TOKEN"'
	[[ $output =~ ^sbxph_[0-9a-f]{40}$ ]]
	ph=$output
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -H "Authorization: Bearer $API_TOKEN" http://web.sbx.test:8090/api'
	assert_status 0
	assert_json ".headers.authorization == \"Bearer $API_TOKEN\""
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -u "git:$API_TOKEN" -H "X-Api-Key: k=$API_TOKEN" http://web.sbx.test:8090/basic'
	assert_status 0
	assert_json ".headers[\"x-api-key\"] == \"k=$API_TOKEN\""
	assert_json "(.headers.authorization | ltrimstr(\"Basic \") | @base64d) == \"git:$API_TOKEN\""
	# another sandbox, another placeholder
	sbx-create -secret API_TOKEN@web.sbx.test:8090 sec2 >/dev/null
	run sbx-exec -raw sec2 -- sh -c 'printf %s "$API_TOKEN"'
	[[ $output =~ ^sbxph_[0-9a-f]{40}$ ]]
	[ "$output" != "$ph" ]
	# every substitution is logged, by name, never with the value
	run jq -c 'select(.secret) | [.secret, .secret_action, .method, .path, .host]' "$(sandbox_dir sec)/net.log"
	[ "$output" = "$(printf '%s\n%s' '["API_TOKEN","substituted","GET","/api","web.sbx.test"]' \
		'["API_TOKEN","substituted","GET","/basic","web.sbx.test"]')" ]
}

@test "-secret: a placeholder to another allowed host, a host not allowed, in the URL or in a body is refused and logged" {
	sbx-create -allow-host other.sbx.test:8090 -secret API_TOKEN@web.sbx.test:8090 sec >/dev/null
	: >"$SECRETS_DIR/seen"
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -i -H "Authorization: Bearer $API_TOKEN" http://other.sbx.test:8090/steal'
	assert_contains "403 Forbidden"
	assert_contains "refused: a placeholder sent to a host not listed for it (secret API_TOKEN)"
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" -u "x:$API_TOKEN" http://other.sbx.test:8090/basic'
	[ "$output" = 403 ]
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" "http://other.sbx.test:8090/q?t=$API_TOKEN"'
	[ "$output" = 403 ]
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" "http://web.sbx.test:8090/q?t=$API_TOKEN"'
	[ "$output" = 403 ]	# the URL ends up in logs: never there, even to the listed host
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" -H "X-Key: $API_TOKEN" http://nowhere.sbx.test:8090/'
	[ "$output" = 403 ]
	# a body: refused to every host, the listed one too (it could echo the value back),
	# also when the placeholder comes after the first read and across reads
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" --data-binary "token=$API_TOKEN" http://web.sbx.test:8090/post'
	[ "$output" = 403 ]
	run sbx-exec -raw sec -- sh -c 'head -c 300000 /dev/zero | tr "\0" a >/tmp/big; printf %s "$API_TOKEN" >>/tmp/big; curl -sS -m 20 -o /dev/null -w "%{http_code}" --data-binary @/tmp/big http://other.sbx.test:8090/post'
	[ "$output" = 403 ]
	# a placeholder-free body still goes through, and the server saw none of the refused ones
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 --data-binary "plain" http://web.sbx.test:8090/post'
	assert_json '.body == "plain"'
	run jq -r .path "$SECRETS_DIR/seen"
	[ "$output" = /post ]
	log=$(sandbox_dir sec)/net.log
	run jq -c 'select(.secret) | [.secret, .secret_action, .decision, .method, .path, .host]' "$log"
	[ "$output" = "$(printf '%s\n' '["API_TOKEN","refused","denied","GET","/steal","other.sbx.test"]' \
		'["API_TOKEN","refused","denied","GET","/basic","other.sbx.test"]' \
		'["API_TOKEN","refused","denied","GET","/q","other.sbx.test"]' \
		'["API_TOKEN","refused","denied","GET","/q","web.sbx.test"]' \
		'["API_TOKEN","refused","denied","GET","/","nowhere.sbx.test"]' \
		'["API_TOKEN","refused","denied","POST","/post","web.sbx.test"]' \
		'["API_TOKEN","refused","denied","POST","/post","other.sbx.test"]')" ]
	run grep -c "$API_TOKEN" "$log"
	[ "$output" = 0 ]
}

@test "-secret: the value is nowhere the sandbox can read (environ, cmdline, files, memory), nor in its handle, sbx-list, logs, state or backups" {
	printf '%s\n' "$API_TOKEN" >"$BATS_TEST_TMPDIR/tokfile"
	chmod 600 "$BATS_TEST_TMPDIR/tokfile"
	FILE_TOKEN=unused run sbx-create -secret API_TOKEN@web.sbx.test:8090 \
		-secret "FILE_TOKEN=@$BATS_TEST_TMPDIR/tokfile@web.sbx.test:8090" sec
	assert_status 0
	handle=$output
	[[ $handle != *"$API_TOKEN"* ]]
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -H "X-A: $API_TOKEN" -H "X-B: $FILE_TOKEN" http://web.sbx.test:8090/x'
	assert_json ".headers[\"x-a\"] == \"$API_TOKEN\" and .headers[\"x-b\"] == \"$API_TOKEN\""
	# what every process it can see shows, and every file it may write or read
	sbx-exec -raw sec -- sh -c 'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline; env; tar -C / -cf - home tmp run var etc 2>/dev/null' >"$BATS_TEST_TMPDIR/inside" 2>&1 || true
	[ -s "$BATS_TEST_TMPDIR/inside" ]
	grep -q sbxph_ "$BATS_TEST_TMPDIR/inside"
	run grep -caF "$API_TOKEN" "$BATS_TEST_TMPDIR/inside"
	[ "$output" = 0 ]
	# the memory of every process it can read: the windows after each "tok-" (how the test's
	# values start) and each "sbxph_" (a control: the placeholder must be found) as hashes
	ph=$(sbx-exec -raw sec -- printenv API_TOKEN)
	sbx-exec -raw sec -- sh -c 'python3 -c "
import glob, hashlib, re, sys
for pfx, n in ((b\"tok-\", $1), (b\"sbxph_\", $2)):
    for maps in glob.glob(\"/proc/[0-9]*/maps\"):
        try:
            mem = open(maps[:-4] + \"mem\", \"rb\")
            for line in open(maps):
                a, b = (int(x, 16) for x in line.split()[0].split(\"-\"))
                if \"r\" not in line.split()[1] or b - a > 1 << 28: continue
                try:
                    mem.seek(a); data = mem.read(b - a)
                except OSError: continue
                for m in re.finditer(re.escape(pfx), data):
                    print(hashlib.sha256(data[m.start():m.start() + n]).hexdigest())
        except OSError: pass
"' sh "${#API_TOKEN}" "${#ph}" >"$BATS_TEST_TMPDIR/hashes"
	grep -q "$(printf %s "$ph" | sha256sum | cut -d' ' -f1)" "$BATS_TEST_TMPDIR/hashes"
	run grep -c "$(printf %s "$API_TOKEN" | sha256sum | cut -d' ' -f1)" "$BATS_TEST_TMPDIR/hashes"
	[ "$output" = 0 ]
	# the host side: the sandbox's state (spec, plan, logs), sbx-list, the supervisor and
	# the proxy's command lines and environments, a backup of the home
	run grep -rlaF "$API_TOKEN" "$(sandbox_dir sec)"
	[ -z "$output" ]
	run sbx-list
	assert_contains '"name":"sec"'
	[[ $output != *"$API_TOKEN"* ]]
	for pid in $(pgrep -f "sbx-init supervise $(sandbox_dir sec)") $(pgrep -f 'sbx-proxy -sandbox sec '); do
		run grep -caF "$API_TOKEN" "/proc/$pid/cmdline" "/proc/$pid/environ"
		[[ $output != *:[1-9]* ]]
	done
	[ -n "$(pgrep -f 'sbx-proxy -sandbox sec ')" ]
	run sbx-snapshot sec
	assert_status 0
	run sh -c "zcat $HOME/.local/sandboxed-tools/sec/fs/backup-*.tar.gz | grep -caF '$API_TOKEN'"
	[ "$output" = 0 ]
	# the proxy's memory is its own: no process of its user may read it
	pid=$(pgrep -f 'sbx-proxy -sandbox sec ' | head -1)
	run setpriv --reuid="$(stat -c %u "/proc/$pid")" --regid="$(stat -c %g "/proc/$pid")" --clear-groups cat "/proc/$pid/environ"
	[ "$status" -ne 0 ]
}

@test "-secret: bad declarations and missing values are refused before anything starts; kubernetes refuses it" {
	run sbx-create -secret 'API_TOKEN@web.sbx.test' -secret 'API_TOKEN@other.sbx.test' sec
	assert_status 100
	assert_contains "secret API_TOKEN is declared twice"
	run env -u NOPE sbx-create -secret NOPE@web.sbx.test sec
	assert_status 100
	assert_contains "the environment variable NOPE is unset or empty"
	printf 'a\001b\n' >"$BATS_TEST_TMPDIR/ctl"
	run sbx-create -secret "T=@$BATS_TEST_TMPDIR/ctl@web.sbx.test" sec
	assert_status 100
	assert_contains "secret T holds control characters"
	SANDBOX_SECRETS="API_TOKEN@web.sbx.test PATH@x.test" run sbx-create sec
	assert_status 100
	assert_contains "invalid SANDBOX_SECRETS: PATH is set by the sandbox itself"
	# an -upstream-ca bundle larger than the proxy's feed holds is refused at once
	{ head -c 400000 /dev/zero | tr '\0' a; echo; echo "-----BEGIN CERTIFICATE-----"; } >"$BATS_TEST_TMPDIR/big.pem"
	run sbx-create -secret API_TOKEN@web.sbx.test -upstream-ca "$BATS_TEST_TMPDIR/big.pem" sec
	assert_status 100
	assert_contains "cannot read $BATS_TEST_TMPDIR/big.pem: File too large"
	run sbx-create -backend kubernetes -secret API_TOKEN@web.sbx.test sec
	assert_status 100
	assert_contains "-secret is not available on the kubernetes backend"
	[ ! -e "$(sandbox_dir sec)" ]
	# handed on by the programs that create sandboxes, checked at their start
	run agent-loop -secret NOPE@web.sbx.test -session s </dev/null
	assert_status 100
	assert_contains "NOPE is unset or empty"
	run acp-server -secret 'X=@/dev/null@a.test' -listen 127.0.0.1:0 </dev/null
	assert_status 100
	assert_contains "secret X is empty"
	export OPENAI_MODEL=fake-eliza
	run agent-loop -v -secret API_TOKEN@web.sbx.test:8090 -session al <<<'run: printenv API_TOKEN'
	assert_status 0
	assert_contains '-secret=API_TOKEN@web.sbx.test:8090 al'
	assert_contains 'sbxph_'
}

@test "-secret: a create reusing the sandbox asks for the same declarations; a pool never holds or hands out -secret sandboxes" {
	sbx-create -secret API_TOKEN@web.sbx.test:8090 sec >/dev/null
	run sbx-create -secret API_TOKEN@web.sbx.test:8090 sec
	assert_status 0
	assert_json '.reused == true'
	# the same hosts allowed, but without the secret: its placeholder would be a dead name
	run sbx-create -allow-host web.sbx.test:8090 sec
	assert_status 100
	assert_contains "sandbox sec exists with other -secret declarations than these"
	OTHER=x run sbx-create -secret API_TOKEN@web.sbx.test:8090 -secret OTHER@web.sbx.test:8090 sec
	assert_status 100
	run sbx-pool -size 1 -once -secret API_TOKEN@web.sbx.test:8090
	assert_status 100
	assert_contains "a pool cannot hold -secret sandboxes"
	run sbx-pool -size 1 -secret API_TOKEN@web.sbx.test:8090	# refused at start, not warned about each period
	assert_status 100
	assert_contains "a pool cannot hold -secret sandboxes"
	OPENAI_MODEL=fake-eliza run agent-loop -warm 1 -secret API_TOKEN@web.sbx.test:8090 -session wp </dev/null
	assert_status 100
	assert_contains "agent-loop: -warm cannot keep -secret sandboxes ready"
	# a pooled sandbox of the same hosts is never taken by a create that declares a secret
	sbx-pool -size 1 -once -allow-host web.sbx.test:8090 >/dev/null
	run sbx-create -allow-host web.sbx.test:8090 -secret API_TOKEN@web.sbx.test:8090 sec3
	assert_status 0
	assert_json '.pooled != true'
	run sbx-exec -raw sec3 -- sh -c 'printf %s "$API_TOKEN"'
	[[ $output =~ ^sbxph_[0-9a-f]{40}$ ]]
}

@test "-secret over HTTPS: the proxy verifies the real server, the sandbox trusts its CA, the value goes in (curl, Python urllib and requests, git's variables)" {
	run sbx-create -allow-host web.sbx.test:8443 -secret API_TOKEN@web.sbx.test:8453 -upstream-ca "$NETNS_CA" sec
	assert_status 0
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -H "Authorization: Bearer $API_TOKEN" https://web.sbx.test:8453/tls'
	assert_status 0
	assert_json ".headers.authorization == \"Bearer $API_TOKEN\" and .path == \"/tls\""
	run sbx-exec -raw sec -- python3 -c 'import os, urllib.request as u; r = u.Request("https://web.sbx.test:8453/py", headers={"X-Key": os.environ["API_TOKEN"]}); print(u.urlopen(r, timeout=10).read().decode())'
	assert_status 0
	assert_json ".headers[\"x-key\"] == \"$API_TOKEN\""
	run sbx-exec -raw sec -- python3 -c 'import os, requests; print(requests.get("https://web.sbx.test:8453/rq", headers={"Authorization": "token " + os.environ["API_TOKEN"]}, timeout=10).text)'
	assert_status 0
	assert_json ".headers.authorization == \"token $API_TOKEN\""
	run sbx-exec -raw sec -- sh -c 'for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO CURL_CA_BUNDLE; do printenv $v; done | sort -u'
	[ "$output" = /run/sbx/ca-certificates.crt ]
	# the system's bundle has the sandbox's CA too, for tools that read only it
	run sbx-exec -raw sec -- sh -c 'env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -sS -m 10 --cacert /etc/ssl/certs/ca-certificates.crt https://web.sbx.test:8453/sys'
	assert_json '.path == "/sys"'
	# another allowed HTTPS host is a plain tunnel: its own certificate, not the sandbox CA's
	cp "$NETNS_CA" "$(sandbox_dir sec)/home/netns-ca.pem"
	run sbx-exec -raw sec -- curl -sS -m 10 --cacert /home/clawtainer/netns-ca.pem https://web.sbx.test:8443/hello.txt
	[ "$output" = "hello from web" ]
	run sbx-exec -raw sec -- curl -sS -m 10 -o /dev/null https://web.sbx.test:8443/hello.txt
	[ "$status" -ne 0 ]	# the sandbox's CA did not sign it
	# a request line with one space (no target) inside the TLS is refused; the proxy serves on
	run sbx-exec -raw sec -- python3 -c '
import os, socket, ssl, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((p.hostname, p.port), timeout=10)
s.sendall(b"CONNECT web.sbx.test:8453 HTTP/1.1\r\nHost: web.sbx.test:8453\r\n\r\n")
assert s.recv(4096).startswith(b"HTTP/1.1 200")
t = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]).wrap_socket(s, server_hostname="web.sbx.test")
t.sendall(b"ABCDEFGH HTTP/1.1\r\n\r\n")
print(t.recv(4096).split(b"\r\n")[0].decode())'
	assert_status 0
	[ "$output" = "HTTP/1.1 400 Bad Request" ]
	run sbx-exec -raw sec -- curl -sS -m 10 https://web.sbx.test:8453/after
	assert_json '.path == "/after"'
	# hop-by-hop fields stop at the proxy, as on plain HTTP
	run sbx-exec -raw sec -- curl -sS -m 10 -H "Proxy-Authorization: Basic eDp5" -H "Upgrade: h2c" https://web.sbx.test:8453/hop
	assert_json '.path == "/hop" and .headers["proxy-authorization"] == null and .headers.upgrade == null'
	run jq -c 'select(.secret) | [.protocol, .secret, .secret_action, .method, .path]' "$(sandbox_dir sec)/net.log"
	[ "${lines[0]}" = '["connect-tls","API_TOKEN","substituted","GET","/tls"]' ]
	# a client that names another server in its TLS hello than in its CONNECT is refused
	run sbx-exec -raw sec -- python3 -c '
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT web.sbx.test:8453 HTTP/1.1\r\nHost: web.sbx.test:8453\r\n\r\n")
assert b" 200 " in s.recv(4096)
ctx = ssl.create_default_context(cafile="/run/sbx/ca-certificates.crt")
ctx.check_hostname = False
try:
    t = ctx.wrap_socket(s, server_hostname="elsewhere.sbx.test")
    t.sendall(b"GET /sni HTTP/1.1\r\nHost: web.sbx.test\r\n\r\n")
    print("answered" if t.recv(4096) else "closed")
except (ssl.SSLError, OSError) as e:
    print("refused", type(e).__name__)'
	assert_contains refused
}

@test "-secret over HTTPS: a forged certificate on the real host is refused before anything is sent" {
	# without -upstream-ca the test CA is not trusted: the server looks forged
	run sbx-create -secret API_TOKEN@web.sbx.test:8453 sec
	assert_status 0
	: >"$SECRETS_DIR/seen"
	run sbx-exec -raw sec -- sh -c 'curl -sS -m 10 -H "Authorization: Bearer $API_TOKEN" https://web.sbx.test:8453/forged'
	[ "$status" -ne 0 ]
	assert_contains 502
	[ ! -s "$SECRETS_DIR/seen" ]
	run jq -r 'select(.port==8453) | .reason' "$(sandbox_dir sec)/net.log"
	assert_contains "the server's certificate is not trusted for web.sbx.test"
	# a certificate for another name, even from a trusted CA (other.sbx.test's address
	# answers for web.sbx.test's name only through this CA's certificate naming both: use
	# an IP literal the certificate does not name)
	sbx-delete sec >/dev/null
	run sbx-create -secret "API_TOKEN@$WEB:8453" -upstream-ca "$NETNS_CA" sec
	assert_status 0
	run sbx-exec -raw sec -- sh -c "curl -sS -m 10 -H \"X-K: \$API_TOKEN\" https://$WEB:8453/byip"
	[ "$status" -ne 0 ]
	[ ! -s "$SECRETS_DIR/seen" ]
}

@test "-secret over HTTPS: git clone and push with the placeholder in the URL or from GIT_ASKPASS" {
	printf %s "$API_TOKEN" >"$SECRETS_DIR/git-cred"
	git -C "$SECRETS_DIR/repo.git" symbolic-ref HEAD refs/heads/main
	sbx-create -secret API_TOKEN@web.sbx.test:8463 -upstream-ca "$NETNS_CA" sec >/dev/null
	run sbx-exec -raw sec -- sh -c 'set -e; git init -q -b main w; cd w
		git -c user.name=agent -c user.email=agent@sbx.test commit -q --allow-empty -m "from the sandbox"
		git push -q "https://git:$API_TOKEN@web.sbx.test:8463/repo.git" main 2>&1
		cd .. && git clone -q "https://git:$API_TOKEN@web.sbx.test:8463/repo.git" c 2>&1
		git -C c log -1 --format=%s'
	assert_status 0
	[ "${lines[-1]}" = "from the sandbox" ]
	run git -C "$SECRETS_DIR/repo.git" log -1 --format=%s main
	[ "$output" = "from the sandbox" ]
	# the same through GIT_ASKPASS, which prints the placeholder when git asks
	run sbx-exec -raw sec -- sh -c 'set -e; printf "#!/bin/sh\necho \"\$API_TOKEN\"\n" >ask; chmod +x ask
		cd w; git -c user.name=agent -c user.email=agent@sbx.test commit -q --allow-empty -m second
		GIT_ASKPASS=$HOME/ask GIT_TERMINAL_PROMPT=0 git push -q https://git@web.sbx.test:8463/repo.git main 2>&1'
	assert_status 0
	run git -C "$SECRETS_DIR/repo.git" log -1 --format=%s main
	[ "$output" = second ]
	# a wrong credential is the server's to refuse: nothing the proxy adds
	run sbx-exec -raw sec -- sh -c 'GIT_TERMINAL_PROMPT=0 git ls-remote https://git:wrong@web.sbx.test:8463/repo.git 2>&1'
	[ "$status" -ne 0 ]
	run jq -c 'select(.secret) | [.secret_action, .method]' "$(sandbox_dir sec)/net.log"
	assert_contains '["substituted","POST"]'
	run grep -c "$API_TOKEN" "$(sandbox_dir sec)/net.log"
	[ "$output" = 0 ]
}
