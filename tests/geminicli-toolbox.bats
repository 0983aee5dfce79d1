#!/usr/bin/env bats
# geminicli-toolbox: the data-driven cases in tests/toolbox-cases/<tool>/<case>/ (input.json,
# setup.sh building the fixture tree, expected stdout or expected.err + status), run directly
# and through `sbx-tool -toolset geminicli` in a local sandbox; the invocation contract; the
# declarations against gemini-cli-core 0.61.0.

bats_require_minimum_version 1.5.0
load helpers
load gemini-core

setup() {
	setup_sbx_env
	CASES="$BATS_TEST_DIRNAME/toolbox-cases"
}

teardown() {
	teardown_sbx_env
}

# Runs every case of tool $1 directly; prints the failing cases' diffs.
run_cases() {
	local tool=$1 d w bad=0 st exp
	for d in "$CASES/$tool"/*/; do
		d=${d%/}
		w="$BATS_TEST_TMPDIR/w/${d##*/}"
		mkdir -p "$w"
		if [ -f "$d/setup.sh" ]; then (cd "$w" && bash "$d/setup.sh") || return 1; fi
		st=0
		geminicli-toolbox --workdir="$w" "$tool" <"$d/input.json" >"$w.out" 2>"$w.err" || st=$?
		exp=$(cat "$d/status" 2>/dev/null || echo 0)
		if [ "$st" != "$exp" ]; then
			echo "case ${d##*/}: status $st, want $exp; stderr: $(cat "$w.err")"
			bad=1
			continue
		fi
		if [ "$exp" = 0 ]; then
			[ -s "$w.err" ] && { echo "case ${d##*/}: unexpected stderr"; bad=1; }
			sed "s|@WORKDIR@|$w|g" "$d/expected" | diff - "$w.out" || { echo "case ${d##*/}: stdout differs"; bad=1; }
		else
			[ -s "$w.out" ] && { echo "case ${d##*/}: stdout not empty on failure"; bad=1; }
			sed "s|@WORKDIR@|$w|g" "$d/expected.err" | diff - "$w.err" || { echo "case ${d##*/}: stderr differs"; bad=1; }
		fi
	done
	return $bad
}

@test "read_file cases" { run_cases read_file; }
@test "list_directory cases" { run_cases list_directory; }
@test "glob cases" { run_cases glob; }
@test "grep_search cases" { run_cases grep_search; }
@test "write_file cases" { run_cases write_file; }
@test "replace cases" { run_cases replace; }
@test "read_many_files cases" { run_cases read_many_files; }

@test "write_file and replace change the files on disk" {
	cd "$BATS_TEST_TMPDIR"
	echo '{"file_path":"d/f.txt","content":"a\nb\n"}' | geminicli-toolbox --workdir="$PWD" write_file
	[ "$(cat d/f.txt)" = "$(printf 'a\nb')" ]
	[ "$(stat -c %a d/f.txt)" = 644 ]
	echo '{"file_path":"d/f.txt","instruction":"x","old_string":"b","new_string":"c"}' |
		geminicli-toolbox --workdir="$PWD" replace
	[ "$(cat d/f.txt)" = "$(printf 'a\nc')" ]
	printf 'x\r\ny\r\n' >w.txt
	echo '{"file_path":"w.txt","instruction":"x","old_string":"y","new_string":"z"}' |
		geminicli-toolbox --workdir="$PWD" replace
	[ "$(od -An -c w.txt | tr -d ' \n')" = 'x\r\nz\r\n' ]
}

@test "usage, help, unknown tool, invalid JSON" {
	run geminicli-toolbox
	assert_status 100
	[ "$output" = "usage: geminicli-toolbox [--workdir=DIR] [--parts] TOOL_NAME (tool parameters as JSON on stdin)" ]
	run geminicli-toolbox a b
	assert_status 100
	run geminicli-toolbox -h
	assert_status 0
	assert_contains "usage: geminicli-toolbox [--workdir=DIR] [--parts] TOOL_NAME"
	run geminicli-toolbox frobnicate </dev/null
	assert_status 1
	[ "$output" = 'unknown tool "frobnicate"' ]
	run geminicli-toolbox read_file <<<'{"file_path":'
	assert_status 1
	assert_contains "invalid tool parameters: "
	run geminicli-toolbox read_file <<<'{} {}'
	assert_status 1
	assert_contains "invalid tool parameters: "
	run geminicli-toolbox read_file <<<'[1]'
	assert_status 1
	[ "$output" = "params must be object" ]
	# empty input is {}
	run geminicli-toolbox read_file </dev/null
	assert_status 1
	[ "$output" = "params must have required property 'file_path'" ]
}

@test "--parts: an image is inline data, text stays text, the text mode only names the image" {
	local d=$BATS_TEST_TMPDIR/w
	mkdir -p "$d"
	printf '\x89PNG\r\n\x1a\n\0\1' >"$d/p.png"
	printf 'hello\n' >"$d/a.txt"
	run --separate-stderr geminicli-toolbox --parts --workdir="$d" read_file <<<'{"file_path":"p.png"}'
	assert_status 0
	assert_json '.parts == [{"inlineData":{"data":"iVBORw0KGgoAAQ==","mimeType":"image/png","displayName":"'"$d"'/p.png"}}]'
	run --separate-stderr geminicli-toolbox --workdir="$d" --parts read_file <<<'{"file_path":"a.txt"}'
	assert_status 0
	assert_json '.parts == [{"text":"hello\n"}]'
	run --separate-stderr geminicli-toolbox --workdir="$d" read_file <<<'{"file_path":"p.png"}'
	assert_status 0
	[ "$output" = "Cannot display content of binary file: p.png" ]
	# read_many_files: the image between the text parts, the end notice after it
	run --separate-stderr geminicli-toolbox --workdir="$d" --parts read_many_files <<<'{"include":["*.png","*.txt"]}'
	assert_status 0
	assert_json '(.parts | map(keys[0])) == ["text","inlineData","text"] and
		.parts[0].text == "--- '"$d"'/a.txt ---\n\nhello\n\n\n" and .parts[2].text == "\n--- End of content ---"'
}

@test "workdir defaults to HOME; relative --workdir; the result is gemini-cli's, byte for byte" {
	echo hello >"$HOME/h.txt"
	run geminicli-toolbox read_file <<<'{"file_path":"h.txt"}'
	assert_status 0
	[ "$output" = hello ]
	mkdir -p "$BATS_TEST_TMPDIR/rel"
	printf 'no newline' >"$BATS_TEST_TMPDIR/rel/n.txt"
	cd "$BATS_TEST_TMPDIR"
	# no newline is added to a result that has none
	geminicli-toolbox --workdir=rel read_file <<<'{"file_path":"n.txt"}' >out
	[ "$(od -An -c out | tr -d ' \n')" = 'nonewline' ]
	# invalid UTF-8 in a file reaches the model as U+FFFD, as Node decodes it
	printf 'caf\351 cr\350me, a Latin-1 line among plain text\n' >rel/l.txt
	geminicli-toolbox --workdir=rel read_file <<<'{"file_path":"l.txt"}' >out
	[ "$(head -c 10 out | od -An -tx1 | tr -d ' \n')" = '636166efbfbd206372ef' ]
}

@test "garbage input never crashes the helper" {
	local t
	for t in read_file list_directory glob grep_search write_file replace read_many_files; do
		for input in '' 'null' '"x"' '{"file_path":null,"dir_path":1,"pattern":{}}' \
			"$(head -c 300 /dev/urandom | base64)" '{"include":[1]}' '{"ignore":[null]}'; do
			run geminicli-toolbox --workdir="$BATS_TEST_TMPDIR" "$t" <<<"$input"
			[ "$status" -le 1 ] || { echo "$t crashed ($status) on: $input"; return 1; }
		done
	done
}

@test "a FIFO never hangs a tool: reads fail at once, walks skip it" {
	local w="$BATS_TEST_TMPDIR/fifo"
	mkdir -p "$w" && mkfifo "$w/p" && echo hi >"$w/a.txt"
	tb() { timeout 10 geminicli-toolbox --workdir="$w" "$@"; }
	run tb read_file <<<'{"file_path":"p"}'
	assert_status 1
	assert_contains "Error reading file $w/p: not a regular file"
	run tb write_file <<<'{"file_path":"p","content":"x"}'
	assert_status 1
	assert_contains "EINVAL: invalid argument, open '$w/p'"
	run tb replace <<<'{"file_path":"p","old_string":"a","new_string":"b","instruction":"i"}'
	assert_status 1
	run tb grep_search <<<'{"pattern":"hi"}'
	assert_status 0
	assert_contains "L1: hi"
	run tb grep_search <<<'{"pattern":"hi","dir_path":"p"}'
	assert_status 1
	[ "$output" = "Path is not a valid directory or file: $w/p" ]
	run tb read_many_files <<<'{"include":["*"]}'
	assert_status 0
	assert_contains "--- $w/a.txt ---"
	[[ "$output" != *"--- $w/p ---"* ]]
	run tb list_directory <<<'{"dir_path":"."}'
	assert_status 0
	assert_contains "p (0 bytes)"
}

@test "ICU ordering matches Node's localeCompare" {
	local names=(_x.txt .hidden 10.txt 9.txt a.txt B.txt é.txt Z.txt ab aB Ab a-b a_b a~b ä e E f '#1' '$x' '@y' 'x.y.z' 'X.Y' 'über' 'Ü'
		ß ss Ss æ ae af ð d þ z th Ω ω Σ σ ς α β á à â ǎ ł l ļ ŀ ø o õ ő ǫ œ oe ĳ ij я Я ё е ſ ş ı İ ī ŋ ĸ q đ ď … — « © € 😀 🎉 中)
	local d="$BATS_TEST_TMPDIR/order" n want got seed
	mkdir -p "$d"
	for n in "${names[@]}"; do : >"$d/$n"; done
	want=$(node -e 'console.log(process.argv.slice(1).sort((a,b)=>a.localeCompare(b)).join("\n"))' "${names[@]}")
	got=$(geminicli-toolbox --workdir="$d" list_directory <<<'{"dir_path":"."}' | tail -n +2 | sed 's/ ([0-9]* bytes)$//')
	diff <(echo "$want") <(echo "$got")
	# and names made of those characters at random
	for seed in 1 2 3; do
		rm -rf "$d" && mkdir -p "$d"
		python3 - "$d" "$seed" <<'PY'
import os, random, sys
r = random.Random(int(sys.argv[2]))
alpha = list("aAbBeEiIoOsSzZ09_-.~ $#!'(") + list("éÉèàÀäÄöÖüÜßæÆøØåÅçÇñÑłŁđĐþıœŒĳſǎǖ") + \
    list("αΑσΣςωΩбБёЁяЯ") + ["😀", "🎉", "中", "→", "—", "«", "©", "€", "…", "¿"]
names = set()
while len(names) < 300:
    n = "".join(r.choice(alpha) for _ in range(r.randint(1, 6))).strip()
    if n and n not in (".", ".."):
        names.add(n)
for n in names:
    open(os.path.join(sys.argv[1], n), "w").close()
PY
		want=$(cd "$d" && node -e 'console.log(require("fs").readdirSync(".").sort((a,b)=>a.localeCompare(b)).join("\n"))')
		got=$(geminicli-toolbox --workdir="$d" list_directory <<<'{"dir_path":"."}' | tail -n +2 | sed 's/ ([0-9]* bytes)$//')
		diff <(echo "$want") <(echo "$got") || { echo "seed $seed"; return 1; }
	done
}

# One sandbox per test; every case of the tool runs through sbx-tool in it.
run_cases_sandboxed() {
	local tool=$1 d st exp want got bad=0 h=/home/clawtainer
	sbx-create tb >/dev/null
	for d in "$CASES/$tool"/*/; do
		d=${d%/}
		sbx-exec tb -- sh -c 'cd && rm -rf ./* ./.[!.]* 2>/dev/null; true' >/dev/null
		if [ -f "$d/setup.sh" ]; then sbx-exec -raw tb -- bash -c "cd && $(cat "$d/setup.sh")" >/dev/null || return 1; fi
		jq -nc --arg n "$tool" --rawfile a "$d/input.json" \
			'{id:"c",type:"function",function:{name:$n,arguments:$a}}' >"$BATS_TEST_TMPDIR/call"
		st=0
		sbx-tool -toolset geminicli tb <"$BATS_TEST_TMPDIR/call" >"$BATS_TEST_TMPDIR/msg" || st=$?
		got=$(jq -j .content "$BATS_TEST_TMPDIR/msg"; echo .)
		got=${got%.}
		exp=$(cat "$d/status" 2>/dev/null || echo 0)
		# the tool's failure is sbx-tool's: exit status 1 (0 when it worked)
		[ "$st" = "$((exp != 0))" ] || { echo "case ${d##*/}: sbx-tool exit status $st"; bad=1; }
		if [ "$exp" = 0 ]; then
			want=$(sed "s|@WORKDIR@|$h|g" "$d/expected"; echo .)
			want=${want%.}
		else
			want="Error: tool \"$tool\" failed (exit code $exp): $(sed "s|@WORKDIR@|$h|g" "$d/expected.err")"
		fi
		[ "$got" = "$want" ] || { echo "case ${d##*/}:"; diff <(echo "$want") <(echo "$got"); bad=1; }
	done
	return $bad
}

@test "sandboxed: read_file cases via sbx-tool" { run_cases_sandboxed read_file; }
@test "sandboxed: list_directory cases via sbx-tool" { run_cases_sandboxed list_directory; }
@test "sandboxed: glob cases via sbx-tool" { run_cases_sandboxed glob; }
@test "sandboxed: grep_search cases via sbx-tool" { run_cases_sandboxed grep_search; }
@test "sandboxed: write_file cases via sbx-tool" { run_cases_sandboxed write_file; }
@test "sandboxed: replace cases via sbx-tool" { run_cases_sandboxed replace; }
@test "sandboxed: read_many_files cases via sbx-tool" { run_cases_sandboxed read_many_files; }

@test "sandboxed: run_shell_command foreground, dir_path, exit code, background" {
	sbx-create tb >/dev/null
	# the content; sbx-tool's exit status (1: the tool failed)
	call() {
		local st=0
		jq -nc --arg a "$1" '{id:"c",type:"function",function:{name:"run_shell_command",arguments:$a}}' |
			sbx-tool -toolset geminicli tb >"$BATS_TEST_TMPDIR/msg" || st=$?
		jq -r .content "$BATS_TEST_TMPDIR/msg"
		return $st
	}
	pgid() { printf '%s\n' "$output" | sed -n 's/^Process Group PGID: \([0-9][0-9]*\)$/\1/p'; }
	run call '{"command":"echo out; echo err 1>&2; exit 3"}'
	assert_status 1
	[ "$output" = "$(printf '<untrusted_context>\nOutput: out\nerr\nExit Code: 3\nProcess Group PGID: %s\n</untrusted_context>' "$(pgid)")" ]
	[ -n "$(pgid)" ]
	# errors name line 4, where gemini-cli's wrapper puts the command, and bash by its path
	run call '{"command":"nosuchcmd"}'
	assert_status 1
	assert_contains "Output: $(sbx-exec -raw tb -- sh -c 'command -v bash'): line 4: nosuchcmd: command not found"$'\n'"Exit Code: 127"
	run call '{"command":"   "}'
	assert_status 1
	[ "$output" = 'Error calling tool "run_shell_command": failed to run tool: Command cannot be empty.' ]
	run call '{"command":"true"}'
	assert_status 0
	assert_contains $'<untrusted_context>\nOutput: (empty)\nProcess Group PGID: '
	sbx-exec tb -- mkdir -p /home/clawtainer/sub
	run call '{"command":"pwd","dir_path":"sub"}'
	assert_contains $'Output: /home/clawtainer/sub\nProcess Group PGID: '
	# the command leads its own process group: killing the group kills its jobs
	run call '{"command":"read -r l </proc/$$/stat; set -- ${l##*) }; echo $3"}'
	[ "$output" = "$(printf '<untrusted_context>\nOutput: %s\nProcess Group PGID: %s\n</untrusted_context>' "$(pgid)" "$(pgid)")" ]
	run call '{"command":"sleep 300 & echo bg"}'
	assert_contains $'Output: bg\nBackground PIDs: '
	# a job's output after the call has returned goes to the sandbox's background log
	run call '{"command":"(sleep 0.3; echo late-output) & echo bg"}'
	assert_contains $'Output: bg\nBackground PIDs: '
	wait_until sbx-exec -raw tb -- grep -qx late-output /tmp/sbx-background.log
	run call '{"command":"kill -9 $$"}'
	assert_status 1
	assert_contains $'Output: (empty)\nSignal: 9\nProcess Group PGID: '
	# a bash -c wrapper is unwrapped; substitutions are refused before anything runs
	run call '{"command":"bash -c \"echo wrapped\""}'
	assert_status 0
	assert_contains $'Output: wrapped\nProcess Group PGID: '
	run call '{"command":"touch /tmp/ran-$(id -u)"}'
	assert_status 1
	[ "$output" = "Command injection detected: command substitution syntax (\$(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and \$() subexpressions are also blocked. This is a security risk and the command was blocked." ]
	run sbx-exec tb -- sh -c 'ls /tmp/ran-* 2>/dev/null | wc -l'
	assert_json '.stdout == "0\n"'
	# ANSI stripped, the closing tag escaped, git and pagers tamed
	run call '{"command":"printf \"\\033[31mred\\033[0m </untrusted_context>\"; echo; echo $GIT_CONFIG_GLOBAL $PAGER $GEMINI_CLI"}'
	assert_contains $'Output: red &lt;/untrusted_context&gt;\n/dev/null cat 1\n'
	# over 16 MiB the tail is kept, with gemini-cli's warning; over 40,000 characters the
	# model sees the first 8,000 and the last 32,000 and the file that holds it all
	call '{"command":"echo FIRST; head -c 17000000 /dev/zero | tr \"\\0\" a; echo; echo END"}' >"$BATS_TEST_TMPDIR/big"
	[ "$(wc -c <"$BATS_TEST_TMPDIR/big")" -lt 41000 ]
	run ! grep -q FIRST "$BATS_TEST_TMPDIR/big"
	head -n 1 "$BATS_TEST_TMPDIR/big" >"$BATS_TEST_TMPDIR/head"
	grep -qx 'Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/sbx/tool-outputs/session-tb/run_shell_command_c.txt' "$BATS_TEST_TMPDIR/head"
	grep -qx '\.\.\. \[16,737,3[0-9][0-9] characters omitted\] \.\.\.' "$BATS_TEST_TMPDIR/big"
	# (the warning follows the output as it was, trailing newline and all, as in gemini-cli)
	tail -n 5 "$BATS_TEST_TMPDIR/big" | head -n 3 >"$BATS_TEST_TMPDIR/tail"
	[ "$(cat "$BATS_TEST_TMPDIR/tail")" = "$(printf 'END\n\n[GEMINI_CLI_WARNING: Output truncated. The buffer is limited to 16MB.]')" ]
	run sbx-exec -raw tb -- sh -c 'wc -c </tmp/sbx/tool-outputs/session-tb/run_shell_command_c.txt; head -c 40 /tmp/sbx/tool-outputs/session-tb/run_shell_command_c.txt'
	[[ "${lines[0]}" -gt 16777216 && "${lines[1]}" == "<untrusted_context>" && "${lines[2]}" == "Output: aaaaaaaaaaaa" ]]
	# a delay_ms that is not an integer is gemini-cli's schema error
	run call '{"command":"echo hi","is_background":true,"delay_ms":"soon"}'
	assert_status 1
	[ "$output" = 'Error calling tool "run_shell_command": failed to run tool: params/delay_ms must be integer' ]
	# background: gemini-cli's answer whether it still runs or not; the output goes to its log
	run call '{"command":"echo started; sleep 30","is_background":true}'
	assert_status 0
	[[ "$output" =~ ^'<untrusted_context>'$'\n''Command moved to background (PID: '([0-9]+)'). Output hidden. Press Ctrl+B to view.'$'\n''</untrusted_context>'$ ]]
	pid=${BASH_REMATCH[1]}
	run sbx-exec -raw tb -- sh -c "cat /tmp/sbx/background-processes/background-$pid.log; ps -o pgid= -p $pid"
	[[ "$output" == "started"$'\n'*"$pid" ]]
	run call '{"command":"echo quick","is_background":true,"delay_ms":500}'
	[[ "$output" =~ ^'<untrusted_context>'$'\n''Command moved to background (PID: '([0-9]+)'). Output hidden. Press Ctrl+B to view.'$'\n''</untrusted_context>'$ ]]
	run sbx-exec -raw tb -- cat "/tmp/sbx/background-processes/background-${BASH_REMATCH[1]}.log"
	[ "$output" = quick ]
	# a dir_path that does not exist fails as gemini-cli's spawn does
	run call '{"command":"true","dir_path":"nowhere"}'
	assert_status 1
	[ "$output" = "Error calling tool \"run_shell_command\": failed to run tool: spawn $(sbx-exec -raw tb -- sh -c 'command -v bash') ENOENT" ]
}

@test "GEMINI_SYSTEM_MD: built-in, file, true, ~, missing" {
	cd "$BATS_TEST_TMPDIR"
	run "$SBX_UNIT/test_geminicli" prompt
	assert_status 0
	assert_contains "# Core Mandates"
	printf 'Custom.\n\n\n\nTools:\n${AvailableTools}\nUse ${read_file_ToolName}.\n' >p.md
	GEMINI_SYSTEM_MD=p.md run "$SBX_UNIT/test_geminicli" prompt
	assert_status 0
	[ "$output" = "$(printf 'Custom.\n\nTools:\n- glob\n- grep_search\n- list_directory\n- read_file\n- read_many_files\n- replace\n- run_shell_command\n- write_file\nUse read_file.')" ]
	mkdir -p .gemini && echo 'From dot gemini.' >.gemini/system.md
	GEMINI_SYSTEM_MD=true run "$SBX_UNIT/test_geminicli" prompt
	[ "$output" = "From dot gemini." ]
	GEMINI_SYSTEM_MD=1 run "$SBX_UNIT/test_geminicli" prompt
	[ "$output" = "From dot gemini." ]
	echo 'Home prompt.' >"$HOME/hp.md"
	GEMINI_SYSTEM_MD='~/hp.md' run "$SBX_UNIT/test_geminicli" prompt
	[ "$output" = "Home prompt." ]
	GEMINI_SYSTEM_MD=false run "$SBX_UNIT/test_geminicli" prompt
	assert_contains "# Core Mandates"
	GEMINI_SYSTEM_MD=/nonexistent/x.md run "$SBX_UNIT/test_geminicli" prompt
	assert_status 1
	[ "$output" = "missing system prompt file '/nonexistent/x.md'" ]
}

@test "declarations match @google/gemini-cli-core@0.61.0" {
	local cache ours theirs
	cache=$(gemini_core)
	ours=$(sbx-tool -toolset geminicli -list | jq -S '[.[].function | {name, props: (.parameters.properties | map_values(.type)), required: .parameters.required}] | sort_by(.name)')
	theirs=$(cd "$cache" && node "$BATS_TEST_DIRNAME/unit/geminicli-decls.mjs" | jq -S 'sort_by(.name)')
	diff <(echo "$ours") <(echo "$theirs")
	[ "$(echo "$ours" | jq length)" = 8 ]
}

@test "man page EXAMPLES run" {
	cd "$BATS_TEST_TMPDIR"
	mkdir -p proj/src && printf 'int main(void)\n{\n\treturn 0;\n}\n' >proj/src/main.c
	run sh -c 'echo "{\"pattern\":\"return\",\"dir_path\":\"src\"}" | geminicli-toolbox --workdir=proj grep_search'
	assert_status 0
	assert_contains "File: main.c"
	assert_contains "L3: 	return 0;"
	run sh -c 'echo "{\"file_path\":\"src/main.c\",\"start_line\":2,\"end_line\":3}" | geminicli-toolbox --workdir=proj read_file'
	assert_status 0
	assert_contains "Status: Showing lines 2-3 of 5 total lines."
	run sh -c 'echo "{\"pattern\":\"**/*.c\"}" | geminicli-toolbox --workdir=proj glob'
	assert_contains "Found 1 file(s) matching"
}

@test "write_file snippets match gemini-cli's getDiffContextSnippet" {
	local cache i w="$BATS_TEST_TMPDIR/snip" bad=0
	cache=$(gemini_core)
	python3 "$BATS_TEST_DIRNAME/unit/snippet-case.py" 60 "$w"
	(cd "$cache" && node "$BATS_TEST_DIRNAME/unit/snippet.mjs" "$w" 60)
	for i in $(seq 1 60); do
		cp "$w/$i/old" "$w/$i/f"
		geminicli-toolbox --workdir="$w/$i" write_file <"$w/$i/in.json" | tail -n +2 >"$w/$i/got"
		cmp -s "$w/$i/want" "$w/$i/got" || { echo "seed $i differs"; diff "$w/$i/want" "$w/$i/got"; bad=1; }
	done
	return $bad
}

@test "replace picks the same matches as gemini-cli's calculateReplacement" {
	local cache n i occ multi out got w="$BATS_TEST_TMPDIR/rc" bad=0
	cache=$(gemini_core)
	mkdir -p "$w/cases"
	n=$(python3 "$BATS_TEST_DIRNAME/unit/replace-cases.py" "$w/cases")
	[ "$n" -ge 40 ]
	(cd "$cache" && node "$BATS_TEST_DIRNAME/unit/replace-calc.mjs" "$w/cases" "$n")
	for i in $(seq 0 $((n - 1))); do
		read -r occ multi <"$w/cases/$i.occ"
		rm -rf "$w/run" && mkdir "$w/run" && cp "$w/cases/$i.txt" "$w/run/f"
		out=$(geminicli-toolbox --workdir="$w/run" replace <"$w/cases/$i.json" 2>&1) || true
		if [ "$occ" = 0 ]; then
			[[ $out == "Could not find an exact match"* ]] || { echo "case $i: want no match: $out"; bad=1; }
		elif [ "$occ" != 1 ] && [ "$multi" != true ]; then
			[[ $out == "Failed to edit, Expected 1 occurrence but found $occ "* ]] || { echo "case $i: want $occ: $out"; bad=1; }
		else
			got=$(cat "$w/run/f"; echo .)
			[ "$got" = "$(cat "$w/cases/$i.new"; echo .)" ] && [[ $out == *"($occ replacements)"* ]] ||
				{ echo "case $i differs: $out"; bad=1; }
		fi
	done
	return $bad
}

# A project with nested .gitignore files, negations, directory rules and a .geminiignore.
make_ignore_tree() {
	local t=$1 f
	mkdir -p "$t"/{.git/info,src/gen,build,docs/sub,logs,deep/a/b}
	printf '*.log\nbuild/\n/docs/sub\n!keep.log\ngen\ndeep/**/z.*\n' >"$t/.gitignore"
	printf 'secret*\n' >"$t/.geminiignore"
	printf '*.tmp\n!important.tmp\n/local.c\n' >"$t/src/.gitignore"
	printf 'ex.txt\n' >"$t/.git/info/exclude"
	for f in a.txt a.log keep.log build/o.txt docs/d.md docs/sub/s.md src/x.c src/y.tmp \
		src/important.tmp src/gen/g.c src/local.c secret.txt ex.txt logs/l.txt deep/a/b/z.c \
		deep/a/y.c; do
		echo x >"$t/$f"
	done
}

@test "ignore files filter as gemini-cli's FileDiscoveryService does" {
	local cache t="$BATS_TEST_TMPDIR/ign" mode want got args
	cache=$(gemini_core)
	make_ignore_tree "$t"
	for mode in "true true" "false true" "true false"; do
		set -- $mode
		args=$([ "$1" = false ] && echo nogit || echo git)" "$([ "$2" = false ] && echo nogemini || echo gemini)
		want=$(cd "$t" && find . -type f -not -path './.git/*' | sed 's|^\./||' | sort |
			(cd "$cache" && node "$BATS_TEST_DIRNAME/unit/filter-files.mjs" "$t" $args) | sort)
		got=$(geminicli-toolbox --workdir="$t" glob <<<"{\"pattern\":\"**/*\",\"respect_git_ignore\":$1,\"respect_gemini_ignore\":$2}" |
			tail -n +2 | sed "s|^$t/||" | sort)
		diff <(echo "$want") <(echo "$got") || { echo "mode: $mode"; return 1; }
	done
	# without .git, only .geminiignore counts
	rm -rf "$t/.git"
	want=$(cd "$t" && find . -type f | sed 's|^\./||' | sort |
		(cd "$cache" && node "$BATS_TEST_DIRNAME/unit/filter-files.mjs" "$t") | sort)
	got=$(geminicli-toolbox --workdir="$t" glob <<<'{"pattern":"**/*"}' | tail -n +2 | sed "s|^$t/||" | sort)
	diff <(echo "$want") <(echo "$got")
}

@test "ignore files in list_directory, grep_search and read_many_files" {
	local t="$BATS_TEST_TMPDIR/ign"
	make_ignore_tree "$t"
	run geminicli-toolbox --workdir="$t" list_directory <<<'{"dir_path":"."}'
	assert_status 0
	assert_contains $'\n\n(4 ignored)'
	[[ $output != *"a.log"* && $output != *"secret.txt"* && $output == *"keep.log"* ]]
	run geminicli-toolbox --workdir="$t" list_directory <<<'{"dir_path":".","file_filtering_options":{"respect_git_ignore":false,"respect_gemini_ignore":false}}'
	[[ $output == *"a.log"* && $output != *"ignored)"* ]]
	run geminicli-toolbox --workdir="$t" grep_search <<<'{"pattern":"x","names_only":true}'
	assert_status 0
	# rg's view (.gitignore files, .geminiignore) minus gemini-cli's *.log and *.tmp globs
	[ "$output" = "$(printf 'Found 5 files with matches for pattern "x" in path ".":\na.txt\ndeep/a/y.c\ndocs/d.md\nlogs/l.txt\nsrc/x.c')" ]
	run geminicli-toolbox --workdir="$t" grep_search <<<'{"pattern":"x","names_only":true,"no_ignore":true}'
	assert_contains "src/gen/g.c"
	run geminicli-toolbox --workdir="$t" read_many_files <<<'{"include":["src/*"]}'
	assert_contains "--- $t/src/x.c ---"
	[[ $output != *"--- $t/src/y.tmp ---"* && $output != *"--- $t/src/local.c ---"* ]]
}
