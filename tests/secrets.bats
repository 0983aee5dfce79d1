#!/usr/bin/env bats
# -secret: a credential a sandbox can use but never see. The sandbox holds a placeholder;
# sbx-proxy puts the value in its place in header fields of requests to the secret's hosts
# only, and refuses a placeholder anywhere else. "The outside" is the test host of
# tests/netns.bash, with an echo server here that answers with the request it received.

load helpers
load netns

# The echo server: on port 8090 of WEB and OTHER, answers every request with what it got
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
servers = [S((a, 8090), Echo) for a in sys.argv[2:]]
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
servers[0].serve_forever()
PY
	ip netns exec "$NETNS" /usr/bin/python3 "$SECRETS_DIR/echo.py" "$SECRETS_DIR/seen" \
		"$WEB" "$OTHER" >"$SECRETS_DIR/echo.out" 2>"$SECRETS_DIR/echo.err" 3>&- &
	echo $! >"$SECRETS_DIR/echo.pid"
	wait_until grep -q ready "$SECRETS_DIR/echo.out"
}
teardown_file() {
	[ -f "$SECRETS_DIR/echo.pid" ] && kill "$(cat "$SECRETS_DIR/echo.pid")" 2>/dev/null
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

@test "-secret: the value is nowhere the sandbox can read, nor in its handle, sbx-list, logs, state or backups" {
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
