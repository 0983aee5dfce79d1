# helpers.bash — loaded by every bats file: a private HOME and state directory per test,
# the built programs first on PATH, small assertions, and waiting helpers.
# shellcheck shell=bash

# The tree and its programs, also for setup_file (which runs before any setup_sbx_env), so
# `bats tests/X.bats` runs from anywhere with nothing set.
export SBX_TOP=${SBX_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export SBX_BIN=${SBX_BIN:-$SBX_TOP/bin}
export SBX_UNIT=${SBX_UNIT:-$SBX_TOP/build/tests}

setup_sbx_env() {
	export PATH="$SBX_BIN:$PATH"
	# SBX_TEST_POOL=1: every sbx-create the test runs takes a pooled sandbox (tests/pool/)
	if [ -n "${SBX_TEST_POOL-}" ]; then export PATH="$SBX_TOP/tests/pool:$PATH"; fi
	export HOME="$BATS_TEST_TMPDIR/home"
	export XDG_STATE_HOME="$BATS_TEST_TMPDIR/state"
	mkdir -p "$HOME" "$XDG_STATE_HOME"
	unset SANDBOX_BACKEND SANDBOX_NAMESPACE SANDBOX_IMAGE SANDBOX_HOME_DIR KUBECONFIG
	unset GEMINI_API_KEY OPENAI_API_KEY OPENAI_BASE_URL OPENAI_MODEL MODEL SESSION_NAME TOOLSET
}

# closed_port: a loopback TCP port nothing listens on, for "nothing listening" cases: one the
# kernel gave a socket that is closed again (a fixed port may be a user's own server; the
# lint in tests/lint.bats rejects them).
closed_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Deletes every local sandbox the test made, so no holder outlives its test.
teardown_sbx_env() {
	local n
	if [ -d "$XDG_STATE_HOME/sbx" ]; then
		for n in $(sbx-list 2>/dev/null | jq -r '.name' 2>/dev/null); do
			sbx-delete "$n" >/dev/null 2>&1 || true
		done
		# sbx-pool's sandboxes: their supervisors, each by the pid it recorded, waited for
		for n in "$XDG_STATE_HOME"/sbx/*/pool-*/supervisor.pid; do
			[ -f "$n" ] || continue
			n=$(cat "$n")
			kill "$n" 2>/dev/null && wait_until -t 10 gone "$n" || true
		done
	fi
}

# assert_json EXPR: jq -e EXPR against $output, which must not be empty (jq -e says yes to
# no input at all).
assert_json() {
	if [ -z "$output" ] || ! printf '%s' "$output" | jq -e "$1" >/dev/null; then
		echo "jq assertion failed: $1" >&2
		echo "output: $output" >&2
		return 1
	fi
}

assert_status() {
	if [ "$status" -ne "$1" ]; then
		echo "expected status $1, got $status" >&2
		echo "output: $output" >&2
		return 1
	fi
}

assert_contains() {
	case $output in
	*"$1"*) ;;
	*) echo "expected output to contain: $1" >&2; echo "output: $output" >&2; return 1 ;;
	esac
}

# man_examples PROG: prints the shell lines of the EXAMPLES section of man/man1/PROG.1
# (the text between .EX and .EE), so tests can run what the manual shows.
man_examples() {
	awk '
		/^\.SH / { inex = ($2 == "EXAMPLES") }
		inex && /^\.EX/ { code = 1; next }
		inex && /^\.EE/ { code = 0; next }
		inex && code { print }
	' "$SBX_TOP/man/man1/$1.1" | sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e "s/\\\\(aq/'/g"
}

# run_man_examples PROG: runs those lines with bash -e; fails on the first failing line.
run_man_examples() {
	local script
	script=$(man_examples "$1")
	[ -n "$script" ] || { echo "no EXAMPLES in $1.1" >&2; return 1; }
	bash -euo pipefail -c "$script"
}

# wait_until [-t SECONDS] [-p PID] [!] CMD…: runs CMD every 0.1 s until it succeeds (with !,
# until it fails), at most SECONDS (default 30, whole seconds). With -p, gives up as soon as
# process PID is gone (a server that died will never write what is waited for). Either way it
# fails saying what it waited for (redis's wait_for_condition … else fail): the one poll loop
# of the suite, so no wait falls through silently.
wait_until() {
	local secs=30 pid= neg= i
	while :; do
		case ${1-} in
		-t) secs=$2; shift 2 ;;
		-p) pid=$2; shift 2 ;;
		*) break ;;
		esac
	done
	if [ "${1-}" = '!' ]; then neg='! '; shift; fi
	for ((i = 0; i < secs * 10; i++)); do
		if [ -n "$neg" ]; then "$@" || return 0; else "$@" && return 0; fi
		if [ -n "$pid" ] && gone "$pid"; then
			# one last look: it may have done it just before it went
			if [ -n "$neg" ]; then "$@" || return 0; else "$@" && return 0; fi
			echo "process $pid exited while waiting for: $neg$*" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "timed out after ${secs} s waiting for: $neg$*" >&2
	return 1
}

# url_refused URL: true when nothing listens at URL any more (curl: could not connect).
url_refused() {
	local rc=0
	curl -s -o /dev/null "$1" || rc=$?
	[ "$rc" = 7 ]
}

# gone PID: true when the process no longer runs (exited, or a zombie nobody reaped).
gone() {
	case $(ps -o stat= -p "$1" 2>/dev/null) in Z*|"") return 0 ;; esac
	return 1
}

# A test that looks for its own processes with pgrep names them uniquely, e.g.
# `sleep 313.$$` ($$, the test's process, is unique on the machine while it runs): the same
# suite run by someone else at the same time is never seen, nor killed.

# finish PID: waits (at most 30 s) for a background process of the test; returns its status.
finish() {
	wait_until gone "$1" || kill -9 "$1"
	wait "$1"
}

# terminate PID: SIGTERM, then finish: the status the process exited with.
terminate() {
	kill -TERM "$1" 2>/dev/null || true
	finish "$1"
}

# fed PROGRAM ARG…: PROGRAM in the background reading the FIFO $BATS_TEST_TMPDIR/in, which
# the test holds open on fd 4 (write lines with >&4); its stdout and stderr go to
# $BATS_TEST_TMPDIR/out and err. FED_PID is PROGRAM's own pid, so signals reach it (a program,
# not a shell function: set variables with env VAR=… PROGRAM). fed_end closes the input and
# waits (bounded), returning PROGRAM's status.
fed() {
	mkfifo "$BATS_TEST_TMPDIR/in"
	"$@" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	FED_PID=$!
	exec 4>"$BATS_TEST_TMPDIR/in"
}
fed_end() {
	exec 4>&-
	finish "$FED_PID"
}

# hist SESSION: the upstream path of the session's chat history.
hist() {
	echo "$HOME/.local/sandboxed-tools/$1/sessions/latest.jsonl"
}

# with_small_ram CMD...: runs CMD as on a machine with 1 GiB of RAM (a preload library, built
# once per test, makes sysconf(_SC_PHYS_PAGES) say so), for the defaults that follow the RAM.
# Only CMD's own process: the library takes itself out of the environment its children get.
with_small_ram() {
	local so=$BATS_TEST_TMPDIR/small-ram.so
	if [ ! -e "$so" ]; then
		printf '%s\n' '#define _GNU_SOURCE' '#include <dlfcn.h>' '#include <stdlib.h>' '#include <unistd.h>' \
			'__attribute__((constructor)) static void alone(void) { unsetenv("LD_PRELOAD"); }' \
			'long sysconf(int n)' '{' '	static long (*real)(int);' \
			'	if (!real) real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");' \
			'	return n == _SC_PHYS_PAGES ? (1L << 30) / real(_SC_PAGESIZE) : real(n);' '}' |
			cc -shared -fPIC -x c -o "$so" - -ldl || return 1
	fi
	LD_PRELOAD=$so ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "$@"
}

# fifty PORT: opens 50 connections to 127.0.0.1:PORT, then sends a request on each, then reads
# each answer and closes; prints how many were index.html's (sbx-port's tests).
fifty() {
	python3 -c '
import socket, sys
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60) for _ in range(50)]
for c in cs:
    c.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
ok = 0
for c in cs:
    got = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
    c.close()
    ok += got.startswith(b"HTTP/1.0 200") and got.endswith(b"hello\n")
print(ok)' "$1"
}
