#!/usr/bin/env bash
# user-disk.sh — what a user's fuse2fs-capped home costs (issue 14). As uid 65534 in a v1
# cgroup delegated to it: sbx-create, and a small-file workload in the home (2000 files of
# 512 bytes written, read back, removed, by python3), with the cap — in a mount namespace
# where /dev/fuse is 0666, as udev makes it on a distribution — side by side with the same
# user where the cap cannot be had (/dev/fuse 0600 there: the default cap is dropped, the
# home is a plain host directory). ROUNDS rounds alternate the two; each figure is the
# median over rounds of the per-round medians. Needs root, to make the user's cgroups and
# namespaces.
set -eu
. "$(dirname "$0")/lib.bash"
if [ "$(id -u)" != 0 ]; then
	echo "user-disk.sh: needs root (it becomes uid 65534 in cgroups and namespaces it makes)"
	exit 0
fi
hier() { awk -v c="$1" '/ - cgroup / { n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) print $5 }' /proc/self/mountinfo; }
mine() { sed -n "s/^[0-9]*:$1:\\(.*\\)/\\1/p" /proc/self/cgroup; }
if [ -z "$(hier memory)" ] || [ -z "$(hier pids)" ]; then
	echo "user-disk.sh: needs cgroup v1 memory and pids hierarchies, to delegate one to the user"
	exit 0
fi
rounds=${ROUNDS:-5}
cruns=${CREATE_RUNS:-12}
wruns=${WORK_RUNS:-5}
tmp=$(mktemp -d)
chmod 755 "$tmp"
d=$tmp/user
mkdir "$d"
chown 65534:65534 "$d"
tag=bench-user-disk-$$
dm="$(hier memory)$(mine memory | sed 's#^/$##')/$tag"
dp="$(hier pids)$(mine pids | sed 's#^/$##')/$tag"
mkdir "$dm" "$dp"
chown 65534:65534 "$dm" "$dm/cgroup.procs" "$dm/tasks" "$dp" "$dp/cgroup.procs" "$dp/tasks"
mkdir "$tmp/ns"
mount -t tmpfs -o size=64k,mode=700 sbx-bench-ns "$tmp/ns"
mount --make-private "$tmp/ns"
# ns MODE: a mount namespace where /dev/fuse has MODE, kept at $tmp/ns/MODE
ns() {
	touch "$tmp/ns/$1"
	unshare --mount="$tmp/ns/$1" --propagation private sh -c '
		dev=$(mktemp -d)
		mount -t tmpfs -o size=64k,mode=755 sbx-bench-dev "$dev" && mknod -m "$1" "$dev/fuse" c 10 229 &&
			mount --bind "$dev/fuse" /dev/fuse && umount -l "$dev" && rmdir "$dev"' _ "$1"
}
ns 0666
ns 0600
# $tmp/u MODE CMD…: CMD as the user, in its cgroups, in namespace MODE
cat >"$tmp/u" <<EOF
#!/bin/sh
ns=\$1
shift
exec nsenter --mount="$tmp/ns/\$ns" sh -c 'echo \$\$ >"$dm/cgroup.procs" && echo \$\$ >"$dp/cgroup.procs" && exec "\$@"' _ \\
	setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH="$PATH" HOME="$d" XDG_STATE_HOME="$d/state" "\$@"
EOF
chmod 755 "$tmp/u"
u=$tmp/u
cleanup() {
	for n in cap nocap ccap cnocap; do
		"$u" 0666 sbx-delete "$n" >/dev/null 2>&1 || true
		"$u" 0600 sbx-delete "$n" >/dev/null 2>&1 || true
	done
	umount "$tmp/ns/0666" "$tmp/ns/0600" "$tmp/ns" 2>/dev/null || true
	for c in "$dm" "$dp"; do
		for _ in $(seq 50); do rmdir "$c" 2>/dev/null && break; sleep 0.1; done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$u" 0666 sbx-create -disk 1G cap | grep -q '"disk":1073741824'
"$u" 0600 sbx-create nocap | grep -q '"disk":0'
work="import os, shutil
os.mkdir('w')
for i in range(2000):
    open('w/%d' % i, 'w').write('x' * 512)
for i in range(2000):
    open('w/%d' % i).read()
shutil.rmtree('w')"
for r in $(seq "$rounds"); do
	hyperfine -N -w 1 -r "$wruns" --export-json "$tmp/work.$r.json" \
		-n "work, fuse2fs cap" "$u 0666 sbx-exec -raw cap -- python3 -c \"$work\"" \
		-n "work, no cap" "$u 0600 sbx-exec -raw nocap -- python3 -c \"$work\"" >/dev/null 2>&1
	creates_side_by_side "$tmp/create.$r.json" "$cruns" \
		"create, no cap" "$u 0600 sbx-delete cnocap" "$u 0600 sbx-create -ttl 2m cnocap" \
		"create, fuse2fs cap" "$u 0666 sbx-delete ccap" "$u 0666 sbx-create -ttl 2m -disk 1G ccap"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/medians.py" "$tmp" "$rounds" work create --title "command (as a user)" \
	--diff "create cost of the fuse2fs cap" "create, fuse2fs cap" "create, no cap" \
	--ratio "2000 small files in the capped home, the uncapped home's" "work, fuse2fs cap" "work, no cap"
