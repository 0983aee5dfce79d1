#!/usr/bin/env bats
# limits: sbx-create's resource limits (-memory -pids -cpus -disk -limits) on the local
# backend. Every hog here is tiny and runs under a limit, so a failure cannot hurt the
# machine: the storm is capped at 64 processes, the hog at 128M, the fills at a few MiB.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "bad limit values and variables are usage errors naming the flag" {
	run sbx-create -memory 1M demo
	assert_status 100
	assert_contains 'invalid value "1M" for flag -memory: must be between 32M and 1024T'
	run sbx-create -memory lots demo
	assert_status 100
	assert_contains 'invalid value "lots" for flag -memory: not a size such as 512M or 2G'
	run sbx-create -pids 3 demo
	assert_status 100
	assert_contains 'invalid value "3" for flag -pids: must be between 16 and 4194304'
	run sbx-create -pids 1e3 demo
	assert_status 100
	assert_contains 'for flag -pids: not a whole number'
	run sbx-create -cpus -1 demo
	assert_status 100
	assert_contains 'invalid value "-1" for flag -cpus'
	run sbx-create -cpus 0.001 demo
	assert_status 100
	assert_contains 'must be 0 (unlimited) or between 0.01 and 4096'
	run sbx-create -disk 1K demo
	assert_status 100
	assert_contains 'invalid value "1K" for flag -disk: must be between 16M and 1024T'
	run sbx-create -limits off demo
	assert_status 100
	assert_contains 'invalid value "off" for flag -limits: must be on or none'
	run sbx-create -limits none -memory 1G demo
	assert_status 100
	assert_contains '-memory cannot be used with -limits none'
	SANDBOX_PIDS=many run sbx-create demo
	assert_status 100
	assert_contains 'invalid SANDBOX_PIDS: not a whole number'
	SANDBOX_LIMITS=maybe run sbx-create demo
	assert_status 100
	assert_contains 'invalid SANDBOX_LIMITS: must be on or none'
	run sbx-create -h
	assert_contains '-memory SIZE'
	assert_contains 'default 2G or half of the RAM if less'
	[ -z "$(sbx-list)" ]
}

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
