#!/usr/bin/env bats
# The swap race (issue 27, item 1): inside the sandbox a loop swaps the directory ~/d with the
# symlink ~/l -> HOSTDIR (renameat2 RENAME_EXCHANGE) while the host walks the home: snapshot,
# restore, the clearing of a failed restore, sbx-cp out and in. Never a host byte in a backup
# or in what is copied out, never a host file changed. As root, and as an unprivileged user
# (65534) whose own secret (mode 0600) is the canary: without subordinate ids, and with a
# range of them (the sandbox then maps 65536 ids and the host walks the home as root of a user
# namespace mapping that range). SECURITY.md maps the defence here.

load helpers
load subids
bats_require_minimum_version 1.5.0

# Rounds of each operation against the running swap (the walk lost it within ten before).
ROUNDS=500

setup() {
	setup_sbx_env
	ud= HOSTDIR= RUNAS=()
}

teardown() {
	local n
	if [ -n "$ud" ]; then
		for n in $(runas sbx-list 2>/dev/null | jq -r .name); do runas sbx-delete "$n" >/dev/null 2>&1; done
		user_ns_remove
		rm -rf "$ud"
	fi
	teardown_sbx_env
	[ -z "$HOSTDIR" ] || rm -rf "$HOSTDIR"
}

# runas CMD…: CMD as the identity the test chose (swap_setup).
runas() { "${RUNAS[@]}" "$@"; }

# host_state: HOSTDIR's names, modes and contents, to compare before and after.
host_state() { (cd "$HOSTDIR" && find . -printf '%p %m %s\n' | LC_ALL=C sort && cat canary); }

# swap_setup root|user|subids: HOSTDIR with its canary (world-readable and -writable as root;
# the user's own 0600 file in a 0700 directory as the user), sandbox demo with ~/d/canary and
# ~/d/sub/f of its own, and sbx-probe in its /tmp. CANARY is the host file's text. With subids,
# the user has 65536 subordinate ids (in a mount namespace of the test's, tests/subids.bash)
# and demo's uid map is checked to hold them.
swap_setup() {
	CANARY="host-canary-$$-$RANDOM$RANDOM"
	if [ "$1" = user ] || [ "$1" = subids ]; then
		[ "$(id -u)" = 0 ] || skip "needs root to become another user"
		ud=$(mktemp -d /tmp/sbx-swap-user.XXXXXX)
		chmod 755 "$ud"
		HOSTDIR=$ud/secret
		mkdir "$HOSTDIR"
		printf '%s\n' "$CANARY" >"$HOSTDIR/canary"
		chmod 700 "$HOSTDIR"
		chmod 600 "$HOSTDIR/canary"
		chown -R 65534:65534 "$ud"
		RUNAS=(setpriv --reuid 65534 --regid 65534 --clear-groups
		       env -i PATH="$PATH" HOME="$ud" XDG_STATE_HOME="$ud/state")
		if [ "$1" = subids ]; then
			user_subids 65536
			RUNAS=(nsenter --mount="$uns/mnt" "${RUNAS[@]}")
		fi
		runas sbx-create -limits none -ttl 2h demo >/dev/null
		if [ "$1" = subids ]; then
			[ "$(user_map demo)" = "0 65534 1 1 $((SUBIDS + 1)) 65535 " ]
		else
			[ "$(user_map demo)" = "0 65534 1 " ]
		fi
	else
		HOSTDIR=$(mktemp -d /tmp/sbx-swap-host.XXXXXX)
		printf '%s\n' "$CANARY" >"$HOSTDIR/canary"
		chmod 777 "$HOSTDIR"
		chmod 666 "$HOSTDIR/canary"
		sbx-create -ttl 2h demo >/dev/null
	fi
	HOST_BEFORE=$(host_state)
	runas sbx-exec -raw demo -- sh -c 'mkdir -p ~/d/sub && echo own >~/d/canary && echo f >~/d/sub/f &&
		cat >/tmp/sbx-probe && chmod 755 /tmp/sbx-probe' <"${SBX_UNIT:-$SBX_TOP/build/tests}/sbx-probe"
}

# swap_start: the swap loop, in the background inside demo; SWAPPER is its pid there.
swap_start() {
	SWAPPER=$(runas sbx-exec -raw demo -- sh -c 'cd ~ && setsid /tmp/sbx-probe swap d l "$1" \
		>/dev/null 2>&1 </dev/null & echo $!' _ "$HOSTDIR")
	[ -n "$SWAPPER" ]
}

# swap_check: the swap ran all along, and HOSTDIR is as it was.
swap_check() {
	runas sbx-exec -raw demo -- kill -0 "$SWAPPER"
	[ "$(host_state)" = "$HOST_BEFORE" ]
}

# snapshots: ROUNDS snapshots against the swap; none holds a byte of the host's canary.
snapshots() {
	local i p
	swap_start
	for ((i = 0; i < ROUNDS; i++)); do
		p=$(runas sbx-snapshot -keep 2 demo 2>/dev/null | jq -r .path)
		if runas gzip -dc "$p" | grep -aqF "$CANARY"; then
			echo "round $i: the host's canary is in $p" >&2
			return 1
		fi
	done
	swap_check
}

# restores: ROUNDS restores of a backup holding d/canary and d/sub/f against the swap.
restores() {
	local i
	runas sbx-snapshot demo >/dev/null
	swap_start
	for ((i = 0; i < ROUNDS; i++)); do
		runas sbx-restore demo >/dev/null 2>&1 || true	# a swapped parent fails its entry
	done
	swap_check
}

# clears: the newest backup has a file blk where the home has the directory blk/x (made again
# before each round), so each restore fails on it, empties the home and restores the older;
# at least ROUNDS/2 such rounds in 2*ROUNDS tries, and never a host file removed.
clears() {
	local i cleared=0 out other=
	runas sbx-exec -raw demo -- sh -c 'mkdir ~/blk && echo x >~/blk/x'
	runas sbx-snapshot demo >/dev/null
	sleep 1	# backup names tell seconds apart
	runas sbx-exec -raw demo -- sh -c 'rm -r ~/blk && echo f >~/blk'
	runas sbx-snapshot demo >/dev/null
	swap_start
	for ((i = 0; cleared < ROUNDS && i < 2 * ROUNDS; i++)); do
		runas sbx-exec -raw demo -- sh -c 'rm -rf ~/blk && mkdir ~/blk && echo x >~/blk/x'
		out=$(runas sbx-restore demo 2>&1) || true
		case $out in
		*"cannot be extracted"*) cleared=$((cleared + 1)) ;;
		*) [ -n "${other-}" ] || { other=$out; echo "a round that did not clear: $out" >&2; } ;;
		esac
	done
	echo "rounds that emptied the home: $cleared of $i" >&2
	# The swapper may win a round (its restore then fails and says so, the home not emptied);
	# the clearing must still have run in most rounds, so the race was really run against it.
	[ $((2 * cleared)) -ge "$ROUNDS" ]
	swap_check
}

# copies_out: ROUNDS copies of the home out to the host against the swap; none holds the
# host's canary.
copies_out() {
	local i out=$BATS_TEST_TMPDIR/out
	mkdir -p "$out"
	chmod 777 "$out"
	swap_start
	for ((i = 0; i < ROUNDS; i++)); do
		runas sbx-cp demo:. "$out/r" >/dev/null 2>&1 || true
		if grep -rqF "$CANARY" "$out"; then
			echo "round $i: the host's canary was copied out" >&2
			return 1
		fi
		rm -rf "$out/r"
	done
	swap_check
}

# copies_in: ROUNDS copies of a tree with a file named canary into d against the swap.
copies_in() {
	local i src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/sub"
	echo sandbox-bound >"$src/canary"
	echo f >"$src/sub/f"
	# Only the source: the test's directory also holds the home the sandbox is swapping in.
	chmod a+rx "$BATS_TEST_TMPDIR"
	chmod -R a+rX "$src"
	swap_start
	for ((i = 0; i < ROUNDS; i++)); do
		runas sbx-cp "$src/." demo:d >/dev/null 2>&1 || true
	done
	swap_check
}

@test "root: snapshots under the swap race never hold a host byte" {
	swap_setup root
	snapshots
}

@test "user: snapshots under the swap race never hold the user's own 0600 file" {
	swap_setup user
	snapshots
}

@test "root: restores under the swap race never write a host file" {
	swap_setup root
	restores
}

@test "user: restores under the swap race never write the user's files" {
	swap_setup user
	restores
}

@test "root: the clearing of a failed restore under the swap race never removes a host file" {
	swap_setup root
	clears
}

@test "user: the clearing of a failed restore under the swap race never removes the user's files" {
	swap_setup user
	clears
}

@test "root: sbx-cp out under the swap race never copies a host byte, sbx-cp in never writes the host" {
	swap_setup root
	copies_out
	copies_in
}

@test "user: sbx-cp out under the swap race never copies the user's file, sbx-cp in never writes it" {
	swap_setup user
	copies_out
	copies_in
}

@test "subids: snapshots under the swap race never hold the user's own 0600 file" {
	swap_setup subids
	snapshots
}

@test "subids: restores under the swap race never write the user's files" {
	swap_setup subids
	restores
}

@test "subids: the clearing of a failed restore under the swap race never removes the user's files" {
	swap_setup subids
	clears
}

@test "subids: sbx-cp out under the swap race never copies the user's file, sbx-cp in never writes it" {
	swap_setup subids
	copies_out
	copies_in
}
