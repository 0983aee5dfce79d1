# agent.bash — agent-loop in bats files: eliza runs a chat on the fake-eliza model; agent_fed
# keeps one going in the background, fed line by line (fed in helpers.bash).
# shellcheck shell=bash

# eliza ARG…: agent-loop ARG… on the fake-eliza model.
eliza() { OPENAI_MODEL=fake-eliza agent-loop "$@"; }

# turn SESSION TEXT [ARG…]: one turn of session SESSION (TEXT the user's line) with eliza,
# its output dropped.
turn() {
	local session=$1 text=$2
	shift 2
	printf '%s\n' "$text" | eliza -session "$session" "$@" >/dev/null 2>&1
}

# agent_fed ARG…: agent-loop ARG… in the background as fed starts it (input on fd 4, output in
# $BATS_TEST_TMPDIR/out and err, FED_PID), on fake-eliza unless OPENAI_MODEL is set.
agent_fed() { fed env OPENAI_MODEL="${OPENAI_MODEL:-fake-eliza}" agent-loop "$@"; }

# wait_snapshot: waits until the fed agent-loop has saved a backup (its first turn is over).
wait_snapshot() { wait_until -p "$FED_PID" grep -q "saved filesystem state" "$BATS_TEST_TMPDIR/err"; }
