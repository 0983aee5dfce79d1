#!/usr/bin/env bats
# limits: sbx-create's resource limits (-memory -pids -cpus -disk -limits) on the local
# backend. Every hog here is tiny and runs under a limit, so a failure cannot hurt the
# machine: the storm is capped at 64 processes, the hog at 128M, the fills at a few MiB.

load helpers
load agent
load subids

setup() { setup_sbx_env; }
teardown() {
	user_cleanup
	teardown_sbx_env
}

# (bad limit values and variables, -h: tests/usage-errors.txt)

@test "agent-loop and acp-server hand the limit flags to sbx-create and check them at start" {
	run agent-loop -pids 2 -session lim </dev/null
	assert_status 100
	assert_contains 'invalid value "2" for flag -pids'
	run acp-server -memory 1K -listen 127.0.0.1:0 </dev/null
	assert_status 100
	assert_contains 'invalid value "1K" for flag -memory'
	run acp-server -limits none -disk 1G -listen 127.0.0.1:0 </dev/null
	assert_status 100
	assert_contains '-disk cannot be used with -limits none'
	export OPENAI_MODEL=fake-eliza
	run agent-loop -v -memory 200M -pids 100 -cpus 0.5 -disk 64M -session lim <<<'run: true'
	assert_status 0
	assert_contains '-memory=200M -pids=100 -cpus=0.5 -disk=64M lim'
	run agent-loop -v -limits none -session lim2 <<<'run: true'
	assert_status 0
	assert_contains '-limits=none lim2'
}

# cg_dirs NAME: the cgroup directories sandbox NAME's limits live in.
cg_dirs() { sed -n 's/^dir //p' "$XDG_STATE_HOME/sbx/default/$1/cgroups"; }
# cg_file NAME FILE: the first of NAME's cgroup directories holding FILE.
cg_file() {
	local d
	for d in $(cg_dirs "$1"); do
		[ -e "$d/$2" ] && { echo "$d/$2"; return 0; }
	done
	return 1
}
# absent PATHS…: none of them exists.
absent() {
	local d
	for d in "$@"; do [ ! -e "$d" ] || return 1; done
}
# unmounted PATH: nothing is mounted there in this mount namespace.
unmounted() { ! grep -qF " $1 " /proc/self/mountinfo; }

# ---- as another user (65534), in tests run as root ----
# user_home: $ud, a directory of the user's, its HOME; its state in $ud/state.
# The user has been told once that it has no subordinate ids (a test of its own checks that),
# so sbx-create's output is the handle alone.
user_home() {
	ud=$(mktemp -d /tmp/sbx-limits-user.XXXXXX)
	mkdir -p "$ud/state/sbx"
	touch "$ud/state/sbx/.notice-subids"
	chmod 755 "$ud"
	chown -R 65534:65534 "$ud"
}
# user_cgroups: $dm and $dp, v1 memory and pids cgroups below this test's own, delegated to
# the user as an administrator does it (chowned to it).
user_cgroups() {
	hier() { awk -v c="$1" '/ - cgroup / { n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) print $5 }' /proc/self/mountinfo; }
	mine() { sed -n "s/^[0-9]*:$1:\\(.*\\)/\\1/p" /proc/self/cgroup; }
	[ -n "$(hier memory)" ] && [ -n "$(hier pids)" ] || skip "no cgroup v1 memory and pids hierarchies here"
	local tag=limits-test-$$-$RANDOM
	dm="$(hier memory)$(mine memory | sed 's#^/$##')/$tag"
	dp="$(hier pids)$(mine pids | sed 's#^/$##')/$tag"
	mkdir "$dm" "$dp"
	chown 65534:65534 "$dm" "$dm/cgroup.procs" "$dm/tasks" "$dp" "$dp/cgroup.procs" "$dp/tasks"
}
# user_fuse MODE [fuse2fs]: $uns/mnt, a mount namespace of this test's where /dev/fuse has
# MODE: 0666 is what udev makes it on distributions (these build machines have 0600); with
# "fuse2fs", fuse2fs is missing there too. The user's commands run in it (as_user).
user_fuse() {
	user_ns
	nsenter --mount="$uns/mnt" sh -c '
		dev=$(mktemp -d /tmp/sbx-limits-dev.XXXXXX)
		mount -t tmpfs -o size=64k,mode=755 sbx-test-dev "$dev" &&
			mknod -m "$1" "$dev/fuse" c 10 229 && mount --bind "$dev/fuse" /dev/fuse &&
			umount -l "$dev" && rmdir "$dev" || exit 1
		if [ "$2" = fuse2fs ]; then
			for f in /usr/bin/fuse2fs /usr/sbin/fuse2fs /sbin/fuse2fs /bin/fuse2fs; do
				[ ! -e "$f" ] || mount --bind /dev/null "$f" || exit 1
			done
		fi' _ "$1" "${2-}"
}
# user_setup [MODE [fuse2fs]]: the test skipped unless root; user_home, user_cgroups, and with
# MODE, user_fuse MODE [fuse2fs].
user_setup() {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	user_cgroups
	[ $# -eq 0 ] || user_fuse "$@"
}
# as_user CMD…: CMD as the user, in its cgroups and mount namespace when they were made.
as_user() {
	local pre=()
	[ -z "${uns-}" ] || pre=(nsenter --mount="$uns/mnt")
	"${pre[@]}" sh -c 'for c in "$1" "$2"; do [ -z "$c" ] || echo $$ >"$c/cgroup.procs" || exit 1; done
		shift 2; exec "$@"' _ "${dm-}" "${dp-}" \
		setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH="$PATH" HOME="$ud" XDG_STATE_HOME="$ud/state" "$@"
}
# here_as_user CMD…: as_user, in this test's own mount namespace rather than the user's.
here_as_user() {
	local uns=
	as_user "$@"
}
# user_mounted PATH: something is mounted on PATH in the user's mount namespace.
user_mounted() { nsenter --mount="$uns/mnt" grep -qF " $1 " /proc/self/mountinfo; }
# fuse2fs_for PATH: the pids of the user's fuse2fs processes serving PATH.
fuse2fs_for() { pgrep -u 65534 -f "^[^ ]*fuse2fs [^ ]* $1( |\$)"; }
# lost_home_seen RUNNER SIG: a user's sandbox deadSIG (made by as_user) whose fuse2fs gets
# SIGSIG; then, run by RUNNER (as_user or here_as_user), sbx-snapshot refuses and saves
# nothing, sbx-exec finds it removed (101), and its home is gone and unmounted.
lost_home_seen() {
	local run_as=$1 n=dead$2 home
	as_user sbx-create -disk 16M "$n" >/dev/null
	as_user sbx-exec "$n" -- sh -c 'echo data >~/f' >/dev/null
	home=$ud/state/sbx/default/$n/home
	kill -s "${2^^}" "$(fuse2fs_for "$home")"
	wait_until ! fuse2fs_for "$home"
	run "$run_as" sbx-snapshot "$n"
	assert_status 111
	assert_contains "the home of sandbox $n is lost: its filesystem"
	run find "$ud/.local/sandboxed-tools/$n" -name 'backup-*'
	[ -z "$output" ]
	run "$run_as" sbx-exec -raw "$n" -- true
	assert_status 101
	assert_contains "sandbox $n not found: it was removed, as its home was lost (its filesystem"
	run "$run_as" sbx-list
	[ -z "$output" ]
	run user_mounted "$home"
	assert_status 1
	absent "$home"
}
# user_cleanup: the user's sandboxes deleted, its namespace, cgroups and directory removed.
user_cleanup() {
	local n
	[ -n "${ud-}" ] || return 0
	for n in $(as_user sbx-list 2>/dev/null | jq -r .name); do as_user sbx-delete "$n" >/dev/null 2>&1; done
	pkill -u 65534 -f "^[^ ]*fuse2fs $ud/" || true
	user_ns_remove
	for c in ${dm-} ${dp-}; do wait_until rmdir "$c"; done
	rm -rf "$ud"
}

@test "limits are on by default: the handle shows them, the sandbox runs in its cgroup, delete removes it all" {
	run sbx-create demo
	assert_status 0
	mem=$(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 2 ))
	[ "$mem" -lt $((2 << 30)) ] || mem=$((2 << 30))
	assert_json ".limits.enforced == true and .limits.memory == $mem and .limits.pids == 1024"
	assert_json '.limits.cpus == 0 and (.limits.cgroup == "v1" or .limits.cgroup == "v2")'
	if [ "$(id -u)" = 0 ]; then assert_json '.limits.disk == 10737418240'; fi
	run sbx-list
	assert_json ".limits.memory == $mem"
	dirs=$(cg_dirs demo)
	[ -n "$dirs" ]
	for d in $dirs; do [ -n "$(cat "$d/cgroup.procs")" ]; done
	[ "$(cat "$(cg_file demo pids.max)")" = 1024 ]
	home=$XDG_STATE_HOME/sbx/default/demo/home
	if [ "$(id -u)" = 0 ]; then
		run sbx-exec -raw demo -- sh -c 'df -k ~ | tail -1'
		assert_status 0
		[ "$(echo "$output" | awk '{print $2}')" -le $((10 << 20)) ]
		grep -qF " $home " /proc/self/mountinfo
	fi
	sbx-delete demo >/dev/null
	# shellcheck disable=SC2086
	absent $dirs
	unmounted "$home"
}

@test "the sandbox's own cgroup is at /sys/fs/cgroup, read-only: python finds -memory and -cpus there; nothing else of /sys" {
	run sbx-create -memory 300M -cpus 1 demo
	assert_status 0
	mem=/sys/fs/cgroup/memory.max
	[ "$(jq -r .limits.cgroup <<<"$output")" = v2 ] || mem=/sys/fs/cgroup/memory/memory.limit_in_bytes
	# v2: memory.max and cpu.max; v1: one directory per hierarchy
	run sbx-exec -raw demo -- /usr/bin/python3 -c '
import os
c = "/sys/fs/cgroup/"
v2 = os.path.exists(c + "memory.max")
print(open(c + ("memory.max" if v2 else "memory/memory.limit_in_bytes")).read().strip())
print(open(c + "cpu.max").read().split()[0] if v2 else open(c + "cpu/cpu.cfs_quota_us").read().strip())
print(sorted(os.listdir("/sys")), sorted(os.listdir("/sys/fs")))'
	assert_status 0
	[ "$output" = "$(printf '%s\n' 314572800 100000 "['fs'] ['cgroup']")" ]
	run sbx-exec -raw demo -- sh -c "echo 1073741824 >$mem"
	[ "$status" -ne 0 ]
	assert_contains "Read-only file system"
	run sbx-exec -raw demo -- grep -c ' /sys/fs/cgroup' /proc/self/mountinfo
	[ "$output" -ge 1 ]
	run sbx-exec -raw demo -- awk '$5 ~ "^/sys/fs/cgroup" && $6 !~ /^ro/' /proc/self/mountinfo
	[ -z "$output" ]
	sbx-create -limits none free >/dev/null
	run sbx-exec -raw free -- ls /sys
	[ "$status" -ne 0 ]
}

@test "on a machine with less than 4G of RAM the default memory limit is half of it" {
	run with_small_ram sbx-create demo
	assert_status 0
	assert_json '.limits.memory == 536870912'
	[ "$(cat "$(cg_file demo memory.limit_in_bytes 2>/dev/null || cg_file demo memory.max)")" = 536870912 ]
	run sbx-exec -raw demo -- sh -c 'df -k /tmp | tail -1'
	[ "$(echo "$output" | awk '{print $2}')" -eq $(((512 << 10) / 4)) ]
	# a limit given is kept as given, whatever the RAM (T is a size suffix too)
	run with_small_ram sbx-create -memory 1T -disk 64M big
	assert_status 0
	assert_json '.limits.memory == 1099511627776'
}

@test "-limits none: the handle says so, no cgroup or disk image is made, tmpfs still have sizes" {
	run sbx-create -limits none demo
	assert_status 0
	assert_json '.limits == {"enforced": false}'
	[ ! -e "$XDG_STATE_HOME/sbx/default/demo/cgroups" ]
	[ ! -e "$XDG_STATE_HOME/sbx/default/demo/home.img" ]
	mem=$(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 2 ))
	[ "$mem" -lt $((2 << 30)) ] || mem=$((2 << 30))
	run sbx-exec -raw demo -- sh -c 'df -k /tmp /dev/shm | tail -2'
	assert_status 0
	[ "$(echo "$output" | awk 'NR == 1 {print $2}')" -eq $((mem / 4 / 1024)) ]
	[ "$(echo "$output" | awk 'NR == 2 {print $2}')" -le 65536 ]
	run sbx-create demo
	assert_status 100
	assert_contains "sandbox demo exists without limits"
}

@test "-disk 0: the home has no cap, the other limits stay" {
	run sbx-create -disk 0 -pids 64 demo
	assert_status 0
	assert_json '.limits.enforced == true and .limits.disk == 0 and .limits.pids == 64'
	[ -e "$XDG_STATE_HOME/sbx/default/demo/cgroups" ]
	[ ! -e "$XDG_STATE_HOME/sbx/default/demo/home.img" ]
	unmounted "$XDG_STATE_HOME/sbx/default/demo/home"
	run env SANDBOX_DISK=0 sbx-create demo2
	assert_json '.limits.disk == 0'
}

@test "a sandbox is reused only with the same limits" {
	sbx-create -memory 256M -pids 200 demo >/dev/null
	run sbx-create -memory 256M -pids 200 demo
	assert_status 0
	assert_json '.reused == true and .limits.memory == 268435456 and .limits.pids == 200'
	run sbx-create -memory 512M -pids 200 demo
	assert_status 100
	assert_contains "sandbox demo exists with memory limit 256M, not 512M"
	run sbx-create -memory 256M -pids 300 demo
	assert_status 100
	assert_contains "exists with pids 200 and cpus 0, not 300 and 0"
}

@test "a process storm under -pids 64 stops at the limit; the sandbox stays usable" {
	sbx-create -pids 64 -cpus 0.5 -memory 256M demo >/dev/null
	[ "$(cat "$(cg_file demo pids.max)")" = 64 ]
	# The classic fork bomb in a subshell (the one fork the command makes before it execs
	# sleep) until the timeout kills every process it made.
	run sbx-exec -timeout 3s demo -- sh -c '(b() { b | b & }; b) & exec sleep 30'
	assert_status 124
	events=$(cg_file demo pids.events)
	[ "$(awk '$1 == "max" {print $2}' "$events")" -gt 0 ]
	run sbx-exec -raw demo -- sh -c 'echo usable'
	assert_status 0
	[ "$output" = usable ]
}

@test "-cpus 0.2 throttles a busy loop" {
	sbx-create -cpus 0.2 demo >/dev/null
	run sbx-exec -raw demo -- timeout 1 sh -c 'while :; do :; done'
	assert_status 124
	stat=$(cg_file demo cpu.stat)
	[ "$(awk '$1 == "nr_throttled" {print $2}' "$stat")" -gt 0 ]
}

@test "a storm that outlives its command: the next command is refused clearly, delete still works" {
	sbx-create -pids 32 -cpus 0.5 -memory 256M demo >/dev/null
	dirs=$(cg_dirs demo)
	# A filler left behind by its command: it takes every process slot as soon as one is
	# free (its children sleep), so the next command cannot start.
	filler='import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    except OSError:
        time.sleep(0.05)'
	sbx-exec demo -- sh -c 'python3 -c "$1" >/dev/null 2>&1 &' _ "$filler" >/dev/null
	refused() {
		run sbx-exec -raw demo -- true
		[ "$status" -eq 126 ]
	}
	# (the filler runs under -cpus 0.5: on a loaded machine it may take a while to fill up)
	wait_until -t 90 refused
	assert_contains "sbx-exec: cannot run true: Resource temporarily unavailable (the sandbox has as many processes as its -pids limit)"
	run sbx-delete demo
	assert_status 0
	# shellcheck disable=SC2086
	absent $dirs
}

@test "a memory hog under -memory 128M gets 137 and oom_killed; tools say so; the sandbox stays usable" {
	sbx-create -memory 128M demo >/dev/null
	[ "$(cat "$(cg_file demo memory.limit_in_bytes 2>/dev/null || cg_file demo memory.max)")" = 134217728 ]
	hog='python3 -c "b = bytearray(b\"x\") * (512 << 20)"'
	run sbx-exec demo -- sh -c "$hog"
	assert_status 137
	assert_json '.exit_code == 137 and .oom_killed == true'
	run sbx-exec -raw demo -- sh -c "$hog"
	assert_status 137
	assert_contains "sbx-exec: command in sandbox demo ran out of memory and was killed (memory limit 128M)"
	call=$(jq -cn --arg c "$hog" '{id:"c1",type:"function",function:{name:"run_command",arguments:({command:$c}|tojson)}}')
	run sbx-tool demo <<<"$call"
	assert_status 1	# killed: the tool failed
	assert_json '.content | test("exit_code: 137\nThe command ran out of memory: the sandbox.s memory limit \\(128M\\) killed it")'
	call=$(jq -cn --arg c "$hog" '{id:"c2",type:"function",function:{name:"run_shell_command",arguments:({command:$c}|tojson)}}')
	run sbx-tool -toolset geminicli demo <<<"$call"
	assert_status 1
	assert_json '.content | test("^<untrusted_context>\nOutput: .*\nError: The command ran out of memory: the sandbox.s memory limit \\(128M\\) killed it.*\nExit Code: 137\n")'
	# a command that merely exits 137 is not called out of memory
	run sbx-exec demo -- sh -c 'exit 137'
	assert_status 137
	assert_json 'has("oom_killed") | not'
	run sbx-exec -raw demo -- sh -c 'echo usable'
	assert_status 0
	[ "$output" = usable ]
}

@test "-cpus 1: nproc and sched_getaffinity see one CPU (python sizes its pool from it); without -cpus, the host's" {
	host=$(nproc)
	[ "$host" -ge 2 ]	# (a one-CPU machine could not tell the two apart)
	sbx-create -cpus 1 one >/dev/null
	run sbx-exec -raw one -- sh -c 'nproc; /usr/bin/python3 -c "import os; print(len(os.sched_getaffinity(0)))"'
	assert_status 0
	[ "$output" = "$(printf '1\n1')" ]
	sbx-create -cpus 0.5 half >/dev/null
	[ "$(sbx-exec -raw half -- nproc)" = 1 ]
	sbx-create all >/dev/null
	[ "$(sbx-exec -raw all -- nproc)" = "$host" ]
}

@test "/tmp, /dev/shm and the home fill up under small caps: ENOSPC inside, the host disk holds no more than the cap" {
	sbx-create -memory 128M -disk 32M demo >/dev/null
	run sbx-exec -raw demo -- sh -c 'head -c 64M /dev/zero >/tmp/f; ls -l /tmp/f | cut -d" " -f5'
	assert_contains "No space left on device"
	assert_contains "$((32 << 20))"
	run sbx-exec -raw demo -- sh -c 'head -c 64M /dev/zero >/dev/shm/f'
	assert_contains "No space left on device"
	run sbx-exec -raw demo -- sh -c 'touch /dev/new'
	assert_contains "Read-only file system"
	if [ "$(id -u)" = 0 ]; then
		img=$XDG_STATE_HOME/sbx/default/demo/home.img
		run sbx-exec -raw demo -- sh -c 'head -c 64M /dev/zero >~/f'
		assert_contains "No space left on device"
		[ "$(du -k "$img" | cut -f1)" -le $((32 << 10)) ]
		[ "$(stat -c %s "$img")" -eq $((32 << 20)) ]
		run sbx-exec -raw demo -- sh -c 'rm ~/f /tmp/f /dev/shm/f && echo usable'
		[ "$output" = usable ]
		# discard gives the blocks back to the host disk (at the journal's next commit: the
		# size is read again at each try)
		wait_until sh -c 'test "$(du -k "$1" | cut -f1)" -lt 4096' _ "$img"
	fi
}

@test "snapshot and restore work on a capped home; a backup larger than the cap fails to restore, clearly" {
	sbx-create -disk 64M demo >/dev/null
	sbx-exec demo -- sh -c 'mkdir -p ~/d && echo kept >~/d/f && head -c 40M /dev/urandom >~/big' >/dev/null
	run sbx-snapshot demo
	assert_status 0
	sbx-delete demo >/dev/null
	sbx-create -disk 64M demo >/dev/null
	run sbx-restore demo
	assert_status 0
	run sbx-exec -raw demo -- sh -c 'cat ~/d/f; stat -c %s ~/big'
	[ "$output" = "$(printf 'kept\n%s' $((40 << 20)))" ]
	if [ "$(id -u)" = 0 ]; then
		sbx-delete demo >/dev/null
		sbx-create -disk 16M demo >/dev/null
		run sbx-restore demo
		[ "$status" -ne 0 ]
		assert_contains 'cannot write "./big"'
	fi
}

@test "a sandbox made in another mount namespace: its capped home is used, snapshotted and restored from this one" {
	[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace of the test's own"
	# as a service with a private /tmp (systemd's PrivateTmp) makes one, and sbx-exec,
	# sbx-snapshot, sbx-restore run beside it without
	unshare --mount --propagation private sbx-create -disk 64M demo >/dev/null
	home=$XDG_STATE_HOME/sbx/default/demo/home
	# here the host path is the empty directory below the mount, never taken for the home
	unmounted "$home"
	[ -z "$(ls -A "$home")" ]
	sbx-exec demo -- sh -c 'echo kept >~/f' >/dev/null
	run sbx-snapshot demo
	assert_status 0
	sbx-exec demo -- rm f >/dev/null
	run sbx-restore demo
	assert_status 0
	run sbx-exec -raw demo -- cat f
	assert_status 0
	[ "$output" = kept ]
	[ -z "$(ls -A "$home")" ]
	run sbx-touch demo
	assert_status 0
	run sbx-create -disk 64M demo
	assert_status 0
	run sbx-delete demo
	assert_status 0
	absent "$home"
	run bash -c "losetup -a | grep -F '$XDG_STATE_HOME/'"
	assert_status 1
}

@test "a supervisor killed with SIGKILL or an expired sandbox leaves no cgroup and no mount behind" {
	sbx-create demo >/dev/null
	dirs=$(cg_dirs demo)
	home=$XDG_STATE_HOME/sbx/default/demo/home
	kill -9 "$(cat "$XDG_STATE_HOME/sbx/default/demo/supervisor.pid")"
	# the next command finds the sandbox stale (once the killed supervisor is gone) and cleans it
	listed_none() { [ -z "$(sbx-list)" ]; }
	wait_until listed_none
	# shellcheck disable=SC2086
	wait_until absent $dirs "$home"
	unmounted "$home"
	# its cgroups read before its lifetime is cut to 1 s (a 1 s -ttl at create can run out
	# before they are read, on a loaded machine)
	sbx-create demo >/dev/null
	dirs=$(cg_dirs demo)
	[ -n "$dirs" ]
	sbx-touch -ttl 1s demo >/dev/null
	# shellcheck disable=SC2086
	wait_until absent $dirs "$home"
	unmounted "$home"
}

@test "no cgroup to be had: sbx-create says why and how to fix it; -limits none still works" {
	# A private mount namespace without the cgroup mounts.
	run unshare -m --propagation private sh -c '
		umount -R /sys/fs/cgroup || exit 99
		sbx-create demo'
	[ "$status" -ne 99 ]
	assert_status 111
	assert_contains "sbx-create: unable to create sandbox demo:"
	assert_contains "limits need a cgroup"
	assert_contains "or pass -limits none"
	[ -z "$(sbx-list)" ]
	run unshare -m --propagation private sh -c 'umount -R /sys/fs/cgroup; sbx-create -limits none demo'
	assert_status 0
	assert_json '.limits.enforced == false'
}

@test "agent-loop and acp-server sandboxes get the limits they were given" {
	export OPENAI_MODEL=fake-eliza
	run agent-loop -v -memory 200M -pids 100 -cpus 0.5 -disk 64M -session lim <<<'run: true'
	assert_status 0
	assert_contains '"limits":{"enforced":true,"memory":209715200,"pids":100,"cpus":0.5,'
	if [ "$(id -u)" = 0 ]; then assert_contains '"disk":67108864'; fi
	load acp/common
	acp_sdk
	start_server -pids 90 -memory 300M
	drive turn --prompt "run: true"
	[ "$status" -eq 0 ]
	run sbx-list
	stop_server
	assert_json '.limits.memory == 314572800 and .limits.pids == 90'
}

@test "the home's cap is never more than the host file system has free" {
	run unshare -m bash -c '
		mount -t tmpfs -o size=64m tmpfs "$XDG_STATE_HOME"
		sbx-create -disk 10G demo
		sbx-exec -raw demo -- sh -c "head -c 80M /dev/zero >~/f"
		sbx-delete demo >/dev/null'
	if [ "$(id -u)" = 0 ]; then
		disk=$(printf '%s\n' "$output" | sed -n 's/.*"disk":\([0-9]*\).*/\1/p')
		# 7/8 of what is free, in whole MiB: at most 56M of the 64M
		[ "$disk" -le $((56 << 20)) ]
		[ "$disk" -ge $((32 << 20)) ]
		assert_contains "No space left on device"
	fi
	assert_contains '"enforced":true'
}

@test "a user without a cgroup of its own: sbx-create says why; -limits none works" {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	run as_user sbx-create demo
	assert_status 111
	assert_contains "limits need a cgroup"
	assert_contains "Delegate=yes"
	run as_user sbx-create -limits none demo
	assert_status 0
	assert_json '.limits.enforced == false'
	run as_user sbx-delete demo
	assert_status 0
}

@test "a user who cannot mount fuse2fs: a cap asked for is refused, saying what is missing; the default is dropped" {
	user_setup 0600
	run as_user sbx-create -disk 64M demo
	assert_status 111
	assert_contains "cannot cap the home at -disk as a user: a user's cap is a fuse2fs mount, and /dev/fuse is not open to this user (Permission denied): distributions' udev makes it mode 0666"
	run as_user env SANDBOX_DISK=1G sbx-create demo
	assert_status 111
	assert_contains "leave -disk and SANDBOX_DISK out"
	run as_user sbx-list
	[[ $output != *demo* ]]
	# no cap asked for is no cap refused
	run as_user sbx-create -disk 0 zero
	assert_status 0
	assert_json '.limits.disk == 0'
	# the default cap is dropped, and the handle says so
	run as_user sbx-create demo
	assert_status 0
	assert_json '.limits.enforced == true and .limits.disk == 0'
	as_user sbx-delete demo >/dev/null
	user_cleanup
	user_setup 0666 fuse2fs
	run as_user sbx-create -disk 64M demo
	assert_status 111
	assert_contains "a user's cap is a fuse2fs mount, and fuse2fs is not installed (Debian package fuse2fs)"
}

@test "a user in a delegated cgroup v1 subtree gets its limits there" {
	user_setup
	run as_user sbx-create -memory 64M -pids 32 demo
	assert_status 0
	assert_json '.limits.enforced == true and .limits.cgroup == "v1" and .limits.memory == 67108864 and .limits.pids == 32'
	run as_user sbx-exec -raw demo -- sh -c 'id -u; python3 -c "b = bytearray(b\"x\") * (256 << 20)"'
	assert_status 137
	assert_contains "ran out of memory and was killed (memory limit 64M)"
}

@test "a user's sandbox that opens inotify instances until refused takes half of the user's, and the user's own processes keep theirs (own id or subordinate ids)" {
	user_setup
	max=$(cat /proc/sys/fs/inotify/max_user_instances)
	hog='import ctypes, sys, time
libc = ctypes.CDLL(None)
fds = [libc.inotify_init() for _ in range(int(sys.argv[1]) + 8)]
print(sum(f >= 0 for f in fds), flush=True)
time.sleep(120)'
	# with the user's own id only, then with a range of its subordinate ids, the hog running
	# as uid 1000 inside: every id of the sandbox counts as the user too, so one limit caps
	# them all (the outer user namespace's)
	for ids in own subordinate; do
		as=()
		if [ $ids = subordinate ]; then
			user_subids 65536
			as=(setpriv --reuid 1000 --regid 1000 --clear-groups)
		fi
		as_user sbx-create -limits none hog >/dev/null
		as_user sbx-exec -raw -timeout 150s hog -- "${as[@]}" python3 -c "$hog" "$max" >"$BATS_TEST_TMPDIR/hog" &
		wait_until -p $! test -s "$BATS_TEST_TMPDIR/hog"
		# the sandbox's user namespace has its own limit, half of the user's (the kernel
		# charges the sandbox's instances to the user as well, so without it the sandbox
		# took all 128)
		[ "$(cat "$BATS_TEST_TMPDIR/hog")" = $((max / 2)) ]
		run as_user sbx-exec -raw hog -- python3 -c 'import ctypes; print(ctypes.CDLL(None).inotify_init() >= 0)'
		[ "$output" = False ]
		# the user's own process (an editor, a desktop) still gets one
		run here_as_user /usr/bin/python3 -c 'import ctypes; print(ctypes.CDLL(None).inotify_init() >= 0)'
		[ "$output" = True ]
		as_user sbx-delete hog >/dev/null
		rm -f "$BATS_TEST_TMPDIR/hog"
	done
}

@test "a user's home is capped by fuse2fs: ENOSPC inside, the image never past the cap, git and sqlite work, delete unmounts" {
	user_setup 0666
	run as_user sbx-create -disk 32M demo
	assert_status 0
	assert_json '.limits.disk == 33554432'
	home=$ud/state/sbx/default/demo/home
	img=$ud/state/sbx/default/demo/home.img
	user_mounted "$home"
	[ -n "$(fuse2fs_for "$home")" ]
	# the host's view is the user's only: root and other users cannot enter it
	run nsenter --mount="$uns/mnt" ls "$home"
	assert_contains "Permission denied"
	run as_user sbx-exec -raw demo -- sh -c 'head -c 64M /dev/zero >~/f'
	assert_contains "No space left on device"
	[ "$(du -k "$img" | cut -f1)" -le $((32 << 10)) ]
	[ "$(stat -c %s "$img")" -eq $((32 << 20)) ]
	run as_user sbx-exec -raw demo -- sh -c 'rm ~/f && echo usable'
	[ "$output" = usable ]
	# what a model's commands do in a home: git's read-only objects, sqlite's locks
	run as_user sbx-exec -raw demo -- sh -c 'cd ~ && git init -q r && cd r && echo a >a && git add a &&
		git -c user.email=m@x -c user.name=m commit -qm one && git log --format=%s &&
		python3 -c "import sqlite3; c = sqlite3.connect(\"t.db\"); c.execute(\"create table t(a)\"); c.execute(\"insert into t values (7)\"); c.commit(); print(c.execute(\"select a from t\").fetchone()[0])"'
	assert_status 0
	[ "$output" = "$(printf 'one\n7')" ]
	# without -disk, the default cap
	run as_user sbx-create other
	assert_status 0
	assert_json '.limits.disk > 0'
	user_mounted "$ud/state/sbx/default/other/home"
	# four at the same moment, with a size not made before: one template, four homes
	for i in 1 2 3 4; do as_user sbx-create -disk 48M "par$i" >"$BATS_TEST_TMPDIR/par.$i" 2>&1 & done
	wait
	cat "$BATS_TEST_TMPDIR"/par.*
	[ "$(cat "$BATS_TEST_TMPDIR"/par.* | jq -s 'map(select(.limits.disk == 50331648)) | length')" = 4 ]
	for i in 1 2 3 4; do user_mounted "$ud/state/sbx/default/par$i/home"; done
	for n in demo other par1 par2 par3 par4; do as_user sbx-delete "$n" >/dev/null; done
	run user_mounted "$home"
	assert_status 1
	wait_until ! fuse2fs_for "$home"
	absent "$img" "$home"
}

@test "a user's capped home: snapshot and restore work, a backup past the cap fails clearly, a dead fuse2fs is never snapshotted" {
	user_setup 0666
	as_user sbx-create -disk 64M demo >/dev/null
	as_user sbx-exec demo -- sh -c 'mkdir -p ~/d && echo kept >~/d/f && head -c 40M /dev/urandom >~/big' >/dev/null
	run as_user sbx-snapshot demo
	assert_status 0
	as_user sbx-delete demo >/dev/null
	as_user sbx-create -disk 64M demo >/dev/null
	run as_user sbx-restore demo
	assert_status 0
	run as_user sbx-exec -raw demo -- sh -c 'cat ~/d/f; stat -c %s ~/big'
	[ "$output" = "$(printf 'kept\n%s' $((40 << 20)))" ]
	as_user sbx-delete demo >/dev/null
	as_user sbx-create -disk 16M demo >/dev/null
	run as_user sbx-restore demo
	[ "$status" -ne 0 ]
	assert_contains 'cannot write "./big"'
	as_user sbx-delete demo >/dev/null
	# its fuse2fs killed (SIGKILL: the mount is left dead; SIGTERM: fuse2fs unmounts it,
	# and the host path shows the empty directory below): no snapshot is taken of what the
	# host path shows instead, and the next command finds the sandbox removed (not found:
	# agent-loop then makes a new one from the last snapshot)
	lost_home_seen as_user kill
	lost_home_seen as_user term
}

@test "a user's capped home made in another mount namespace: used and snapshotted from this one; its dead fuse2fs still seen" {
	user_setup 0666
	# the user's sandboxes are made in its namespace ($uns); here (uns= as_user), its home's
	# host path is the empty directory below the mount
	as_user sbx-create -disk 16M demo >/dev/null
	home=$ud/state/sbx/default/demo/home
	unmounted "$home"
	here_as_user sbx-exec demo -- sh -c 'echo kept >~/f' >/dev/null
	run here_as_user sbx-snapshot demo
	assert_status 0
	here_as_user sbx-exec demo -- rm f >/dev/null
	run here_as_user sbx-restore demo
	assert_status 0
	run here_as_user sbx-exec -raw demo -- cat f
	[ "$output" = kept ]
	[ -z "$(ls -A "$home")" ]
	as_user sbx-delete demo >/dev/null
	lost_home_seen here_as_user kill
	lost_home_seen here_as_user term
}

@test "a user's agent-loop whose fuse2fs dies: the next tool call runs in a new sandbox holding the last snapshot" {
	user_setup 0666
	fed as_user env OPENAI_MODEL=fake-eliza agent-loop -disk 16M -session lost
	# (what the file holds is not in the command's text, which the transcript shows)
	echo "run: sh -c 'echo kept-\$((6 * 7)) >~/f'" >&4
	wait_snapshot
	home=$ud/state/sbx/default/lost/home
	kill -KILL "$(fuse2fs_for "$home")"
	echo "run: cat f" >&4
	fed_end
	run cat "$BATS_TEST_TMPDIR/out"
	assert_contains "kept-42"
	run cat "$BATS_TEST_TMPDIR/err"
	assert_contains "Active sandbox was deleted or expired, will recreate it"
	assert_contains "restoring filesystem from latest backup"
}

@test "a user's capped home goes with its sandbox: a killed supervisor (cleaned up here or from another mount namespace), an expired one" {
	user_setup 0666
	home=$ud/state/sbx/default/demo/home
	# cleaned up by the next command, in the user's mount namespace or in another (there,
	# removing the directory detaches the mount in the user's); its fuse2fs ends
	listed_none() { [ -z "$("$1" sbx-list)" ]; }
	for run_as in as_user here_as_user; do
		as_user sbx-create -disk 16M demo >/dev/null
		user_mounted "$home"
		kill -9 "$(cat "$ud/state/sbx/default/demo/supervisor.pid")"
		wait_until listed_none "$run_as"
		wait_until absent "$home"
		run user_mounted "$home"
		assert_status 1
		wait_until ! fuse2fs_for "$home"
	done
	# expiry: the supervisor unmounts it (with fusermount3, as the user) before it goes
	as_user sbx-create -disk 16M demo >/dev/null
	user_mounted "$home"
	as_user sbx-touch -ttl 1s demo >/dev/null
	wait_until absent "$home"
	run user_mounted "$home"
	assert_status 1
	wait_until ! fuse2fs_for "$home"
}

@test "the ACP Deployment manifest sets the sandboxes' limits, and acp-server accepts them" {
	run /usr/bin/python3 - "$SBX_TOP/images/acp-server/acp-server.yaml" <<'PY'
import sys, yaml
dep = list(yaml.safe_load_all(open(sys.argv[1])))[3]
env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
print(" ".join(f"{k}={env[k]}" for k in ("SANDBOX_MEMORY", "SANDBOX_CPUS", "SANDBOX_DISK")))
PY
	assert_status 0
	[ "$output" = "SANDBOX_MEMORY=2G SANDBOX_CPUS=1 SANDBOX_DISK=10G" ]
	# the values pass acp-server's start-up check (a bad one would be refused there)
	load acp/common
	for kv in $output; do export "${kv?}"; done
	OPENAI_MODEL=fake-eliza start_server
	stop_server
	[ "$ACP_STATUS" -eq 0 ]
}

@test "sandboxes created at the same moment each get their own cgroup and capped home" {
	for i in 1 2 3 4 5 6 7 8; do sbx-create -disk 64M "par$i" >"$BATS_TEST_TMPDIR/out.$i" 2>&1 & done
	wait
	cat "$BATS_TEST_TMPDIR"/out.*
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -s 'map(select(.limits.enforced)) | length')" = 8 ]
	all=$(for i in 1 2 3 4 5 6 7 8; do cg_dirs "par$i"; done)
	[ "$(printf '%s\n' "$all" | sort -u | wc -l)" -eq "$(printf '%s\n' "$all" | wc -l)" ]
	if [ "$(id -u)" = 0 ]; then
		[ "$(grep -cF "$XDG_STATE_HOME/sbx/default/par" /proc/self/mountinfo)" = 8 ]
	fi
	for i in 1 2 3 4 5 6 7 8; do sbx-delete "par$i" >/dev/null & done
	wait
	# shellcheck disable=SC2086
	absent $all
	[ "$(grep -cF "$XDG_STATE_HOME/sbx/default/par" /proc/self/mountinfo)" = 0 ]
}

@test "/ has a size of its own: df shows 1M, writing past it is ENOSPC; every tmpfs has a size or is read-only" {
	sbx-create demo >/dev/null
	run sbx-exec -raw demo -- sh -c 'df -k / | tail -1'
	assert_status 0
	[ "$(echo "$output" | awk '{print $2}')" -eq 1024 ]
	run sbx-exec -raw demo -- sh -c 'head -c 2M /dev/zero >/big; ls -l /big | cut -d" " -f5'
	assert_contains "No space left on device"
	[ "$(echo "$output" | tail -1)" -le $((1 << 20)) ]
	# /proc/self/mountinfo: mount options are field 6, the type and the superblock's options
	# follow " - "; bwrap's own /dev (no size= of bwrap's making) is read-only
	run sbx-exec -raw demo -- cat /proc/self/mountinfo
	assert_status 0
	unsized=$(printf '%s\n' "$output" | awk '{ split($0, p, " - "); split(p[2], t, " ") }
		t[1] == "tmpfs" && t[3] !~ /(^|,)size=/ && $6 !~ /^ro(,|$)/ { print $5 }')
	[ -z "$unsized" ]
	[ "$(printf '%s\n' "$output" | awk '{ split($0, p, " - ") } p[2] ~ /^tmpfs / { n++ } END { print n }')" -ge 6 ]
	run sbx-exec -raw demo -- sh -c 'rm /big && echo usable'
	[ "$output" = usable ]
	# a user's sandbox too
	user_setup
	as_user sbx-create -limits none udemo >/dev/null
	run as_user sbx-exec -raw udemo -- sh -c 'df -k / | tail -1; head -c 2M /dev/zero >/big'
	assert_contains "No space left on device"
	[ "$(echo "$output" | head -1 | awk '{print $2}')" -eq 1024 ]
}

# snapshotter_in NAME: a process of sbx-snapshot (its compressing child) is in every cgroup
# directory of sandbox NAME.
snapshotter_in() {
	local d p found
	for d in $(cg_dirs "$1"); do
		found=
		for p in $(cat "$d/cgroup.procs"); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sbx-snapshot ] && found=1
		done
		[ -n "$found" ] || return 1
	done
}

@test "a snapshot's compression runs in the sandbox's cgroup, under its limits" {
	sbx-create demo >/dev/null
	sbx-exec demo -- sh -c 'head -c 60M /dev/urandom >~/big' >/dev/null
	sbx-snapshot demo >/dev/null 2>&1 &
	bg=$!
	wait_until -p "$bg" snapshotter_in demo
	wait "$bg"
	# and it leaves when done: only the sandbox's own processes stay
	run snapshotter_in demo
	assert_status 1
}

# ---- a user's subordinate ids (/etc/subuid, newuidmap) ----

@test "subids: a user's sandbox maps 65536 of the user's subordinate ids: chown 1000 and tar -x of a uid-1000 archive keep owners, npm installs, uid 1000 inside cannot read the user's 0600 file" {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	user_subids 65536
	run as_user sbx-create -limits none demo
	assert_status 0
	[[ $output != *subordinate* ]]
	# root inside is the user; ids 1-65535 inside are the range's first + 1-65535
	[ "$(user_map demo)" = "0 65534 1 1 $((SUBIDS + 1)) 65535 " ]
	mkdir -p "$BATS_TEST_TMPDIR/src/pkg"
	echo data >"$BATS_TEST_TMPDIR/src/pkg/file"
	tar -C "$BATS_TEST_TMPDIR/src" --owner=1000 --group=1000 --numeric-owner -cf "$BATS_TEST_TMPDIR/a.tar" pkg
	as_user sbx-exec -raw demo -- sh -c 'cat >a.tar' <"$BATS_TEST_TMPDIR/a.tar"
	run as_user sbx-exec -raw demo -- sh -c 'tar -xf a.tar && stat -c %u:%g pkg pkg/file &&
		touch f && chown 1000:1000 f && chown 4242:65534 pkg/file && stat -c %u:%g f pkg/file'
	assert_status 0
	[ "$output" = "$(printf '1000:1000\n1000:1000\n1000:1000\n4242:65534')" ]
	# on the host, they belong to the user's subordinate ids
	home=$ud/state/sbx/default/demo/home
	[ "$(nsenter --mount="$uns/mnt" stat -c %u:%g "$home/f")" = "$((SUBIDS + 1000)):$((SUBIDS + 1000))" ]
	# a file of the user's (0600, the user's own id, as ~/.ssh/id_rsa is): root inside is the
	# user and reads it; uid 1000 inside is not the user and cannot
	here_as_user sh -c 'echo secret >"$1/secret" && chmod 600 "$1/secret"' _ "$home"
	run as_user sbx-exec -raw demo -- sh -c 'cat secret && setpriv --reuid 1000 --regid 1000 --clear-groups cat secret'
	assert_status 1
	assert_contains "secret"
	assert_contains "Permission denied"
	# npm installs a package tarball whose entries belong to uid 1000, offline, as root
	mkdir "$BATS_TEST_TMPDIR/package"
	echo '{"name":"tiny","version":"1.0.0","main":"index.js"}' >"$BATS_TEST_TMPDIR/package/package.json"
	echo 'module.exports = 42' >"$BATS_TEST_TMPDIR/package/index.js"
	tar -C "$BATS_TEST_TMPDIR" --owner=1000 --group=1000 --numeric-owner -czf "$BATS_TEST_TMPDIR/tiny.tgz" package
	as_user sbx-exec -raw demo -- sh -c 'cat >tiny.tgz' <"$BATS_TEST_TMPDIR/tiny.tgz"
	run as_user sbx-exec -raw -timeout 120s demo -- sh -c 'mkdir app && cd app &&
		npm install --offline --no-audit --no-fund ../tiny.tgz >/dev/null && node -p "require(\"tiny\")"'
	assert_status 0
	[ "$output" = 42 ]
	# snapshot reads what uid 1000 inside owns (0600), which the user on the host cannot, and
	# restore gives it back (to root inside, as a root's sandbox's restore does)
	as_user sbx-exec demo -- sh -c 'echo mine >g && chmod 600 g && chown 1000:1000 g' >/dev/null
	run as_user sbx-snapshot demo
	assert_status 0
	as_user sbx-delete demo >/dev/null
	absent "$home"
	as_user sbx-create -limits none demo >/dev/null
	run as_user sbx-restore demo
	assert_status 0
	run as_user sbx-exec -raw demo -- sh -c 'cat g && stat -c %u:%g:%a g pkg/file'
	[ "$output" = "$(printf 'mine\n0:0:600\n0:0:644')" ]
	# sbx-cp out and in
	run as_user sbx-cp demo:g "$ud/g.out"
	assert_status 0
	[ "$(cat "$ud/g.out")" = mine ]
	as_user sbx-delete demo >/dev/null
	absent "$home"
}

@test "subids: two sandboxes of a user get disjoint ranges; one more than the user's ids hold shares a range and says so" {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	user_subids 131072
	as_user sbx-create -limits none a >/dev/null
	as_user sbx-create -limits none b >/dev/null
	ma=$(user_map a | cut -d' ' -f5) mb=$(user_map b | cut -d' ' -f5)
	[ "$ma" != "$mb" ]
	for m in "$ma" "$mb"; do
		[ "$m" = $((SUBIDS + 1)) ] || [ "$m" = $((SUBIDS + 65536 + 1)) ]
	done
	run as_user sbx-create -limits none c
	assert_status 0
	assert_contains "all 2 ranges of 65536 of your subordinate ids (/etc/subuid) are in use"
	mc=$(user_map c | cut -d' ' -f5)
	[ "$mc" = "$ma" ] || [ "$mc" = "$mb" ]
	# a range is free again once its sandbox is gone
	as_user sbx-delete a >/dev/null
	run as_user sbx-create -limits none d
	[[ $output != *subordinate* ]]
	[ "$(user_map d | cut -d' ' -f5)" = "$ma" ]
}

@test "subids: a user without subordinate ids is told once what its sandboxes share, and they have the user's own id" {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	rm "$ud/state/sbx/.notice-subids"
	user_subids 1000	# fewer than a sandbox needs
	run as_user sbx-create -limits none a
	assert_status 0
	assert_contains "sbx-create: warning: your entries in /etc/subuid and /etc/subgid hold fewer than 65536 ids, so this user's sandboxes run as the user's own uid and gid: they share the user's per-uid kernel limits"
	[ "$(user_map a)" = "0 65534 1 " ]
	run as_user sbx-create -limits none b
	assert_status 0
	[[ $output != *subordinate* ]]
	run as_user sbx-exec -raw a -- sh -c 'touch f && chown 1000 f'
	assert_contains "Invalid argument"
	as_user sbx-delete a >/dev/null
	as_user sbx-delete b >/dev/null
	# none at all: said once in a new state directory too
	nsenter --mount="$uns/mnt" sh -c ': >"$1"' _ "$uns/subids"
	rm -rf "$ud/state"
	run as_user sbx-create -limits none a
	assert_contains "you have no subordinate ids (no entry in /etc/subuid and /etc/subgid)"
	assert_contains "README: Local backend"
	as_user sbx-delete a >/dev/null
	# the first sandbox made by agent-loop: the warning reaches its person too, once
	rm -rf "$ud/state"
	run as_user env OPENAI_MODEL=fake-eliza agent-loop -limits none -session w <<<'run: true'
	assert_status 0
	assert_contains "agent-loop: warning: you have no subordinate ids (no entry in /etc/subuid and /etc/subgid)"
	run as_user env OPENAI_MODEL=fake-eliza agent-loop -limits none -session w <<<'run: true'
	assert_status 0
	[[ $output != *subordinate* ]]
}

@test "subids: a user's capped home (fuse2fs) with subordinate ids: root inside chowns, snapshot reads what uid 1000 owns, restore gives it back" {
	user_setup 0666
	user_subids 65536
	as_user sbx-create -disk 32M demo >/dev/null
	[ "$(user_map demo)" = "0 65534 1 1 $((SUBIDS + 1)) 65535 " ]
	run as_user sbx-exec -raw demo -- sh -c 'echo kept >f && chmod 600 f && chown 1000:1000 f && stat -c %u:%g f'
	assert_status 0
	[ "$output" = 1000:1000 ]
	run as_user sbx-snapshot demo
	assert_status 0
	as_user sbx-delete demo >/dev/null
	as_user sbx-create -disk 32M demo >/dev/null
	run as_user sbx-restore demo
	assert_status 0
	run as_user sbx-exec -raw demo -- sh -c 'cat f && stat -c %u:%g:%a f'
	[ "$output" = "$(printf 'kept\n0:0:600')" ]
	as_user sbx-delete demo >/dev/null
}

@test "subids: what a user's sandbox gave its subordinate ids goes with it: delete, expiry, a killed supervisor" {
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	user_home
	user_subids 65536
	dir=$ud/state/sbx/default/demo
	listed_none() { [ -z "$(as_user sbx-list)" ]; }
	for end in delete expire kill; do
		as_user sbx-create -limits none demo >/dev/null
		# a directory only uid 1000 inside may enter or change: the user cannot remove it
		as_user sbx-exec demo -- sh -c 'mkdir -p d/e && touch d/e/f && chown -R 1000:1000 d && chmod 700 d' >/dev/null
		[ "$(nsenter --mount="$uns/mnt" stat -c %u "$dir/home/d")" = $((SUBIDS + 1000)) ]
		case $end in
		delete) as_user sbx-delete demo >/dev/null ;;
		expire) as_user sbx-touch -ttl 1s demo >/dev/null ;;
		kill) kill -9 "$(cat "$dir/supervisor.pid")"; wait_until listed_none ;;
		esac
		wait_until absent "$dir"
		[ -z "$(find "$ud/state/sbx/default" -mindepth 1 -maxdepth 1 -name '.trash*')" ]
	done
}
