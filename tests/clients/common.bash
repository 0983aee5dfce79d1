# common.bash — for tests/clients.bats: OpenAI's Codex CLI, Anthropic's Claude Code and Google's
# gemini-cli from npm (installed once into tests/.cache/clients, bounded and locked), the model
# stub they talk to (tests/clients/model-stub.py), and a network namespace where the only way
# out is a trap interface whose packet counter tells whether anything tried to leave.
# shellcheck shell=bash

CODEX_VERSION=0.171.0
CLAUDE_CODE_VERSION=2.1.337
GEMINI_CLI_VERSION=0.61.0
# gemini-cli needs node 20 (as the gemini-cli-core the parity tests use); Codex's launcher
# needs 16 and Claude Code's installer (it copies the native binary into place) runs on 18.
CLIENTS_NODE_MAJOR=20

# clients_install: installs @openai/codex, @anthropic-ai/claude-code and @google/gemini-cli
# unless already there; sets CODEX, CLAUDE and GEMINI to their programs.
clients_install() {
	local d="$SBX_TOP/tests/.cache/clients" major
	major=$(node -p 'process.versions.node.split(".")[0]') || return 1
	if [ "$major" -lt "$CLIENTS_NODE_MAJOR" ]; then
		echo "clients: node $major is too old: the agents' npm packages need node $CLIENTS_NODE_MAJOR or later" >&2
		return 1
	fi
	CODEX="$d/node_modules/.bin/codex"
	CLAUDE="$d/node_modules/.bin/claude"
	GEMINI="$d/node_modules/.bin/gemini"
	mkdir -p "$d"
	(
		flock 9
		if [ -x "$CODEX" ] && [ -x "$CLAUDE" ] && [ -x "$GEMINI" ] &&
			grep -q "\"version\": \"$GEMINI_CLI_VERSION\"" "$d/node_modules/@google/gemini-cli/package.json" &&
			grep -q "\"version\": \"$CODEX_VERSION\"" "$d/node_modules/@openai/codex/package.json" &&
			grep -q "\"version\": \"$CLAUDE_CODE_VERSION\"" "$d/node_modules/@anthropic-ai/claude-code/package.json"; then
			exit 0
		fi
		printf '{"private":true,"dependencies":{"@openai/codex":"%s","@anthropic-ai/claude-code":"%s","@google/gemini-cli":"%s"}}\n' \
			"$CODEX_VERSION" "$CLAUDE_CODE_VERSION" "$GEMINI_CLI_VERSION" >"$d/package.json"
		# (Claude Code's postinstall puts its native binary in place: scripts must run.)
		timeout 600 npm install --prefix "$d" --no-audit --no-fund --loglevel=error \
			</dev/null >"$d/install.log" 2>&1 || { cat "$d/install.log" >&2; exit 1; }
	) 9>"$d.lock"
}

# offline_up: a network namespace with loopback and one trap interface holding the default
# route; IPv6 is off (the kernel would send its own packets, and nothing can leave by it);
# OFFLINE names it. Programs run in it
# with `offline CMD…` (nsenter, so the mount namespace and its cgroup tree stay the host's; in
# the background call nsenter itself, so that $! is the program's pid, not a subshell's).
offline_up() {
	OFFLINE=sbxcl$$
	ip netns add "$OFFLINE"
	ip netns exec "$OFFLINE" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$OFFLINE" link set lo up
	ip -n "$OFFLINE" link add trap0 type veth peer name trap1
	ip -n "$OFFLINE" link set trap0 up
	ip -n "$OFFLINE" link set trap1 up
	ip -n "$OFFLINE" addr add 192.0.2.1/24 dev trap0
	ip -n "$OFFLINE" route add default via 192.0.2.2 dev trap0 onlink
}

offline_down() {
	[ -z "${OFFLINE:-}" ] || ip netns del "$OFFLINE" 2>/dev/null || true
	OFFLINE=
}

offline() { nsenter --net="/run/netns/$OFFLINE" "$@"; }

# trapped: the packets sent towards anything but loopback since offline_up (DNS included).
trapped() { ip -n "$OFFLINE" -s -j link show trap0 | jq '.[0].stats64.tx.packets'; }

# model_stub CALLS-JSON [TOOL]: the stub in the offline namespace, calling TOOL (default
# mcp__sbx__run_command) once with each of CALLS' arguments; sets STUB_DIR, STUB_PID, STUB_PORT.
model_stub() {
	STUB_DIR=$BATS_TEST_TMPDIR/stub
	mkdir -p "$STUB_DIR"
	printf '%s\n' "$1" >"$STUB_DIR/calls.json"
	printf '%s\n' "${2:-mcp__sbx__run_command}" >"$STUB_DIR/tool"
	nsenter --net="/run/netns/$OFFLINE" python3 "$SBX_TOP/tests/clients/model-stub.py" "$STUB_DIR" >"$STUB_DIR/log" 2>&1 3>&- &
	STUB_PID=$!
	wait_until -p "$STUB_PID" test -s "$STUB_DIR/port" || { cat "$STUB_DIR/log" >&2; return 1; }
	STUB_PORT=$(cat "$STUB_DIR/port")
}

stop_model_stub() {
	[ -z "${STUB_PID:-}" ] || terminate "$STUB_PID" || true
	STUB_PID=
}

# The tool results the stub was sent, one JSON line each, in the order the calls were made, as
# each API writes them (each request repeats the earlier ones: the first of each call id).
first_each() { jq -c -s --arg k "$1" 'reduce .[] as $r ([]; if any(.[]; .[$k] == $r[$k]) then . else . + [$r] end) | .[]'; }
codex_results() { jq -c '.body.input[]? | select(.type == "function_call_output")' "$STUB_DIR/requests.jsonl" | first_each call_id; }
claude_results() {
	jq -c '.body.messages[]?.content | arrays | .[] | select(.type == "tool_result") | del(.cache_control)' \
		"$STUB_DIR/requests.jsonl" | first_each tool_use_id
}
gemini_results() { jq -c '.body.contents[]?.parts[]? | select(.functionResponse) | .functionResponse' "$STUB_DIR/requests.jsonl" | first_each id; }

# codex_home: $BATS_TEST_TMPDIR/codex with a config.toml pointing Codex at the stub, with no
# update check, analytics or plugin sync (each would reach for the network), then the
# README's MCP table for sbx-mcp (TABLE: sbx or sbx-http), copied as a user would.
codex_home() {
	export CODEX_HOME=$BATS_TEST_TMPDIR/codex
	mkdir -p "$CODEX_HOME"
	cat >"$CODEX_HOME/config.toml" <<-EOF
		model = "stub-model"
		model_provider = "stub"
		check_for_update_on_startup = false

		[analytics]
		enabled = false

		[features]
		plugins = false

		[model_providers.stub]
		name = "stub"
		base_url = "http://127.0.0.1:$STUB_PORT/v1"
		wire_api = "responses"
		env_key = "STUB_API_KEY"

	EOF
	awk -v t="[mcp_servers.$1]" '$0 == t { on = 1 } on && ($0 == "" || $0 ~ /^```/) { exit } on' "$SBX_TOP/README.md" \
		>>"$CODEX_HOME/config.toml"
	grep -q "^\[mcp_servers.$1\]" "$CODEX_HOME/config.toml"
}

# gemini_home: ~/.gemini/settings.json holding the README's block for gemini-cli as a user
# would copy it, the `sbx` server alone (the `sbx-http` one names a port of the README's), plus
# an API key as the way to log in and no usage statistics or update checks (each would reach
# for the network).
gemini_home() {
	mkdir -p "$HOME/.gemini"
	awk '/^gemini-cli, `~\/.gemini\/settings.json`/ { on = 1; next }
		on && /^```json$/ { body = 1; next } body && /^```$/ { exit } body' "$SBX_TOP/README.md" |
		jq '{mcpServers: {sbx: .mcpServers.sbx}} + {
			security: {auth: {selectedType: "gemini-api-key"}},
			privacy: {usageStatisticsEnabled: false},
			general: {disableAutoUpdate: true, disableUpdateNag: true}}' >"$HOME/.gemini/settings.json"
	jq -e '.mcpServers.sbx.command == "sbx-mcp"' "$HOME/.gemini/settings.json" >/dev/null
}
