#!/usr/bin/env bats
# usage.bats — misuse of every program's command line, as data: each case of
# tests/usage-errors.txt (command, exit status, the texts it must print) run in one test that
# names every case that fails, by its line.

load helpers
bats_require_minimum_version 1.5.0

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# usage_case WHERE COMMAND STATUS: runs one case, the texts it must print in TEXTS; prints what
# is wrong, if anything.
usage_case() {
	local where=$1 cmd=$2 want=$3 t envs=() stream
	eval "set -- $cmd"
	while [[ ${1-} == [A-Za-z_]*=* ]]; do envs+=("$1"); shift; done
	run --separate-stderr env "${envs[@]}" "$@" </dev/null
	[ "$status" = "$want" ] || echo "$where: \$ $cmd: exit status $status, not $want"
	if [ "$want" = 0 ]; then
		[ -z "$stderr" ] || echo "$where: \$ $cmd: stderr is not empty: $stderr"
		stream=$output
	else
		[ -z "$output" ] || echo "$where: \$ $cmd: stdout is not empty: $output"
		stream=$stderr
	fi
	for t in "${TEXTS[@]}"; do
		[[ $stream == *"$t"* ]] || echo "$where: \$ $cmd: does not print \"$t\": $stream"
	done
}

@test "every program's usage errors (tests/usage-errors.txt): status, message, nothing on stdout" {
	local file=$SBX_TOP/tests/usage-errors.txt name=usage-errors.txt line n=0 at=0 cmd= want= cases=0
	local report=$BATS_TEST_TMPDIR/report
	: >"$report"
	TEXTS=()
	flush() {
		if [ -n "$cmd" ]; then
			[ -n "$want" ] || echo "$name:$at: a case needs its exit status on the line after the command" >>"$report"
			usage_case "$name:$at" "$cmd" "$want" >>"$report"
			cases=$((cases + 1))
		fi
		cmd= want= TEXTS=()
	}
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in
		'#'*) continue ;;
		'') flush ;;
		'$ '*) flush; cmd=${line#'$ '}; at=$n ;;
		*)
			if [ -z "$cmd" ]; then echo "$name:$n: a case starts with \"\$ COMMAND\"" >>"$report"
			elif [ -z "$want" ]; then want=$line
			else TEXTS+=("$line"); fi
			;;
		esac
	done <"$file"
	flush
	cat "$report"
	[ ! -s "$report" ]
	# finding few cases means the reader broke
	[ "$cases" -ge 80 ]
	# misuse makes nothing: no sandbox, no session
	[ -z "$(sbx-list)" ]
	[ ! -e "$HOME/.local/sandboxed-tools" ]
}

@test "every program with a manual page has a case in tests/usage-errors.txt, its -h at least" {
	local m p missing=
	for m in "$SBX_TOP"/man/man1/*.1; do
		p=$(basename "$m" .1)
		# (the in-sandbox helper speaks gemini-cli's conventions: geminicli-toolbox.bats)
		[ "$p" = geminicli-toolbox ] && continue
		grep -qx "\$ $p -h" "$SBX_TOP/tests/usage-errors.txt" || missing="$missing $p"
	done
	[ -z "$missing" ] || { echo "no \"\$ PROGRAM -h\" case for:$missing" >&2; false; }
}

@test "every manual page renders without a groff warning (non-ASCII input included)" {
	local m w out=
	for m in "$SBX_TOP"/man/man1/*.1; do
		# -ww: all warnings; a line too full to adjust is only typography
		w=$(LC_ALL=C groff -man -ww -Tutf8 -z "$m" 2>&1 | grep -v 'cannot adjust line') || true
		[ -z "$w" ] || out="$out$w"$'\n'
	done
	[ -z "$out" ] || { printf '%s' "$out" >&2; false; }
}
