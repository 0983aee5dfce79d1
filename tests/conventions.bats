#!/usr/bin/env bats
# conventions.bats — what every program shares: -h, --version from the one version string
# (lib/util/version.h), a man page, and in it the one exit status table (man/exit-status.roff)
# followed by what each status means for that program.

load helpers

setup() { setup_sbx_env; }

# The programs users run: every cmd/*.c but the shared front end and the internal helpers
# in libexec (sbx-init, sbx-proxy).
programs() {
	local f
	for f in "$SBX_TOP"/cmd/*.c; do
		f=${f##*/}
		f=${f%.c}
		case $f in cli | sbx-init | sbx-proxy) ;; *) echo "$f" ;; esac
	done
}

@test "every program answers --version and -version with the one version string" {
	version=$(sed -n 's/^#define SBX_VERSION "\(.*\)"$/\1/p' "$SBX_TOP/lib/util/version.h")
	[ -n "$version" ]
	for p in $(programs); do
		run "$p" --version
		assert_status 0
		[ "$output" = "$p (sbx) $version" ] || { echo "$p: $output" >&2; false; }
		run "$p" -version
		[ "$output" = "$p (sbx) $version" ]
	done
}

@test "the internal helpers (sbx-init, sbx-proxy) answer --version and -h too" {
	version=$(sed -n 's/^#define SBX_VERSION "\(.*\)"$/\1/p' "$SBX_TOP/lib/util/version.h")
	for p in sbx-init sbx-proxy; do
		run "$SBX_BIN/$p" --version
		assert_status 0
		[ "$output" = "$p (sbx) $version" ] || { echo "$p: $output" >&2; false; }
		run "$SBX_BIN/$p" -h
		assert_status 0
		assert_contains "usage: $p"
	done
	# misuse is still a usage error
	run "$SBX_BIN/sbx-init"
	assert_status 100
}

@test "every program prints its usage on -h and exits 0" {
	for p in $(programs); do
		run "$p" -h
		assert_status 0
		assert_contains "usage: $p"
	done
}

@test "every program has a man page whose EXIT STATUS is the one table, then its own meanings" {
	table=$(cat "$SBX_TOP/man/exit-status.roff")
	for p in $(programs); do
		page=$SBX_TOP/man/man1/$p.1
		[ -f "$page" ] || { echo "no man page for $p" >&2; false; }
		section=$(awk '/^\.SH EXIT STATUS/ { p = 1 } p && /^\.SH / && !/EXIT STATUS/ { exit } p' "$page")
		[ "${section:0:${#table}}" = "$table" ] || { echo "$p.1: EXIT STATUS is not the shared table" >&2; false; }
		[[ "${section:${#table}}" == $'\nFor\n.BR '"$p"' :'$'\n.TP\n'* ]] || { echo "$p.1: no meanings of its own after the table" >&2; false; }
	done
}

@test "no man page holds a control character troff would print (a stray form feed, an escape)" {
	run grep -nP '[\x00-\x08\x0b-\x1f\x7f]' "$SBX_TOP"/man/man1/*.1 "$SBX_TOP"/man/*.roff
	assert_status 1
}

@test "every -h shows a row for each shared flag its synopsis names (cmd/cli.c's table), nothing raw" {
	local p f bad=
	for p in $(programs); do
		run "$p" -h
		assert_status 0
		[[ $output != *$'\x1e'* ]] || bad="$bad $p(marker)"
		for f in "backend B" "namespace NS" "image I" "homedir D" "ttl D"; do
			[[ $(printf '%s\n' "$output" | sed -n '1,/^$/p') == *"[-${f%% *} "* ]] || continue
			[[ $output == *$'\n'"  -$f "* ]] || bad="$bad $p(-${f%% *})"
		done
	done
	[ -z "$bad" ] || { echo "rows missing:$bad" >&2; false; }
}
