# harden.bash — shared by tests/faults.bats and tests/valgrind.bats.
# shellcheck shell=bash

# wait_until CMD…: runs CMD every 0.1 s until it succeeds, at most 30 s.
wait_until() {
	local i
	for ((i = 0; i < 300; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "timed out waiting for: $*" >&2
	return 1
}
