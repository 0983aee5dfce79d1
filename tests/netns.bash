# netns.bash — "the outside" for network tests, made on this machine: one test host in a
# network namespace of its own, joined to the host by a veth pair, with addresses from
# 198.18.0.0/15 (reserved for network tests, RFC 2544), serving HTTP and HTTPS on two
# addresses and DNS for the names *.sbx.test. Nothing is ever sent to any other address: the
# sandboxes' and the proxy's resolver is this DNS server (SBX_RESOLV_CONF), never the
# machine's. netns_up in setup_file, netns_down in teardown_file (it removes everything,
# whatever state a failed test left).
#   WEB=198.18.N.2 (web.sbx.test, also the DNS server), OTHER=198.18.N.3 (other.sbx.test),
#   HTTP on port 8080 and HTTPS on 8443 at both; /hello.txt says "hello from web";
#   NETNS_CA: the test CA's certificate; HOST_PORT: a server on the host's 127.0.0.1 only.
#   Internal addresses for the proxy's address checks: INTRA=10.77.N.2 (intra.sbx.test,
#   served like WEB), 172.16.N.2, 192.168.N.2, 100.64.N.2 and 100.100.100.200 held by the test
#   host, fd00:ec2::254 and the NAT64 form of INTRA routed to it: each a host route into the
#   veth, so that nothing for them could leave this machine even were the proxy to connect
#   (the metadata ones are the same in every run: tests never connect to them on purpose).

netns_up() {
	local d=$BATS_FILE_TMPDIR/netns n tries=0
	mkdir -p "$d/www"
	# A subnet and names unlikely to meet another run's.
	n=$(( (RANDOM % 200) + 20 ))
	while ip netns list | grep -q "^sbxt$n " && [ $tries -lt 20 ]; do
		n=$(( (RANDOM % 200) + 20 )); tries=$((tries + 1))
	done
	export NETNS_ID=$n NETNS=sbxt$n WEB=198.18.$n.2 OTHER=198.18.$n.3 HOSTSIDE=198.18.$n.1
	echo "$n" >"$d/id"
	ip netns add "$NETNS"
	ip link add "sbxt${n}h" type veth peer name "sbxt${n}w"
	ip link set "sbxt${n}w" netns "$NETNS"
	ip addr add "$HOSTSIDE/24" dev "sbxt${n}h"
	ip link set "sbxt${n}h" up
	ip -n "$NETNS" addr add "$WEB/24" dev "sbxt${n}w"
	ip -n "$NETNS" addr add "$OTHER/24" dev "sbxt${n}w"
	ip -n "$NETNS" link set "sbxt${n}w" up
	ip -n "$NETNS" link set lo up
	export INTRA=10.77.$n.2 NAT64; NAT64=$(printf '64:ff9b::a4d:%x' $((n * 256 + 2)))
	local a
	for a in "$INTRA" "172.16.$n.2" "192.168.$n.2" "100.64.$n.2" 100.100.100.200; do
		ip -n "$NETNS" addr add "$a/32" dev "sbxt${n}w"
		ip route replace "$a/32" dev "sbxt${n}h"
	done
	for a in fd00:ec2::254 "$NAT64"; do
		# (without IPv6 on the host nothing could go there anyway)
		ip -6 route replace "$a/128" dev "sbxt${n}h" 2>/dev/null || true
	done
	echo "hello from web" >"$d/www/hello.txt"
	head -c 1048576 /dev/zero >"$d/www/1m.bin"
	# A CA and a certificate for web.sbx.test, so HTTPS through CONNECT can be verified.
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sbx-test-ca \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=web.sbx.test -keyout "$d/web.key" \
		-out "$d/web.csr" 2>/dev/null
	printf 'subjectAltName=DNS:web.sbx.test,DNS:other.sbx.test\n' >"$d/ext"
	openssl x509 -req -in "$d/web.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext" -out "$d/web.pem" 2>/dev/null
	export NETNS_CA=$d/ca.pem
	cat >"$d/serve.py" <<'PY'
import http.server, socketserver, ssl, sys, threading, functools
root, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
class Fast(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def copyfile(self, src, dst):   # zero-copy, so the server is never the bottleneck
        self.wfile.flush()
        self.connection.sendfile(src)
H = functools.partial(Fast, directory=root)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
servers = []
for addr in sys.argv[4:]:
    servers.append(S((addr, 8080), H))
    s = S((addr, 8443), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    servers.append(s)
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
servers[0].serve_forever()
PY
	ip netns exec "$NETNS" /usr/bin/python3 "$d/serve.py" "$d/www" "$d/web.pem" "$d/web.key" \
		"$WEB" "$OTHER" "$INTRA" >"$d/serve.out" 2>"$d/serve.err" 3>&- &
	echo $! >"$d/serve.pid"
	ip netns exec "$NETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--listen-address="$WEB" --bind-interfaces --port=53 --pid-file= \
		--address=/web.sbx.test/"$WEB" --address=/other.sbx.test/"$OTHER" \
		--address=/loop.sbx.test/127.0.0.1 --address=/sub.web.sbx.test/"$WEB" \
		--address=/self.sbx.test/"$HOSTSIDE" --address=/meta.sbx.test/169.254.169.254 \
		--address=/intra.sbx.test/"$INTRA" --address=/p172.sbx.test/"172.16.$n.2" \
		--address=/p192.sbx.test/"192.168.$n.2" --address=/cgnat.sbx.test/"100.64.$n.2" \
		--address=/alibaba.sbx.test/100.100.100.200 --address=/ec2.sbx.test/fd00:ec2::254 \
		--address=/nat64.sbx.test/"$NAT64" --address=/mapped.sbx.test/"::ffff:$INTRA" \
		--address=/mixed.sbx.test/"$INTRA" --address=/mixed.sbx.test/"$WEB" \
		--log-facility="$d/dnsmasq.log" >/dev/null 2>&1 3>&- &
	echo $! >"$d/dns.pid"
	printf 'nameserver %s\n' "$WEB" >"$d/resolv.conf"
	export SBX_RESOLV_CONF=$d/resolv.conf
	# A service only the host's loopback offers: no sandbox may reach it.
	mkdir -p "$d/hostonly"
	echo "host-only-secret" >"$d/hostonly/secret.txt"
	/usr/bin/python3 -c '
import http.server, functools, socketserver, sys
H = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
H.log_message = lambda *a: None
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$d/hostonly" >"$d/hostport" 2>/dev/null 3>&- &
	echo $! >"$d/host.pid"
	wait_until grep -q ready "$d/serve.out"
	wait_until test -s "$d/hostport"
	export HOST_PORT; HOST_PORT=$(cat "$d/hostport")
	wait_until curl -sf -m 2 "http://$WEB:8080/hello.txt" -o /dev/null
}

netns_down() {
	local d=$BATS_FILE_TMPDIR/netns n p
	[ -f "$d/id" ] || return 0
	n=$(cat "$d/id")
	for p in serve dns host; do
		[ -f "$d/$p.pid" ] && kill "$(cat "$d/$p.pid")" 2>/dev/null
	done
	ip link del "sbxt${n}h" 2>/dev/null
	ip netns del "sbxt$n" 2>/dev/null
	return 0
}
