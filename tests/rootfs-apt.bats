#!/usr/bin/env bats
# rootfs-apt: apt-get install as root inside a sandbox with a writable root (tests/rootfs.bats),
# from a Debian-style repository served by the test host of tests/netns.bash, reached through
# the -allow-host proxy (apt takes the http_proxy the sandbox has). The repository holds one
# small package built here with dpkg-deb; nothing leaves this machine.

load helpers
load netns

# repo: a flat repository under the test host's web root (http://web.sbx.test:8080/debian),
# holding sbx-hello 1.0, whose /usr/bin/sbx-hello prints "hello from a package".
repo() {
	local d=$BATS_FILE_TMPDIR/netns/www/debian p=$BATS_FILE_TMPDIR/pkg
	mkdir -p "$d" "$p/DEBIAN" "$p/usr/bin"
	printf 'Package: sbx-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: sbx tests <t@sbx.test>\nDescription: a package for the sbx tests\n' >"$p/DEBIAN/control"
	printf '#!/bin/sh\necho hello from a package\n' >"$p/usr/bin/sbx-hello"
	chmod 755 "$p/usr/bin/sbx-hello"
	dpkg-deb --root-owner-group --build "$p" "$d/sbx-hello_1.0_all.deb" >/dev/null
	(cd "$d" && dpkg-scanpackages . /dev/null 2>/dev/null >Packages)
}

setup_file() {
	netns_up
	repo
}
teardown_file() { netns_down; }
setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# What a test runs in its sandbox: only the test repository (the image's own sources are the
# sandbox's to replace), apt-get update, then the install of sbx-hello.
APT_INSTALL='rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* &&
	echo "deb [trusted=yes] http://web.sbx.test:8080/debian ./" >/etc/apt/sources.list.d/t.list &&
	apt-get update -q && apt-get install -y -q sbx-hello'

@test "apt-get install -y works as root inside, through the -allow-host proxy; the host's dpkg never hears of it" {
	run sbx-create -allow-host web.sbx.test:8080 apt
	assert_status 0
	run sbx-exec -raw apt -- sh -c "$APT_INSTALL"
	assert_status 0
	run sbx-exec -raw apt -- sh -c 'sbx-hello && dpkg-query -W -f "\${Status}\n" sbx-hello'
	assert_status 0
	[ "$output" = "$(printf 'hello from a package\ninstall ok installed')" ]
	# the image's packages are still known beside it
	sbx-exec -raw apt -- dpkg-query -W bash >/dev/null
	[ ! -e /usr/bin/sbx-hello ]
	run dpkg-query -W sbx-hello
	assert_status 1
	run sbx-exec -raw apt -- apt-get remove -y -q sbx-hello
	assert_status 0
	run sbx-exec -raw apt -- test -e /usr/bin/sbx-hello
	assert_status 1
}

@test "apt-get install -y works with -network too (pasta's NAT; names from SBX_RESOLV_CONF's test server)" {
	run sbx-create -network aptnat
	assert_status 0
	run sbx-exec -raw aptnat -- sh -c "$APT_INSTALL && sbx-hello"
	assert_status 0
	assert_contains "hello from a package"
}
