#!/usr/bin/env bats
# Security properties that no tool's own file covers (see SECURITY.md for the full map).

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "root's sandbox is root inside and the first of a range of host uids/gids of its own" {
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- sh -c 'id -u; id -g; echo x >~/owned'
	assert_status 0
	[ "$output" = "$(printf '0\n0')" ]
	ids=$(stat -c %u:%g "$XDG_STATE_HOME/sbx/default/demo/home/owned")
	[ "${ids%:*}" -ge 1879113728 ]
	[ "${ids%:*}" -lt $((1 << 31)) ]
	[ $(( (${ids%:*} - 1879113728) % 65536 )) = 0 ]
	[ "${ids#*:}" = "${ids%:*}" ]
	[ "$(stat -c %u:%g "$XDG_STATE_HOME/sbx/default/demo/home")" = "$ids" ]
	SBX_SANDBOX_UID=65534 SBX_SANDBOX_GID=65534 sbx-create pinned >/dev/null
	sbx-exec -raw pinned -- sh -c 'echo x >~/owned'
	[ "$(stat -c %u:%g "$XDG_STATE_HOME/sbx/default/pinned/home/owned")" = "65534:65534" ]
	# a pinned id is the sandbox's only one
	run sbx-exec -raw pinned -- cat /proc/self/uid_map
	[ "$(echo $output)" = "0 0 1" ]
}

@test "masked host secrets read as empty or missing inside" {
	sbx-create demo >/dev/null
	for f in /etc/shadow /etc/gshadow /etc/sudoers; do
		[ -e "$f" ] || continue
		run sbx-exec -raw demo -- sh -c "cat $f 2>/dev/null"
		[ -z "$output" ]
	done
	run sbx-exec -raw demo -- ls /etc/ssh
	[ -z "$output" ]
}

@test "a sandbox has its own user, mount, pid, ipc, uts, network and cgroup namespaces" {
	sbx-create demo >/dev/null
	for ns in user mnt pid ipc uts net cgroup; do
		inside=$(sbx-exec -raw demo -- readlink /proc/self/ns/$ns)
		[ -n "$inside" ]
		[ "$inside" != "$(readlink /proc/self/ns/$ns)" ]
	done
	# pid 1 inside is bubblewrap's init, and no host process is visible
	run sbx-exec -raw demo -- sh -c 'ls /proc | grep -c "^[0-9]"'
	[ "$output" -lt 10 ]
}

@test "the environment inside holds only the basics and what the caller passes" {
	SECRET_TOKEN=s3cret AWS_SECRET_ACCESS_KEY=aws KUBECONFIG=/x sbx-create demo >/dev/null
	run sbx-exec -raw demo -- env
	assert_status 0
	[ "$(printf '%s\n' "$output" | cut -d= -f1 | sort | tr '\n' ' ')" = "HOME HOSTNAME LANG PATH PWD TERM " ]
	run sbx-exec demo <<<'{"command":["sh","-c","echo $ONLY_THIS"],"env":{"ONLY_THIS":"passed"}}'
	assert_json '.stdout == "passed\n"'
}

@test "the API key never appears on any command line while a turn runs" {
	export GEMINI_API_KEY=sk-argv-canary-1234 OPENAI_MODEL=fake-eliza
	printf 'run: sleep 2; echo done\n/exit\n' | agent-loop -session argv >"$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	seen=0 scans=0
	while kill -0 "$pid" 2>/dev/null && [ "$scans" -lt 400 ]; do
		# (the pattern does not match itself: a pid of the list, gone and reused by this very
		# grep on a busy machine, would show the grep's own command line)
		if grep -qa 'sk-argv-canar[y]' /proc/[0-9]*/cmdline 2>/dev/null; then seen=1; fi
		scans=$((scans + 1))
		sleep 0.01	# (not a wait): it samples every command line while the turn runs
	done
	wait "$pid"
	grep -q "done" "$BATS_TEST_TMPDIR/out"
	[ "$scans" -gt 10 ]
	[ "$seen" = 0 ]
	! grep -q sk-argv-canary "$BATS_TEST_TMPDIR/out"
}

@test "acp-server closes a connection after three wrong tokens" {
	echo right-token >"$BATS_TEST_TMPDIR/token"
	export OPENAI_MODEL=fake-eliza
	run /usr/bin/python3 - "$SBX_BIN/acp-server" "$BATS_TEST_TMPDIR/token" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "-stdio", "-auth-token-file", sys.argv[2]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    return json.loads(p.stdout.readline())
send(0, "initialize", {"protocolVersion": 1})
for i in range(1, 4):
    r = send(i, "authenticate", {"methodId": "bearer-token", "_meta": {"token": "wrong%d" % i}})
    assert r["error"]["code"] == -32000, r
rest = p.stdout.read()          # EOF: the server hung up
print("closed", len(rest), p.wait(timeout=10))
PY
	assert_status 0
	assert_contains "closed 0"
}
