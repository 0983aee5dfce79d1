#!/usr/bin/env bats
# lint.bats — checks of the test suite itself. bats runs a test with `set -e`, which ignores
# the status of a negated command: `! grep -q x file` fails nothing unless it is the test's
# last command. Such a line is an assertion that cannot fail; write `run ! cmd` instead (or
# end the line with `|| false`). So does `set -e` for every command of an && list but the
# last: in `[ -e a ] && [ -e b ]` a missing a fails nothing; write one test a line.

bats_require_minimum_version 1.5.0
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

# poll_loops FILE...: prints FILE:LINE: TEXT for each sleep of less than a second inside a
# for, while or until loop: a poll loop of its own, which falls through silently when its
# count runs out. wait_until (tests/helpers.bash) is the one poll loop: it fails, saying what
# it waited for. A loop that samples rather than waits says so with "(not a wait)" on the
# sleep's line.
poll_loops() {
	awk '
		FNR == 1 { depth = 0; pending = 0 }
		{ line = $0; sub(/#.*/, "", line) }
		line ~ /(^|[;[:space:]])(for|while|until)[[:space:]]/ {
			if (line ~ /(^|[;[:space:]])do([[:space:]]|$)/) depth++; else pending = 1
		}
		pending && line ~ /^[[:space:]]*do([[:space:]]|$)/ { depth++; pending = 0 }
		depth > 0 && line ~ /(^|[;[:space:]])sleep[[:space:]]+0*\.[0-9]/ && $0 !~ /\(not a wait\)/ {
			print FILENAME ":" FNR ": " $0
		}
		{ depth -= gsub(/(^|[;[:space:]])done([;[:space:]]|$)/, "&", line); if (depth < 0) depth = 0 }
	' "$@"
}

@test "no bats file polls in a loop of its own (wait_until is the one poll loop), and each loads helpers" {
	mapfile -t files < <(bats_files)
	[ "${#files[@]}" -gt 20 ]
	# (helpers.bash holds wait_until itself)
	run poll_loops "${files[@]}" $(ls "$SBX_TOP"/tests/*.bash "$SBX_TOP"/tests/*/*.bash | grep -v '/tests/helpers\.bash$')
	[ -z "$output" ] || { echo "poll loops (use wait_until):" >&2; echo "$output" >&2; false; }
	# `bats tests/X.bats` from a clean shell: helpers.bash finds the tree and its programs
	run grep -L -E '^[[:space:]]*load helpers$' "${files[@]}"
	[ -z "$output" ] || { echo "files that do not load helpers:" >&2; echo "$output" >&2; false; }
}

@test "the poll-loop lint finds sleeps in loops, not the ones outside or marked" {
	# (written with SLEEP, so that no line of this file is a poll loop itself)
	sed 's/SLEEP/sleep/' >"$BATS_TEST_TMPDIR/sample.bats" <<'EOF'
for i in $(seq 100); do [ -e x ] && break; SLEEP 0.1; done
while true
do
	grep -q y f && break
	SLEEP .05
done
for i in 1 2; do echo; done
SLEEP 0.1
while :; do SLEEP 0.01; done	# (not a wait): it samples
until [ -e z ]; do SLEEP 2; done
EOF
	run poll_loops "$BATS_TEST_TMPDIR/sample.bats"
	[ "${#lines[@]}" = 2 ]
	[[ "${lines[0]}" == *"sample.bats:1: "* ]]
	[[ "${lines[1]}" == *"sample.bats:5: "* ]]
}

# fixed_ports FILE...: prints FILE:LINE: TEXT for each loopback address with a fixed port
# (127.0.0.1:N, localhost:N, [::1]:N, -listen :N): a user's own server there fails the suite, or
# answers in its place. Tests bind port 0 and read the port back, or take closed_port
# (helpers.bash) for "nothing listening". Lines that check a text (grep) are not binds; a port
# that is no host port says why with "(port: <why>)".
fixed_ports() {
	awk '
		{ line = $0; sub(/(^|[[:space:]])#.*/, "", line) }
		line ~ /grep/ || $0 ~ /\(port: / { next }
		line ~ /(127\.0\.0\.1|localhost|\[::1\]):[1-9][0-9]*/ || line ~ /-listen[ =]:[1-9]/ {
			print FILENAME ":" FNR ": " $0
		}
	' "$@"
}

@test "no test uses a fixed loopback port (port 0 and read back, or closed_port)" {
	mapfile -t files < <(bats_files)
	run fixed_ports "${files[@]}" "$SBX_TOP"/tests/*.bash "$SBX_TOP"/tests/*/*.bash
	[ -z "$output" ] || { echo "fixed ports:" >&2; echo "$output" >&2; false; }
}

@test "the port lint finds fixed ports, not port 0, text checks or marked ones" {
	# (written with LO, LH and AT, so that no line of this file holds a fixed port itself)
	sed 's/LO/127.0.0.1/; s/LH/localhost/; s/AT/:/' >"$BATS_TEST_TMPDIR/sample.bats" <<'EOF'
acp-server -listen LO:8090 &
run acp-client -addr LO:1 -prompt hi
sbx-mcp -listen AT8765
curl http://LH:8080/x
acp-server -listen LO:0 &
grep -qF 'acp-server -listen LO:8090' page
run acp-server -listen LO:99999	# (port: invalid, never bound)
curl "http://LO:$port/f"
EOF
	run fixed_ports "$BATS_TEST_TMPDIR/sample.bats"
	[ "${#lines[@]}" = 4 ]
	[[ "${lines[0]}" == *"sample.bats:1: "* ]]
	[[ "${lines[3]}" == *"sample.bats:4: "* ]]
}

@test "tests/run prints a line as each suite finishes, then every suite's TAP and the closing line alone" {
	local u=$BATS_TEST_TMPDIR/unit
	mkdir -p "$u"
	# a slow suite that waits for a line on a FIFO, and a quick one with a failure
	mkfifo "$u/go"
	printf '#!/bin/sh\nread -r x <"%s/go"\necho 1..1\necho ok 1 - waited\n' "$u" >"$u/test_lintrun_slow"
	printf '#!/bin/sh\necho 1..2\necho ok 1 - a\necho not ok 2 - b\nexit 1\n' >"$u/test_lintrun_quick"
	chmod +x "$u"/test_lintrun_*
	SBX_UNIT=$u SBX_TEST_JOBS=2 "$SBX_TOP/tests/run" unit/test_lintrun_slow unit/test_lintrun_quick \
		>"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local pid=$!
	# the quick suite's line is out while the slow one still runs
	wait_until -p "$pid" grep -qE '^# finished unit/test_lintrun_quick: 1 passed, 1 failed, [0-9]+\.[0-9] s$' "$BATS_TEST_TMPDIR/out"
	run ! grep -q 'test_lintrun_slow' "$BATS_TEST_TMPDIR/out"
	echo go >"$u/go"
	local st=0
	wait "$pid" || st=$?
	[ "$st" = 1 ]
	run cat "$BATS_TEST_TMPDIR/out"
	assert_contains '# finished unit/test_lintrun_slow: 1 passed, 0 failed'
	assert_contains 'ok 1 - waited'
	assert_contains 'not ok 2 - b'
	[ "${lines[${#lines[@]}-1]}" = "2 passed, 1 failed" ]
	# .ci/run's parse: the closing line is the one line of its form
	[ "$(grep -cE '^[0-9]+ passed, [0-9]+ failed$' "$BATS_TEST_TMPDIR/out")" -eq 1 ]
}

# lib/'s folders are layers (lib/README.md, "Folders, lowest first:"): scripts/check-layers reads
# the includes of every file and the symbols of every object of this build ($SBX_UNIT's tree).
@test "lib/ is layered: no folder includes from one above it, no two files call each other" {
	run "$SBX_TOP/scripts/check-layers" -o "$(dirname "$SBX_UNIT")" "$SBX_TOP"
	[ -z "$output" ] || { echo "$output" >&2; false; }
	[ "$status" -eq 0 ]
}

@test "the layer check finds an include from above, a stray file, a header twice and a call circle" {
	local t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/lib/low" "$t/lib/high" "$t/build/lib/low"
	printf 'Folders, lowest first: `low/` → `high/`.\n' >"$t/lib/README.md"
	printf '#include "high.h"\n#include "low.h"\n' >"$t/lib/low/low.c"
	printf '#include "low.h"\n' >"$t/lib/high/high.c"
	: >"$t/lib/low/low.h"
	: >"$t/lib/high/high.h"
	: >"$t/lib/high/low.h"
	: >"$t/lib/stray.c"
	printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' >"$t/lib/low/ping.c"
	printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' >"$t/lib/low/pong.c"
	printf 'int ping(int);\nint top(void) { return ping(3); }\n' >"$t/lib/low/top.c"
	for f in ping pong top; do cc -c -o "$t/build/lib/low/$f.o" "$t/lib/low/$f.c"; done
	run "$SBX_TOP/scripts/check-layers" -o "$t/build" "$t"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[0]}" = "lib/low/low.h:1: also in lib/high/" ]
	[ "${lines[1]}" = "lib/stray.c:1: not in a folder (lib/README.md names the folders)" ]
	[ "${lines[2]}" = "lib/low/low.c:1: includes high.h from lib/high/, a folder above lib/low/" ]
	[[ "${lines[3]}" == "lib/low/ping.c:1: calls go round a circle: lib/low/ping.c ↔ lib/low/pong.c "* ]]
}
