#!/usr/bin/env bash
# llm-chat.sh — process start to exit of llm-chat, median over many runs (hyperfine), next to
# baselines measured in the same run: /bin/true (a bare process start) for fake-eliza, and
# curl posting the same request to the same local stub server (tests/openai-stub.py) for the
# HTTP paths.  Usage: tests/bench/llm-chat.sh [RUNS]   Env: SBX_BIN (default: ./bin).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=${SBX_BIN:-$top/bin}
runs=${1:-300}
command -v hyperfine >/dev/null || { echo "llm-chat.sh: hyperfine is needed (scripts/install-deps)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/llm-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
# shellcheck source=../helpers.bash
. "$here/../helpers.bash"	# wait_until

# start_stub DIR ANSWER: a stub answering every request with ANSWER; prints its base URL.
start_stub() {
	mkdir -p "$1"
	printf '%s\n' "$2" >"$1/script.jsonl"
	python3 "$here/../openai-stub.py" "$1" >/dev/null 2>&1 &
	pids+=($!)
	wait_until -p "${pids[-1]}" test -s "$1/port" || { echo "llm-chat.sh: the stub did not start" >&2; exit 1; }
}
start_stub "$work/plain" '{"repeat":true,"json":{"id":"b","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}]}}'
start_stub "$work/sse" '{"repeat":true,"sse":[{"id":"b","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]},{"id":"b","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]},"data: [DONE]\n\n"]}'
plain="http://127.0.0.1:$(cat "$work/plain/port")/v1"
sse="http://127.0.0.1:$(cat "$work/sse/port")/v1"
printf '%s\n' '{"messages":[{"role":"user","content":"hello"}]}' >"$work/req.json"
printf '%s\n' '{"model":"fake-eliza","messages":[{"role":"user","content":"hello"}]}' >"$work/eliza.json"
export OPENAI_API_KEY=bench-key
unset GEMINI_API_KEY OPENAI_MODEL MODEL OPENAI_BASE_URL
post="curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Authorization: Bearer bench-key' --data-binary @$work/req.json"

hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/r.json" \
	-n true /bin/true \
	-n fake-eliza "$bin/llm-chat $work/eliza.json" \
	-n curl "$post $plain/chat/completions" \
	-n llm-chat "$bin/llm-chat -base-url $plain $work/req.json" \
	-n curl-sse "$post -N $sse/chat/completions" \
	-n llm-chat-stream "$bin/llm-chat -stream -base-url $sse $work/req.json" >/dev/null

jq -r '.results[] | "\(.command) \(.median * 1000)"' "$work/r.json" | awk -v date="$(date -u +%F)" '
	{ t[$1] = $2 }
	function row(name, v, base) { printf "%-36s %9.2f %7.2f\n", name, v, v / base }
	END {
		printf "%-36s %9s %7s\n", "llm-chat bench " date, "median ms", "ratio"
		row("/bin/true (baseline)", t["true"], t["true"])
		row("llm-chat, model fake-eliza", t["fake-eliza"], t["true"])
		row("curl POST to stub (baseline)", t["curl"], t["curl"])
		row("llm-chat to stub", t["llm-chat"], t["curl"])
		row("curl POST to SSE stub (baseline)", t["curl-sse"], t["curl-sse"])
		row("llm-chat -stream to SSE stub", t["llm-chat-stream"], t["curl-sse"])
	}'
