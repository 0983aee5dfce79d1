#!/usr/bin/env bats
# make-run.bats — the README's `make run` from a fresh copy of the repository (its tracked
# files only: no bin/, build/ or caches), with no API key: the build, then agent-loop on the
# local backend with fake-eliza, running one tool call.

bats_require_minimum_version 1.5.0
load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "make run in a fresh clone, no API key: printf 'run: uname -a\\n/exit\\n' | make run" {
	local clone=$BATS_TEST_TMPDIR/clone
	mkdir -p "$clone"
	# what a clone holds: the tracked files (as they are in this working tree)
	git -C "$SBX_TOP" ls-files -z | (cd "$SBX_TOP" && tar --null -T - -cf -) | tar -xf - -C "$clone"
	[ ! -e "$clone/bin" ]
	[ ! -e "$clone/build" ]
	# the clone's own programs, not the ones under test on PATH
	local path
	path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$SBX_BIN" | paste -sd:)
	# (the build on every core, as the suite's own: the same objects, and a missing
	# dependency between them would show)
	run --separate-stderr env -u SBX_BIN PATH="$path" MAKEFLAGS="-j$(nproc)" \
		bash -c "printf 'run: uname -a\n/exit\n' | timeout 900 make -s -C '$clone' run"
	assert_status 0
	[[ "$stderr" == *"run-agent: neither GEMINI_API_KEY nor OPENAI_API_KEY is set: using the built-in fake-eliza model"* ]]
	assert_contains "Sandbox Backend: local (selected with -backend)"
	assert_contains "User> "
	assert_contains "Agent> The tool told me:"
	assert_contains "stdout:"
	assert_contains "Linux"
	assert_contains "exit_code: 0"
	[ -x "$clone/bin/agent-loop" ]
	# the session's sandbox is gone after /exit; its backup and history stay
	run "$clone/bin/sbx-list"
	assert_status 0
	[ -z "$output" ]
	[ "$(jq -s 'map(.role)' "$HOME/.local/sandboxed-tools/default/sessions/latest.jsonl" | jq -c .)" = '["system","user","assistant","tool","assistant"]' ]
}

@test "make run ARGS='-session x -ttl 10s' hands the flags to agent-loop" {
	run --separate-stderr bash -c "printf 'run: true\n' | make -s -C '$SBX_TOP' run ARGS='-session makeargs -ttl 10s -v'"
	assert_status 0
	assert_contains "Session Name: makeargs"
	[[ "$stderr" == *"sbx-create -backend local -namespace default -homedir /home/clawtainer -ttl 10s makeargs"* ]]
	[ -s "$(hist makeargs)" ]
}

@test "make run TOOLSET=geminicli, no API key: fake-eliza asks for run_shell_command" {
	run --separate-stderr env -u OPENAI_API_KEY -u GEMINI_API_KEY bash -c \
		"printf 'run: echo hi from gemini\n/exit\n' | make -s -C '$SBX_TOP' run TOOLSET=geminicli ARGS='-session gem'"
	assert_status 0
	[[ "$stderr" == *"using the built-in fake-eliza model"* ]]
	[[ "$stderr" == *'tool run_shell_command({"command":"echo hi from gemini"}): completed'* ]]
	assert_contains "Agent> The tool told me:"
	assert_contains "Output: hi from gemini"
	jq -s -e '.[2].tool_calls[0].function.name == "run_shell_command"' "$(hist gem)"
}
