#!/usr/bin/env bats
# A short smoke run of every libFuzzer harness (make fuzz runs them longer). A crash fails it.

load helpers

setup() { setup_sbx_env; }

@test "every fuzz harness builds and runs without findings" {
	[ -n "${SBX_SANITIZED:-}" ] && export ASAN_OPTIONS=
	run env FUZZ_SECONDS="${SBX_FUZZ_SECONDS:-5}" "$SBX_TOP/tests/fuzz/run"
	echo "$output"
	assert_status 0
	assert_contains "no findings"
	[[ "$output" != *CRASH* ]]
}
