#!/usr/bin/env bats
# Attacks on the local backend's containment, as a hostile command would try them (issues 13
# and 14). Each case succeeded before its defence was built; SECURITY.md maps every defence
# to its case here.

load helpers

setup() {
	setup_sbx_env
	export OPENAI_API_KEY=sk-canary-openai-5150 GEMINI_API_KEY=canary-gemini-8086
	export SBX_ARBITRARY=canary-arbitrary-6502
}
teardown() { teardown_sbx_env; }

# put_probe NAME: copies tests/probe.c's sbx-probe to /tmp in sandbox NAME.
put_probe() {
	sbx-exec -raw "$1" -- sh -c 'cat >/tmp/sbx-probe && chmod 755 /tmp/sbx-probe' \
		<"${SBX_UNIT:-$SBX_TOP/build/tests}/sbx-probe"
}

# descendants PID: PID and every process below it, one per line.
descendants() {
	local pids=$1 p
	while [ -n "$pids" ]; do
		printf '%s\n' $pids
		pids=$(for p in $pids; do pgrep -P "$p" || true; done)
	done
}

# What a command runs to list the pids of every sbx-init process it can see.
OURS='for p in /proc/[0-9]*; do case $(tr "\0" " " <$p/cmdline) in /run/sbx/sbx-init*) echo ${p#/proc/};; esac; done'

# What a command runs to read every process it can see: each /proc/PID's cmdline and
# environ, NULs as newlines, then how many it scanned.
SCAN='n=0; for p in /proc/[0-9]*; do n=$((n+1)); echo "== $p"; tr "\0" "\n" <$p/cmdline; echo; tr "\0" "\n" <$p/environ 2>/dev/null; done; echo "scanned $n"'

# assert_clean TEXT: a scan ran (its own environment was readable) and found no canary and
# nothing of the host's paths.
assert_clean() {
	case $1 in *"scanned "*) ;; *) echo "no scan in: $1" >&2; return 1 ;; esac
	case $1 in *HOME=/home/clawtainer*) ;; *) echo "no environ read in: $1" >&2; return 1 ;; esac
	case $1 in *canary* | *"$BATS_TEST_TMPDIR"* | *sbx-stage*)
		echo "leaked: $1" >&2; return 1 ;;
	esac
}

# ---- issue 13.1: the caller's environment and host paths ----

@test "env: no process a command can see holds the caller's keys or host paths (sbx-exec)" {
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- sh -c "$SCAN"
	assert_status 0
	assert_clean "$output"
}

@test "env: no process a command can see holds the caller's keys or host paths (agent-loop)" {
	printf 'run: %s\n/exit\n' "$SCAN" | OPENAI_MODEL=fake-eliza agent-loop -session envscan >"$BATS_TEST_TMPDIR/out" 2>&1
	assert_clean "$(jq -r 'select(.role == "tool") | .content' "$(hist envscan)")"
}

@test "env: no process a command can see holds the caller's keys or host paths (acp-server)" {
	export SCAN
	run sh -c 'OPENAI_MODEL=fake-eliza acp-client -cmd "acp-server -stdio" -yolo -prompt "run: $SCAN" 2>/dev/null'
	assert_status 0
	assert_contains "exit_code: 0"
	assert_clean "$output"
}

@test "env: the supervisor, bubblewrap and the exec service start with a minimal environment" {
	sbx-create demo >/dev/null
	sup=$(cat "$XDG_STATE_HOME/sbx/default/demo/supervisor.pid")
	[ "$(tr '\0' ' ' <"/proc/$sup/environ")" = "PATH=/usr/sbin:/usr/bin:/sbin:/bin " ]
	all=$(descendants "$sup")
	[ "$(echo $all | wc -w)" -ge 4 ]	# supervisor, bwrap, bwrap's pid 1, the service…
	for p in $all; do
		run tr '\0' '\n' <"/proc/$p/environ"
		[[ "$output" != *canary* ]]
		[[ "$output" != *XDG_* ]]
		[[ "$output" != *"HOME=$HOME"* ]]
	done
}

# ---- issue 13.2: the exec service, the shepherds and the supervisor out of reach ----

@test "service: a command sees no sbx process but its namespace's init, and cannot take hold of it" {
	sbx-create demo >/dev/null
	put_probe demo
	# Before, the service (pid 2) and every shepherd were here, with the commands' uid.
	run sbx-exec -raw demo -- sh -c "$OURS"
	assert_status 0
	[ "$output" = 1 ]
	run sbx-exec -raw demo -- sh -c "/tmp/sbx-probe reach \$($OURS)"
	assert_status 0
	[ "$output" = "blocked 1" ]	# no pidfd_getfd, ptrace, process_vm_readv, environ, mem, fd
	run sbx-exec -raw demo -- sh -c 'cat /proc/1/environ'
	assert_status 1
	assert_contains "Permission denied"
}

@test "timeout: killing or stopping its parent or any other process lets nothing outlive it" {
	sbx-create demo >/dev/null
	# The issue's attack: its parent is in no namespace it can see ($PPID is 0), so the
	# shell only killed its own process group.
	run sbx-exec -raw -timeout 2s demo -- sh -c 'kill -9 $PPID; exec sleep 305'
	assert_status 137
	for sig in KILL STOP; do
		run sbx-exec -raw -timeout 1s demo -- sh -c "for p in \$(ps -eo pid=); do [ \$p = \$\$ ] || kill -$sig \$p; done 2>/dev/null; exec sleep 306"
		assert_status 124
		assert_contains "timed out after 1s and was killed"
	done
	run sbx-exec -raw demo -- ps -eo stat=,args=
	assert_status 0
	[[ "$output" != *"sleep 30"* ]]
	[[ "$output" != T* ]]	# the commands' init was not stopped either
	run sbx-exec demo -- echo alive
	assert_json '.stdout == "alive\n"'
}

@test "kill: a process that made itself non-dumpable and daemonized is killed too" {
	sbx-create demo >/dev/null
	hide='import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); open("hidden", "w"); time.sleep(307)'
	sbx-exec -raw -timeout 60s demo -- sh -c "(setsid python3 -c '$hide' &); (setsid sh -c 'sleep 308 &'); sleep 309" &
	pid=$!
	wait_until test -e "$XDG_STATE_HOME/sbx/default/demo/home/hidden"
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" -eq 143 ]
	run sbx-exec -raw demo -- ps -eo args=
	[[ "$output" != *"sleep(307)"* ]]
	[[ "$output" != *"sleep 30"* ]]
}

# ---- issue 13.3: no descriptor of the caller's in the sandbox ----

@test "fds: what a command leaves running cannot write the caller's files once it has ended" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c '(trap "" PIPE; sleep 0.5; echo LATE; echo LATE >&2; ls -l /proc/self/fd/ >~/fds; echo >~/bgdone) &' \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	wait_until test -e "$XDG_STATE_HOME/sbx/default/demo/home/bgdone"
	run cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	[ -z "$output" ]
	run cat "$XDG_STATE_HOME/sbx/default/demo/home/fds"
	[[ "$output" != *"$BATS_TEST_TMPDIR"* ]]	# pipes of sbx-exec's, not the caller's files
	[[ "$output" == *"2 -> pipe:"* ]]
}

@test "fds: a terminal on stdin is relayed; what is typed after the command ended stays the caller's" {
	sbx-create demo >/dev/null
	run /usr/bin/python3 - "$SBX_BIN/sbx-exec" "$XDG_STATE_HOME/sbx/default/demo/home" <<'PY'
import os, pty, subprocess, sys, termios, time
exe, home = sys.argv[1], sys.argv[2]
m, s = pty.openpty()
before = termios.tcgetattr(s)
# The command reads a line, then leaves a process behind that tries to take the terminal:
# raw mode, and the next thing typed.
script = ("read line; echo got:$line; isatty=no; [ -t 0 ] && isatty=yes; echo tty:$isatty; "
          "(trap '' PIPE; stty raw -echo 2>/dev/null; sleep 1; head -c 100 >stolen; echo >bgdone) &")
p = subprocess.Popen([exe, "-raw", "demo", "--", "sh", "-c", script], stdin=s,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
os.write(m, b"hello\n")
out = p.communicate(timeout=60)[0].decode()
os.write(m, b"SECRET-KEYSTROKES\n")
for _ in range(600):
    if os.path.exists(os.path.join(home, "bgdone")):
        break
    time.sleep(0.05)
stolen = open(os.path.join(home, "stolen")).read()
print(out.strip(), "| stolen:", repr(stolen), "| termios kept:", termios.tcgetattr(s) == before)
PY
	assert_status 0
	[ "$output" = "got:hello
tty:no | stolen: '' | termios kept: True" ]
}

# ---- issue 13.5: removal complete whatever the home holds ----

# What a command runs to leave a home sbx once could not remove: a tree deeper than PATH_MAX
# with directories locked to everyone on the way, and names of odd bytes.
LITTER='import os
os.mkdir("-rf"); os.chmod("-rf", 0); os.mkdir("a\nb"); open("n" * 255, "w").close()
os.symlink("/etc", "etc-link"); os.mkdir("deep"); os.chdir("deep")
for i in range(1500):
    os.mkdir("dd"); os.chdir("dd")
open("bottom", "w").close()
for i in range(1500):
    os.chdir("..")
    if i % 200 == 100: os.chmod("dd", 0)'

# nothing_left NAME: no directory and no trash of NAME in the namespace.
nothing_left() {
	local ns=$XDG_STATE_HOME/sbx/default
	[ ! -e "$ns/$1" ] && [ -z "$(find "$ns" -maxdepth 1 -name ".trash.$1.*")" ]
}

@test "removal: a home deeper than PATH_MAX, locked and oddly named, is gone after delete" {
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- python3 -c "$LITTER"
	assert_status 0
	run sbx-delete demo
	assert_status 0
	nothing_left demo
}

@test "removal: the same home is gone when the sandbox expires" {
	sbx-create -ttl 3s demo >/dev/null
	run sbx-exec -raw demo -- python3 -c "$LITTER"
	assert_status 0
	wait_until nothing_left demo
}

@test "removal: the trash of a removal cut short is collected by the next command" {
	ns=$XDG_STATE_HOME/sbx/default
	# What a supervisor killed while removing leaves: the renamed directory, its lock held
	# by nobody, the home half gone.
	for t in ghost.4242 other.77; do
		mkdir -p "$ns/.trash.$t/home"
		: >"$ns/.trash.$t/lock"
		(cd "$ns/.trash.$t/home" && python3 -c "$LITTER")
	done
	sbx-list >/dev/null
	[ ! -e "$ns/.trash.ghost.4242" ]
	[ ! -e "$ns/.trash.other.77" ]
	# one a live supervisor is removing (its lock held) is left to it
	mkdir -p "$ns/.trash.busy.1/home"
	: >"$ns/.trash.busy.1/lock"
	flock -o "$ns/.trash.busy.1/lock" sleep 60 &
	holder=$!
	wait_until sh -c "! flock -n '$ns/.trash.busy.1/lock' true"
	sbx-create demo >/dev/null
	[ -d "$ns/.trash.busy.1/home" ]
	pkill -P "$holder" sleep
	wait "$holder" || true
	sbx-delete demo >/dev/null
	sbx-list >/dev/null
	[ ! -e "$ns/.trash.busy.1" ]
}

# ---- issue 14.1: the syscall filter, no nested user namespaces ----

@test "seccomp: every refused call gets its errno inside a sandbox (Docker's, or stricter)" {
	sbx-create demo >/dev/null
	put_probe demo
	run sbx-exec -raw demo -- grep -E '^Seccomp' /proc/self/status
	[ "$output" = "$(printf 'Seccomp:\t2\nSeccomp_filters:\t2')" ]	# the sandbox's and the commands'
	run sbx-exec -raw demo -- /tmp/sbx-probe syscalls
	assert_status 0
	diff -u - <(printf '%s\n' "$output") <<-'TABLE'
	keyctl EPERM
	add_key EPERM
	request_key EPERM
	perf_event_open EPERM
	userfaultfd EPERM
	bpf EPERM
	io_uring_setup EPERM
	mbind EPERM
	set_mempolicy EPERM
	get_mempolicy EPERM
	move_pages EPERM
	migrate_pages EPERM
	mount EPERM
	umount2 EPERM
	open_tree EPERM
	fsopen EPERM
	fsconfig EPERM
	fsmount EPERM
	fspick EPERM
	move_mount EPERM
	mount_setattr EPERM
	pivot_root EPERM
	chroot EPERM
	unshare(CLONE_NEWUSER) EPERM
	unshare(CLONE_NEWNS) EPERM
	setns EPERM
	clone(CLONE_NEWUSER) EPERM
	clone3 ENOSYS
	pidfd_getfd EPERM
	kcmp EPERM
	process_vm_readv(self) ok
	process_vm_readv(init) EPERM
	ptrace(init) EPERM
	personality(PER_LINUX) ok
	personality(READ_IMPLIES_EXEC) EPERM
	personality(ADDR_NO_RANDOMIZE) EPERM
	socket(AF_VSOCK) EPERM
	socket(AF_PACKET) EPERM
	socket(AF_INET, SOCK_RAW) EPERM
	socket(AF_INET6, SOCK_RAW) EPERM
	socket(AF_NETLINK, SOCK_RAW) ok
	socket(AF_INET, SOCK_STREAM) ok
	ioctl(TIOCSTI) EPERM
	ioctl(TIOCSTI, high bits set) EPERM
	ioctl(TIOCLINUX) EPERM
	ioctl(TIOCGWINSZ) ok
	TABLE
}

@test "seccomp: common work still runs (python3 ssl/sqlite3/subprocess, gcc, git, pip, node)" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'cat >work.sh' <"$SBX_TOP/tests/attacks/common-work.sh"
	run sbx-exec -raw -timeout 300s demo -- sh work.sh
	assert_status 0
	want="python OpenSSL 7 sub
compiled and ran
git 1 commit
wheel installed"
	command -v node >/dev/null && want="$want
node 42"
	[ "$output" = "$want" ]
}

# ---- issue 14.3: a host identity of its own ----

@test "ids: two sandboxes run as different host uids and gids, so no per-uid quota is shared" {
	sbx-create one >/dev/null
	sbx-create two >/dev/null
	ns=$XDG_STATE_HOME/sbx/default
	a=$(stat -c %u:%g "$ns/one/home") b=$(stat -c %u:%g "$ns/two/home")
	[ "$a" != "$b" ]
	for n in one two; do
		# the processes of each sandbox (its supervisor's descendants) run as its home's owner
		sup=$(cat "$ns/$n/supervisor.pid")
		child=$(pgrep -P "$sup")
		run sh -c "grep -E '^(Uid|Gid):' /proc/$child/status | awk '{print \$2}' | paste -sd:"
		[ "$output" = "$(stat -c %u:%g "$ns/$n/home")" ]
		run sbx-exec -raw "$n" -- id -u
		[ "$output" = 0 ]
	done
}

@test "ids: root's sandboxes made at once each get 65536 host ids, no two ranges overlapping" {
	for i in 1 2 3 4; do sbx-create "r$i" >/dev/null & done
	wait
	ns=$XDG_STATE_HOME/sbx/default
	for i in 1 2 3 4; do
		run sbx-exec -raw "r$i" -- sh -c 'cat /proc/self/uid_map /proc/self/gid_map; touch lo hi; chown 65535:65535 hi'
		assert_status 0
		[ "$(echo $output)" = "0 0 65536 0 0 65536" ]
		lo=$(stat -c %u "$ns/r$i/home/lo")
		[ "$(stat -c %g "$ns/r$i/home/lo")" = "$lo" ]
		# the last id inside is the range's last on the host
		[ "$(stat -c %u:%g "$ns/r$i/home/hi")" = "$((lo + 65535)):$((lo + 65535))" ]
		echo "$lo"
	done >"$BATS_TEST_TMPDIR/starts"
	sort -n "$BATS_TEST_TMPDIR/starts" | awk 'NR > 1 && $1 - prev < 65536 { bad = 1 } { prev = $1 } END { exit bad }'
	[ "$(sort -u "$BATS_TEST_TMPDIR/starts" | wc -l)" = 4 ]
	# one id past the range is no id of the sandbox's
	run sbx-exec -raw r1 -- chown 65536 lo
	assert_status 1
}

@test "ids: a sandbox that takes every inotify instance leaves other sandboxes and the host theirs, and its other ids gain it none" {
	max=$(cat /proc/sys/fs/inotify/max_user_instances)
	sbx-create a >/dev/null
	sbx-create b >/dev/null
	hog='import ctypes, sys, time
libc = ctypes.CDLL(None)
fds = [libc.inotify_init() for _ in range(int(sys.argv[1]) + 8)]
print(sum(f >= 0 for f in fds), flush=True)
time.sleep(120)'
	sbx-exec -raw -timeout 150s a -- python3 -c "$hog" "$max" >"$BATS_TEST_TMPDIR/hog" &
	wait_until -p $! test -s "$BATS_TEST_TMPDIR/hog"
	[ "$(cat "$BATS_TEST_TMPDIR/hog")" = "$max" ]
	one='import ctypes; print(ctypes.CDLL(None).inotify_init() >= 0)'
	# the sandbox's quota is spent, for every id of its range (the kernel charges a user
	# namespace's processes to its owner, the range's first id: 65536 ids are no 65536 quotas)
	run sbx-exec -raw a -- python3 -c "$one"
	[ "$output" = False ]
	run sbx-exec -raw a -- su -s /bin/sh nobody -c "python3 -c '$one'"
	[ "$output" = False ]
	# and nobody else's: another sandbox, the host's root
	run sbx-exec -raw b -- python3 -c "$one"
	[ "$output" = True ]
	run python3 -c "$one"
	[ "$output" = True ]
	sbx-delete a >/dev/null
}

@test "ids: root inside owns files as root does: chown to any id of its range, tar -x of a uid-1000 archive" {
	sbx-create demo >/dev/null
	mkdir -p "$BATS_TEST_TMPDIR/src/pkg"
	echo data >"$BATS_TEST_TMPDIR/src/pkg/file"
	tar -C "$BATS_TEST_TMPDIR/src" --owner=1000 --group=1000 --numeric-owner -cf "$BATS_TEST_TMPDIR/a.tar" pkg
	sbx-exec -raw demo -- sh -c 'cat >a.tar' <"$BATS_TEST_TMPDIR/a.tar"
	run sbx-exec -raw demo -- sh -c 'tar -xf a.tar && stat -c %u:%g pkg pkg/file &&
		touch f && chown 1000:1000 f && chown 4242:65534 pkg/file && stat -c %u:%g f pkg/file'
	assert_status 0
	[ "$output" = "$(printf '1000:1000\n1000:1000\n1000:1000\n4242:65534')" ]
	# root inside is root over its files (as Docker gives a container's root), and another
	# user inside is not
	run sbx-exec -raw demo -- sh -c 'chmod 600 f && cat f && su -s /bin/sh nobody -c "cat f"'
	assert_status 1
	assert_contains "Permission denied"
	run sbx-exec -raw demo -- sh -c 'su -s /bin/sh nobody -c "grep CapEff /proc/self/status"'
	[ "$output" = "$(printf 'CapEff:\t0000000000000000')" ]
	# npm installs a package tarball whose entries belong to uid 1000, offline, as root
	mkdir "$BATS_TEST_TMPDIR/package"
	echo '{"name":"tiny","version":"1.0.0","main":"index.js"}' >"$BATS_TEST_TMPDIR/package/package.json"
	echo 'module.exports = 42' >"$BATS_TEST_TMPDIR/package/index.js"
	tar -C "$BATS_TEST_TMPDIR" --owner=1000 --group=1000 --numeric-owner -czf "$BATS_TEST_TMPDIR/tiny.tgz" package
	sbx-exec -raw demo -- sh -c 'cat >tiny.tgz' <"$BATS_TEST_TMPDIR/tiny.tgz"
	run sbx-exec -raw -timeout 120s demo -- sh -c 'mkdir app && cd app &&
		npm install --offline --no-audit --no-fund ../tiny.tgz >/dev/null && node -p "require(\"tiny\")"'
	assert_status 0
	[ "$output" = 42 ]
}

@test "fds: sbx-cp - hands the sandbox's tar a pipe of its own, not the caller's stdin" {
	sbx-create demo >/dev/null
	mkfifo "$BATS_TEST_TMPDIR/in"
	sbx-cp - demo:. <"$BATS_TEST_TMPDIR/in" >/dev/null &
	cp_pid=$!
	exec 4>"$BATS_TEST_TMPDIR/in"	# the caller's stream, open and silent: tar waits on it
	sup=$(cat "$XDG_STATE_HOME/sbx/default/demo/supervisor.pid")
	tar_of() { for p in $(descendants "$sup"); do grep -qa -- '-xf' "/proc/$p/cmdline" && echo "$p"; done; }
	wait_until test -n "$(tar_of)"
	run readlink "/proc/$(tar_of | head -1)/fd/0"
	[[ "$output" == pipe:* ]]
	[ "$output" != "$(readlink "/proc/$cp_pid/fd/0")" ]	# not the caller's FIFO
	tar -cf - -T /dev/null >&4
	exec 4>&-
	wait "$cp_pid"
}
