#!/usr/bin/env bats
# Attacks on the user's terminal (issue 27): a hostile model or a command in the sandbox prints
# escape sequences (OSC 52 sets the clipboard, CSI erases and moves the cursor), a CR that
# rewinds the line, C1 controls and bidi overrides, to rewrite what the user reads or approves.
# Every byte that came from a tool, the model or an ACP peer must reach the terminal with its
# controls visible (lib/util/termtext.h). SECURITY.md maps the defence to these cases.

bats_require_minimum_version 1.5.0
load helpers
load stub
load acp/common

STUB_MODEL=stub-model

# What the model says: every class of control a terminal acts on, and text around each.
EVIL=$'osc\e]52;c;SU5KRUNURUQ=\a csi\e[2K\e[1A cr\rrewritten c1\xc2\x9b31m bidi\xe2\x80\xaeevil\xe2\x81\xa6 del\x7f end'
# A command printing the same from inside the sandbox (printf's octal escapes: sh has no \x).
# shellcheck disable=SC2016
PRINT_EVIL='printf '\''tool-osc\033]52;c;SU5KRUNURUQ=\007 cr\rover \342\200\256bidi \302\233csi\n'\'

setup() {
	setup_sbx_env
	STUB_PID=
	ACP_PID=
}

teardown() {
	stop_server
	stop_stub
	teardown_sbx_env
}

# terminal_safe FILE: no byte a terminal acts on (C0 but \n and \t, DEL, C1 as UTF-8, bidi
# embeddings, overrides and isolates) is in FILE, and it is valid UTF-8 (no raw C1 byte).
terminal_safe() {
	local hits
	hits=$(LC_ALL=C grep -naP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' "$1" || true)
	if [ -n "$hits" ]; then
		printf '%s\n' "$hits" | cat -A >&2
		echo "raw control bytes reach the terminal in $1 (above)" >&2
		return 1
	fi
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null
}

# shows FILE TEXT: FILE holds TEXT (fixed string).
shows() {
	grep -qF -- "$2" "$1" || { echo "not shown in $1: $2" >&2; cat -A "$1" >&2; return 1; }
}

@test "agent-loop: the model's text, a tool's output and a tool's name never drive the terminal; all of it is shown" {
	{
		stub_call c1 run_command "$(jq -cn --arg c "$PRINT_EVIL" '{command: $c}')"
		stub_call c2 $'evil\e]52;c;TkFNRQ==\a\xe2\x80\xae' '{}'
		stub_text "$EVIL"
		# the second turn streams its answer: controls split over deltas
		jq -cn --arg t "$EVIL" '[range(0; $t | length; 7) as $i
			| {id: "s", choices: [{index: 0, delta: {content: $t[$i:($i + 7)]}}]}] as $deltas
			| {sse: ($deltas + [{id: "s", choices: [{index: 0, delta: {}, finish_reason: "stop"}]},
				"data: [DONE]\n\n"])}'
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	printf 'first\nsecond\n' | agent-loop -v -session evil >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	terminal_safe "$BATS_TEST_TMPDIR/out"
	terminal_safe "$BATS_TEST_TMPDIR/err"
	# the model's text, twice (whole, then streamed), every control visible
	[ "$(grep -cF 'osc\x1b]52;c;SU5KRUNURUQ=\x07 csi\x1b[2K\x1b[1A cr\rrewritten c1\u009b31m bidi\u202eevil\u2066 del\x7f end' "$BATS_TEST_TMPDIR/out")" -eq 2 ]
	# the tool's output (in -v's documents) and the tool's name (its progress line)
	shows "$BATS_TEST_TMPDIR/err" 'tool-osc\u001b]52;c;SU5KRUNURUQ=\u0007 cr\rover \u202ebidi \u009bcsi'
	shows "$BATS_TEST_TMPDIR/err" 'tool evil\x1b]52;c;TkFNRQ==\x07\u202e({}): failed'
	# a resumed session replays the history: the same text, still visible
	agent-loop -session evil </dev/null >"$BATS_TEST_TMPDIR/out2" 2>"$BATS_TEST_TMPDIR/err2"
	terminal_safe "$BATS_TEST_TMPDIR/out2"
	shows "$BATS_TEST_TMPDIR/out2" 'Agent> osc\x1b]52;c;SU5KRUNURUQ=\x07 csi\x1b[2K'
}

@test "acp-client: the permission prompt shows the injected command whole on one line; tool output and the model's text stay inert" {
	inj=$'id; echo INJECTED #\r\e[2K\e[1Aecho harmless'
	two=$'printf \'tool-osc\\033]52;c;SU5KRUNURUQ=\\007 cr\\rover \\342\\200\\256bidi \\302\\233csi\\n\'\necho two'
	{
		stub_call c1 run_command "$(jq -cn --arg c "$inj" '{command: $c}')"
		stub_call c2 run_command "$(jq -cn --arg c "$two" '{command: $c}')"
		stub_text "$EVIL"
	} >"$BATS_TEST_TMPDIR/script"
	start_stub <"$BATS_TEST_TMPDIR/script"
	# reject the first, allow the second
	printf 'go\n3\n1\n/exit\n' | acp-client -cmd "acp-server -stdio" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	terminal_safe "$BATS_TEST_TMPDIR/out"
	terminal_safe "$BATS_TEST_TMPDIR/err"
	out=$BATS_TEST_TMPDIR/out
	# the exact command, on one visible line: nothing of it hidden, nothing redrawn
	shows "$out" 'Permission requested: Run `id; echo INJECTED #\r\x1b[2K\x1b[1Aecho harmless`'
	shows "$out" '  command: id; echo INJECTED #\r\x1b[2K\x1b[1Aecho harmless'
	# a newline in a command is shown escaped, as are its backslashes
	shows "$out" "  command: printf 'tool-osc\\\\033]52;c;SU5KRUNURUQ=\\\\007 cr\\\\rover \\\\342\\\\200\\\\256bidi \\\\302\\\\233csi\\\\n'\\necho two"
	# what the approved command printed, and the model's answer
	shows "$out" '│ tool-osc\x1b]52;c;SU5KRUNURUQ=\x07 cr\rover \u202ebidi \u009bcsi'
	shows "$out" 'osc\x1b]52;c;SU5KRUNURUQ=\x07 csi\x1b[2K\x1b[1A cr\rrewritten c1\u009b31m bidi\u202eevil\u2066 del\x7f end'
	shows "$out" "[turn ended: end_turn]"
}

@test "llm-chat: an API's error body and -v's trace of it are shown with their controls visible" {
	start_stub "$(jq -cn '{status: 400, body: "{\"error\":{\"message\":\"bad\u001b]52;c;SU5KRUNURUQ=\u0007 \u202emodel\"}}\u001b[2K"}')"
	printf '{"messages":[{"role":"user","content":"hi"}]}' |
		llm-chat -v -retries 0 >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" && false
	terminal_safe "$BATS_TEST_TMPDIR/err"
	shows "$BATS_TEST_TMPDIR/err" 'bad\x1b]52;c;SU5KRUNURUQ=\x07 \u202emodel'
	shows "$BATS_TEST_TMPDIR/err" '"}}\x1b[2K'
}
