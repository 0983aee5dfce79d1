# subids.bash — subordinate ids for the test user (65534, "nobody") in tests run as root, seen
# only inside a private mount namespace of the test's: other suites running at the same time
# never see them. Loaded by limits.bats and attacks-swap.bats.
# shellcheck shell=bash

# user_ns: $uns/mnt, a mount namespace of this test's (made once) where the user's commands run.
user_ns() {
	[ -z "${uns-}" ] || return 0
	uns=$(mktemp -d /tmp/sbx-subids-ns.XXXXXX)
	mount -t tmpfs -o size=64k,mode=700 sbx-test-ns "$uns"
	mount --make-private "$uns"
	touch "$uns/mnt"
	unshare --mount="$uns/mnt" --propagation private true
}
# user_subids COUNT: in the user's mount namespace (only), /etc/subuid and /etc/subgid give the
# user COUNT subordinate ids from SUBIDS.
SUBIDS=1610612736
user_subids() {
	user_ns
	echo "nobody:$SUBIDS:$1" >"$uns/subids"
	nsenter --mount="$uns/mnt" sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$1" /etc/subgid' _ "$uns/subids"
}
# user_ns_remove: the user's mount namespace (if made) removed.
user_ns_remove() {
	[ -n "${uns-}" ] || return 0
	umount "$uns/mnt" && umount "$uns" && rmdir "$uns"
	uns=
}
# user_map NAME: the uid map of the user's sandbox NAME (its state in $ud/state) as the host
# sees it, on one line (read from a process of it: a descendant of its supervisor in a user
# namespace).
user_map() {
	local p sup m
	sup=$(cat "$ud/state/sbx/default/$1/supervisor.pid")
	for p in $(pgrep -P "$sup") $(pgrep -P "$(pgrep -d, -P "$sup")"); do
		m=$(awk '{ printf "%s %s %s ", $1, $2, $3 }' "/proc/$p/uid_map")
		[ "$m" = "0 0 4294967295 " ] || { echo "$m"; return 0; }
	done
	return 1
}
