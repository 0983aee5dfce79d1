# gemini-core.bash — @google/gemini-cli-core 0.61.0 from npm, installed once into
# tests/.cache/gemini-cli-core (bounded by a timeout), for the tests that compare with it.
# shellcheck shell=bash

# gemini_core: prints the directory holding node_modules/@google/gemini-cli-core. The install
# is locked and marked done only when whole: geminicli-toolbox.bats and geminicli-parity.bats
# run side by side (tests/run), and neither may use a half-extracted package.
gemini_core() {
	local cache="$SBX_TOP/tests/.cache/gemini-cli-core"
	mkdir -p "$cache"
	(
		flock 9
		[ -e "$cache/done" ] && [ -d "$cache/node_modules/@google/gemini-cli-core/dist" ] && exit 0
		rm -f "$cache/done"
		(cd "$cache" && timeout 600 npm install --silent --no-audit --no-fund --ignore-scripts \
			--omit=optional @google/gemini-cli-core@0.61.0 >"$cache/install.log" 2>&1) ||
			{ cat "$cache/install.log" >&2; exit 1; }
		[ -d "$cache/node_modules/@google/gemini-cli-core/dist" ] && touch "$cache/done"
	) 9>"$cache.lock" || return 1
	echo "$cache"
}
