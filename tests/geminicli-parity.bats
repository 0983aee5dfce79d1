#!/usr/bin/env bats
# geminicli-parity.bats — the geminicli toolset against the real gemini-cli 0.61.0 (issue 17):
# every case of tests/parity/cases.py (generated workspaces, all eight tools) runs through
# @google/gemini-cli-core's tool classes headless, through geminicli-toolbox directly and
# through `sbx-tool -toolset geminicli` in a local sandbox; tests/parity/parity.py compares
# what the model sees (and the files left behind) after its documented normalisations. Every
# case must match except the deliberate differences README lists, and each way must reach
# 98 % exact. The figures go to the TAP stream.

bats_require_minimum_version 1.5.0
load helpers
load gemini-core

setup() {
	setup_sbx_env
}

teardown() {
	teardown_sbx_env
}

@test "the geminicli toolset matches gemini-cli-core 0.61.0, case by case" {
	local cache
	cache=$(gemini_core)
	sbx-create -ttl 30m parity >/dev/null
	run --separate-stderr timeout 900 python3 "$BATS_TEST_DIRNAME/parity/parity.py" "$cache" \
		"$BATS_TEST_TMPDIR/p" parity
	printf '%s\n' "$output" | grep -E '^(toolbox|sbx-tool): ' | sed 's/^/# /' >&3
	[ "$status" -eq 0 ] || { printf '%s\n' "$output" "$stderr"; return 1; }
	# at least 200 cases over all eight tools, both ways measured
	jq -e '.cases >= 200 and (.tools | length) == 8 and .toolbox.ratio >= 0.98 and
		.["sbx-tool"].ratio >= 0.98 and .["sbx-tool"].cases == .cases' "$BATS_TEST_TMPDIR/p/summary.json"
}

@test "the comparison is not blind: a changed byte is a difference" {
	local cache
	cache=$(gemini_core)
	# a toolbox that adds a final newline (the old behaviour) to its last text part must fail
	# the read_file cases
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/geminicli-toolbox" <<EOT
#!/bin/sh
"$SBX_BIN/geminicli-toolbox" "\$@" | sed 's/"}]}\$/\\\\n"}]}/'
EOT
	chmod +x "$BATS_TEST_TMPDIR/bin/geminicli-toolbox"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run timeout 300 python3 "$BATS_TEST_DIRNAME/parity/parity.py" \
		"$cache" "$BATS_TEST_TMPDIR/p" - read_file-001 read_file-002
	assert_status 1
	assert_contains "toolbox: 0 of 2 cases exact"
}
