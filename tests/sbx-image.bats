#!/usr/bin/env bats
# sbx-image: the command itself (usage, man page). What it does to images: tests/oci.bats.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# (-h and bad arguments: tests/usage-errors.txt)

@test "man page examples run" {
	cd "$SBX_TOP"
	run run_man_examples sbx-image
	assert_status 0
	assert_contains "Directory listing for /usr/local/bin"
	assert_contains "geminicli-toolbox"
}
