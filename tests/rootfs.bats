#!/usr/bin/env bats
# rootfs: a sandbox's writable root (sbx-create -root-size, -readonly-root) on the local
# backend: /usr, /etc, /var's package state and /opt writable through overlays over the image,
# capped, private to the sandbox and thrown away with it; the host's own directories never
# change (SECURITY.md). Tests run as root, whose sandboxes have a range of ids.

load helpers

setup() { setup_sbx_env; }
teardown() {
	teardown_sbx_env
	rm -rf "/etc/sbx-rootfs-secret.$$" "/etc/sbx-rootfs-private.$$"
}

@test "the root is writable: /usr, /etc, /opt; the package database is the image's; nothing reaches the host" {
	mark="sbx-rootfs-$$-$RANDOM"
	run sbx-create w
	assert_status 0
	run sbx-exec -raw w -- sh -c "echo one > /usr/local/bin/$mark && echo two > /etc/$mark &&
		echo three > /opt/$mark && echo four >> /usr/share/$mark && dpkg-query -W bash"
	assert_status 0
	assert_contains "bash"
	# a later command sees what an earlier one wrote
	run sbx-exec -raw w -- cat "/usr/local/bin/$mark" "/etc/$mark" "/opt/$mark"
	assert_status 0
	[ "$output" = "$(printf 'one\ntwo\nthree')" ]
	# the host's directories are untouched
	[ ! -e "/usr/local/bin/$mark" ]
	[ ! -e "/etc/$mark" ]
	[ ! -e "/opt/$mark" ]
	[ ! -e "/usr/share/$mark" ]
	# root inside owns the image's files; the host's /var shows only the package managers'
	run sbx-exec -raw w -- sh -c 'stat -c %U /usr/bin/env; ls /var /var/lib'
	assert_status 0
	[ "$output" = "$(printf 'root\n/var:\ncache\nlib\nlog\ntmp\n\n/var/lib:\napt\ndpkg')" ]
	# the masks still hold over the writable /etc
	run sbx-exec -raw w -- sh -c 'cat /etc/shadow; ls -A /etc/ssh; rm -f /etc/shadow'
	assert_status 1
	[ -z "$(sbx-exec -raw w -- sh -c 'cat /etc/shadow 2>/dev/null; ls -A /etc/ssh 2>/dev/null')" ]
	# thrown away with the sandbox
	sbx-delete w
	sbx-create w >/dev/null
	run sbx-exec -raw w -- ls "/usr/local/bin/$mark"
	assert_status 2
}

@test "what only the host's root may read under /etc stays unreadable through the writable root (its lower is the sandbox root's)" {
	(umask 077 && echo host-only-secret >"/etc/sbx-rootfs-secret.$$")
	mkdir -m 700 "/etc/sbx-rootfs-private.$$"
	echo host-only-secret >"/etc/sbx-rootfs-private.$$/f"
	sbx-create w >/dev/null
	run sbx-exec -raw w -- cat "/etc/sbx-rootfs-secret.$$" "/etc/sbx-rootfs-private.$$/f"
	[[ "$output" != *host-only-secret* ]]
	[ -z "$(sbx-exec -raw w -- ls -A "/etc/sbx-rootfs-private.$$")" ]
	# the sandbox may still write its own files there
	run sbx-exec -raw w -- sh -c "echo mine > /etc/sbx-rootfs-private.$$/g && cat /etc/sbx-rootfs-private.$$/g"
	[ "$output" = mine ]
	[ ! -e "/etc/sbx-rootfs-private.$$/g" ]
}

@test "-root-size caps what the root may hold: writing past it is ENOSPC" {
	run sbx-create -root-size 16M w
	assert_status 0
	run sbx-exec -raw w -- dd if=/dev/zero of=/usr/big bs=1M count=32
	assert_status 1
	assert_contains "No space left on device"
	run sbx-exec -raw w -- stat -c %s /usr/big
	[ "$output" -le $((16 << 20)) ]
	# the cap is the root's as a whole: /etc has what /usr left
	run sbx-exec -raw w -- sh -c 'rm /usr/big && head -c 8M /dev/zero > /etc/big && df -B1M /usr /etc'
	assert_status 0
}

@test "-readonly-root keeps the image read-only and /var empty; a sandbox is reused only with the same root" {
	run sbx-create -readonly-root w
	assert_status 0
	run sbx-exec -raw w -- touch /usr/x
	assert_status 1
	assert_contains "Read-only file system"
	run sbx-exec -raw w -- ls /var
	[ "$output" = tmp ]
	run sbx-create w
	assert_status 100
	assert_contains "sandbox w exists with another root"
	SANDBOX_READONLY_ROOT=true run sbx-create w
	assert_status 0
	assert_json '.reused == true'
}
