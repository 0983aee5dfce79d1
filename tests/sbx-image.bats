#!/usr/bin/env bats
# sbx-image: the command itself (usage, man page). What it does to images: tests/oci.bats.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "-h prints usage; bad arguments are usage errors" {
	run sbx-image -h
	assert_status 0
	assert_contains "usage: sbx-image [-homedir D] IMAGE"
	run sbx-image
	assert_status 100
	assert_contains "missing IMAGE"
	run sbx-image debian:bookworm-slim
	assert_status 100
	assert_contains "IMAGE must start with oci-archive: or oci:"
	run sbx-image -homedir rel oci:/x
	assert_status 100
	assert_contains "-homedir must be an absolute path"
	run sbx-image oci:/x oci:/y
	assert_status 100
	assert_contains "too many arguments"
}

@test "man page examples run" {
	cd "$SBX_TOP"
	run run_man_examples sbx-image
	assert_status 0
	assert_contains "Directory listing for /usr/local/bin"
	assert_contains "geminicli-toolbox"
}
