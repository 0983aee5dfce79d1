#!/usr/bin/env bats
# lint.bats — checks of the test suite itself. bats runs a test with `set -e`, which ignores
# the status of a negated command: `! grep -q x file` fails nothing unless it is the test's
# last command. Such a line is an assertion that cannot fail; write `run ! cmd` instead (or
# end the line with `|| false`). So does `set -e` for every command of an && list but the
# last: in `[ -e a ] && [ -e b ]` a missing a fails nothing; write one test a line.

load helpers

setup() { setup_sbx_env; }

# dead_negations FILE...: prints FILE:LINE: TEXT for each `! cmd` line, and each line made of
# tests joined by && (`[ a ] && [ b ]`), inside a @test that another command follows (blank
# lines, comments and here-documents do not count).
dead_negations() {
	awk '
		FNR == 1 { intest = 0; eot = "" }
		eot != "" { t = $0; sub(/^\t+/, "", t); if (t == eot) eot = ""; next }
		/^@test / { intest = 1; last = ""; next }
		intest && /^}/ { intest = 0; next }
		intest && /^[[:space:]]*(#.*)?$/ { next }
		intest && match($0, /(^|[^<])<<-?[[:space:]]*[\047"]?[A-Za-z_]+/) {
			# a here-document (not a <<< here-string): its text is data, not commands
			eot = substr($0, RSTART, RLENGTH); sub(/^[^<]?<<-?[[:space:]]*[\047"]?/, "", eot)
		}
		intest {
			if (last ~ /^[[:space:]]*![[:space:]]/ && last !~ /\|\|[[:space:]]*(false|return 1|exit 1)[[:space:]]*$/)
				print FILENAME ":" lastn ": " last
			else if (last ~ /^[[:space:]]*\[\[? .*\][[:space:]]*&&[[:space:]]*\[/ && last ~ /\][[:space:]]*$/ && last !~ /\|\|/)
				print FILENAME ":" lastn ": " last
			last = $0; lastn = FNR
		}
	' "$@"
}

# Every tracked bats file (all of tests/*.bats when this is not a git checkout).
bats_files() {
	if git -C "$SBX_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$SBX_TOP" ls-files '*.bats' | sed "s|^|$SBX_TOP/|"
	else
		find "$SBX_TOP/tests" -name '*.bats'
	fi
}

@test "no bats test negates a command, or joins tests with &&, but on its last line (use run ! or || false)" {
	mapfile -t files < <(bats_files)
	[ "${#files[@]}" -gt 20 ]
	run dead_negations "${files[@]}"
	[ -z "$output" ] || { echo "dead assertions:" >&2; echo "$output" >&2; false; }
}

@test "the lint finds a dead negation and accepts run !, || false and a last-line negation" {
	# (written with AT for the at sign, bats would take such lines here for its own tests, and
	# NOT for the negation, so that no line of this file is a dead negation itself)
	sed 's/^AT/@/; s/NOT /! /' >"$BATS_TEST_TMPDIR/sample.bats" <<'EOF'
ATtest "dead" {
	NOT grep -q x /dev/null
	true
}

ATtest "fine" {
	run ! grep -q x /dev/null
	NOT grep -q x /dev/null || false
	# a comment after the last command is not a command

	NOT grep -q x /dev/null
	# trailing comment
}

ATtest "dead inside a block" {
	if true; then
		NOT false
	fi
}

ATtest "a here-string is no here-document" {
	cat <<<"EOF"
	NOT false
	true
}

ATtest "tests joined by &&" {
	[ -e /nonexistent ] && [ -e / ]
	[ -e / ] && rm -f /nonexistent/x
	[ -n "$x" ] && [ -e / ] || false
	true
	[ -e / ] && [ -e / ]
}
EOF
	run dead_negations "$BATS_TEST_TMPDIR/sample.bats"
	[ "${#lines[@]}" = 4 ]
	[[ "${lines[0]}" == *"sample.bats:2: "*"! grep -q x /dev/null" ]]
	[[ "${lines[1]}" == *"sample.bats:17: "*"! false" ]]
	[[ "${lines[2]}" == *"sample.bats:23: "*"! false" ]]
	[[ "${lines[3]}" == *"sample.bats:28: "*'[ -e /nonexistent ] && [ -e / ]' ]]
}
