#!/usr/bin/env bats
# readme.bats — every ```sh block of README.md runs, verbatim, so the README cannot rot.
# Each block runs in a private machine of its own: new mount, network and pid namespaces, a
# fresh tmpfs on /tmp (so fixed paths like /tmp/kts.yaml and ports like 8090 are the block's
# alone), HOME in it, the repository at its own path under an overlay (the block may write
# there; nothing reaches the real tree), the built programs on PATH. When the block ends,
# every process it left is gone with its pid namespace. A block that cannot run there carries
# <!-- readme-test: skip: REASON --> on the line before its fence.

load helpers
bats_require_minimum_version 1.5.0

setup() { setup_sbx_env; }

# A block may start servers and sandboxes; this bounds it.
BLOCK_TIMEOUT=300

# readme_blocks README DIR: writes each shell block of README to DIR/NNN.sh (its first line
# "# README.md:LINE"), and for a skipped one DIR/NNN.skip holding the reason. Fails, naming
# the line, on a skip marker without a reason or with no shell block right after it.
readme_blocks() {
	awk -v dir="$2" -v file="${1##*/}" '
		function fail(msg) { print file ":" FNR ": " msg > "/dev/stderr"; bad = 1 }
		inblock && /^```/ { inblock = 0; close(out); next }
		inblock { print > out; next }
		other && /^```/ { other = 0; next }
		other { next }
		/^```(sh|bash|shell)[[:space:]]*$/ {
			n++; out = sprintf("%s/%03d.sh", dir, n)
			print "# " file ":" FNR > out
			if (skip != "") { print skip > sprintf("%s/%03d.skip", dir, n) }
			skip = ""; marker = 0; inblock = 1; next
		}
		/^```/ { if (marker) fail("a skip marker must be followed by a shell block"); marker = 0; skip = ""; other = 1; next }
		marker { fail("a skip marker must be followed by a shell block"); marker = 0; skip = "" }
		/^<!-- readme-test:/ {
			line = $0
			if (!sub(/^<!-- readme-test: skip:[[:space:]]*/, "", line) || !sub(/[[:space:]]*-->[[:space:]]*$/, "", line) || line == "")
				fail("want <!-- readme-test: skip: REASON -->")
			else { skip = line; marker = 1 }
		}
		END { if (inblock) fail("unterminated block"); exit bad }
	' "$1"
}

# run_block FILE [STATE]: runs the block in its private machine (XDG_STATE_HOME=STATE when
# given, else unset); its output on stdout and stderr.
run_block() {
	timeout -k 10 "$BLOCK_TIMEOUT" unshare -mnpf --mount-proc bash -c '
		set -e
		top=$1 block=$(cat "$2")
		ip link set lo up
		mount --make-rprivate /
		lower=$top
		case $top/ in /tmp/*)
			# a tree under /tmp (a clone there) would be hidden by the fresh /tmp: reach it
			# through /mnt, private to this machine too
			mkdir -p /mnt
			mount -t tmpfs -o mode=755 readme-lower /mnt
			mkdir /mnt/top
			mount --bind "$top" /mnt/top
			lower=/mnt/top ;;
		esac
		mount -t tmpfs -o mode=1777,size=4g tmpfs /tmp
		mkdir -p /tmp/.readme/upper /tmp/.readme/work /tmp/home "$top"
		mount -t overlay overlay \
			-o "lowerdir=$lower,upperdir=/tmp/.readme/upper,workdir=/tmp/.readme/work" "$top"
		export HOME=/tmp/home
		if [ -n "$3" ]; then export XDG_STATE_HOME=$3; else unset XDG_STATE_HOME; fi
		cd "$top"
		set +e
		bash -e -o pipefail -c "$block" </dev/null
		rc=$?
		# sandboxes the block left behind: deleted properly, so nothing they hold outside
		# this machine (cgroups) outlives it
		for n in $(sbx-list 2>/dev/null | jq -r .name 2>/dev/null); do
			sbx-delete "$n" >/dev/null 2>&1
		done
		exit $rc
	' _ "$SBX_TOP" "$1" "${2:-}"
}

@test "every shell block of README.md runs verbatim (or says why it cannot)" {
	local dir=$BATS_TEST_TMPDIR/blocks b failed=0 ran=0
	mkdir -p "$dir"
	readme_blocks "$SBX_TOP/README.md" "$dir"
	for b in "$dir"/*.sh; do
		if [ -e "${b%.sh}.skip" ]; then
			echo "# skipped $(head -n 1 "$b" | cut -c3-): $(cat "${b%.sh}.skip")" >&3
			continue
		fi
		ran=$((ran + 1))
		if ! run_block "$b" >"${b%.sh}.out" 2>&1; then
			failed=$((failed + 1))
			echo "FAILED block at ${b##*/} ($(head -n 1 "$b")):" >&2
			sed 's/^/    | /' "$b" >&2
			echo "  its output:" >&2
			sed 's/^/    > /' "${b%.sh}.out" >&2
		fi
	done
	echo "$ran blocks ran, $failed failed" >&3
	# the quick start alone has several: finding none means the extractor broke
	[ "$ran" -ge 8 ]
	[ "$failed" = 0 ]
}

@test "the README extractor: skip markers need a reason and a shell block after them" {
	local dir=$BATS_TEST_TMPDIR/x
	mkdir -p "$dir"
	printf '%s\n' 'text' '```sh' 'echo one' '```' '```text' 'not shell' '```' \
		'<!-- readme-test: skip: needs a cluster -->' '```sh' 'kubectl get pods' '```' \
		'```' 'plain' '```' >"$dir/ok.md"
	readme_blocks "$dir/ok.md" "$dir"
	[ "$(ls "$dir"/*.sh | wc -l)" = 2 ]
	[ "$(sed -n 2p "$dir/001.sh")" = "echo one" ]
	[ "$(head -n 1 "$dir/001.sh")" = "# ok.md:2" ]
	[ ! -e "$dir/001.skip" ]
	[ "$(cat "$dir/002.skip")" = "needs a cluster" ]
	printf '%s\n' '<!-- readme-test: skip: -->' '```sh' 'true' '```' >"$dir/noreason.md"
	run readme_blocks "$dir/noreason.md" "$dir"
	[ "$status" -ne 0 ]
	[[ "$output" == *"noreason.md:1: want <!-- readme-test: skip: REASON -->"* ]]
	printf '%s\n' '<!-- readme-test: skip: stale -->' 'prose' '```sh' 'true' '```' >"$dir/stale.md"
	run readme_blocks "$dir/stale.md" "$dir"
	[ "$status" -ne 0 ]
	[[ "$output" == *"stale.md:2: a skip marker must be followed by a shell block"* ]]
}

@test "a README block runs in a private machine: own /tmp, network and processes, the tree untouched" {
	# a sleep no other process on this machine runs (a fraction of a second unique to this run)
	local nap="300.$$$RANDOM"
	printf '%s\n' '# t' 'touch /tmp/mine readme-scratch' "sleep $nap &" \
		'python3 -m http.server -b 127.0.0.1 8090 >/dev/null 2>&1 & echo started' >"$BATS_TEST_TMPDIR/b.sh"
	run run_block "$BATS_TEST_TMPDIR/b.sh"
	assert_status 0
	assert_contains started
	[ ! -e /tmp/mine ]
	[ ! -e "$SBX_TOP/readme-scratch" ]
	run ! pgrep -f -x "sleep $nap"
	printf '%s\n' '# t' 'false' 'echo not reached' >"$BATS_TEST_TMPDIR/f.sh"
	run run_block "$BATS_TEST_TMPDIR/f.sh"
	[ "$status" -ne 0 ]
	[[ "$output" != *"not reached"* ]]
}

@test "the README's ACP example runs twice in a row with XDG_STATE_HOME set" {
	local dir=$BATS_TEST_TMPDIR/blocks b
	mkdir -p "$dir"
	readme_blocks "$SBX_TOP/README.md" "$dir"
	b=$(grep -l '^acp-server 2>/tmp/acp.log' "$dir"/*.sh)
	[ -n "$b" ]
	# the block, then the block again: the second run must find its own server, not the first's
	{ cat "$b"; cat "$b"; } >"$dir/twice.sh"
	run run_block "$dir/twice.sh" /tmp/state-elsewhere
	assert_status 0
	[ "$(grep -c 'clients send the token in /tmp/state-elsewhere/sbx/.acp-server/token-8090' <<<"$output")" -eq 2 ]
	[ "$(grep -c 'hi' <<<"$output")" -ge 4 ]
}

@test "the README's client notes: the Inspector version the suite runs, Codex's approval mode, the backend choice" {
	local readme=$SBX_TOP/README.md v
	v=$(sed -n 's/^MCP_INSPECTOR_VERSION=//p' "$SBX_TOP/tests/mcp/common.bash")
	[ -n "$v" ]
	grep -qF "npx @modelcontextprotocol/inspector@$v --cli" "$readme"
	grep -qF "declares node 22.19 or later" "$readme"
	# every Codex MCP server entry says default_tools_approval_mode = "approve" (codex exec)
	run awk '/^```toml$/ { t = 1; next } t && /^```$/ { t = 0 } t && /^\[mcp_servers\./ { n++ }
		t && /^default_tools_approval_mode = "approve"$/ { a++ } END { print n + 0, a + 0 }' "$readme"
	[ "$output" = "2 2" ]
	# the quick start says when agent-loop picks kubernetes
	sed -n '/^\*\*4\. Your first agent turn/,/^\*\*5\./p' "$readme" | grep -q 'kubernetes when a Kubernetes configuration exists'
}
