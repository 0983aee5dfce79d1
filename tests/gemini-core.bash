# gemini-core.bash — @google/gemini-cli-core 0.61.0 from npm, installed once into
# tests/.cache/gemini-cli-core (bounded by a timeout), for the tests that compare with it.
# shellcheck shell=bash

# gemini_core: prints the directory holding node_modules/@google/gemini-cli-core.
gemini_core() {
	local cache="$SBX_TOP/tests/.cache/gemini-cli-core"
	if [ ! -d "$cache/node_modules/@google/gemini-cli-core/dist" ]; then
		mkdir -p "$cache"
		(cd "$cache" && timeout 600 npm install --silent --no-audit --no-fund --ignore-scripts \
			--omit=optional @google/gemini-cli-core@0.61.0 >/dev/null 2>&1)
	fi
	[ -d "$cache/node_modules/@google/gemini-cli-core/dist" ] || return 1
	echo "$cache"
}
