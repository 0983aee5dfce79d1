#!/usr/bin/env bats
# sbx-cp: files and directories into and out of a sandbox, docker cp's placement, tar streams
# both ways, restore's checks on what comes out to the host, both backends.

load helpers
load kube/server
bats_require_minimum_version 1.5.0

setup() {
	setup_sbx_env
	KTS_PID=
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W/src/d/e"
	echo one >"$W/src/a.txt"
	printf 'two\n' >"$W/src/d/e/b.txt"
	chmod 750 "$W/src/d"
	chmod 640 "$W/src/d/e/b.txt"
	touch -d '2001-02-03 04:05:06' "$W/src/a.txt"
	ln -s a.txt "$W/src/link"
	ln -s /etc/passwd "$W/src/out"
	head -c 3000000 /dev/urandom >"$W/src/d/big.bin"
	cd "$W"
}

teardown() {
	cd /
	if [ -n "$KTS_PID" ]; then
		for n in $(sbx-list 2>/dev/null | jq -r .name); do sbx-delete "$n" >/dev/null 2>&1 || true; done
		kts_stop
		unset SANDBOX_BACKEND KUBECONFIG
	fi
	teardown_sbx_env
}

# What a tree holds: path, type, mode, size, link target (sorted), and the files' sums.
tree_of() {	# $1 = directory
	(cd "$1" && find . -mindepth 1 -printf '%p|%y|%m|%s|%l\n' | grep -v '|d|.*|' | LC_ALL=C sort
	 find . -mindepth 1 -type d -printf '%p|d|%m\n' | LC_ALL=C sort
	 find . -type f -exec sha256sum {} + | LC_ALL=C sort)
}

# The same listing, of a directory inside sandbox $1.
sandbox_tree_of() {	# $1 = sandbox, $2 = directory
	sbx-exec -raw "$1" -- sh -c "cd '$2' && find . -mindepth 1 -printf '%p|%y|%m|%s|%l\n' | grep -v '|d|.*|' | LC_ALL=C sort
		find . -mindepth 1 -type d -printf '%p|d|%m\n' | LC_ALL=C sort
		find . -type f -exec sha256sum {} + | LC_ALL=C sort"
}

@test "a sandbox that is not there is 101 (what is not one host path and one NAME:PATH: tests/usage-errors.txt)" {
	run sbx-cp src/a.txt nosuch:x
	assert_status 101
	assert_contains "sandbox nosuch not found"
}

@test "into the sandbox: a file, a directory recursively (modes, mtimes, links), placed as docker cp places them" {
	sbx-create cp >/dev/null
	run sbx-cp src/a.txt cp:a.txt
	assert_status 0
	[ "$output" = '{"from":"src/a.txt","to":"cp:/home/clawtainer/a.txt","files":1,"bytes":4,"skipped_links":[]}' ]
	run sbx-cp src cp:.
	assert_status 0
	assert_json '.to == "cp:/home/clawtainer/src" and .files == 8'
	[ "$(sandbox_tree_of cp /home/clawtainer/src)" = "$(tree_of src)" ]
	[ "$(sbx-exec -raw cp -- stat -c %Y /home/clawtainer/src/a.txt)" = "$(stat -c %Y src/a.txt)" ]
	# into an existing directory it keeps its name; elsewhere it takes the destination's
	run sbx-cp src cp:copy
	assert_json '.to == "cp:/home/clawtainer/copy"'
	[ "$(sandbox_tree_of cp /home/clawtainer/copy)" = "$(tree_of src)" ]
	run sbx-cp src/d/e/b.txt cp:src/renamed.txt
	assert_json '.to == "cp:/home/clawtainer/src/renamed.txt"'
	# dir/. copies the contents into an existing directory; absolute paths work too
	sbx-exec -raw cp -- mkdir /tmp/into
	run sbx-cp src/d/. cp:/tmp/into
	assert_json '.to == "cp:/tmp/into"'
	[ "$(sbx-exec -raw cp -- sh -c 'cd /tmp/into && ls')" = "$(printf 'big.bin\ne')" ]
}

@test "into the sandbox: what cannot be placed is refused with the reason" {
	sbx-create cp >/dev/null
	sbx-cp src/a.txt cp:file >/dev/null
	run sbx-cp src cp:file
	assert_status 100
	[ "$output" = "sbx-cp: unable to copy src to cp:file: cannot copy a directory onto the file cp:file" ]
	run sbx-cp src/a.txt cp:nodir/x
	assert_status 101
	assert_contains "cp:nodir/x: its directory does not exist"
	run sbx-cp src/a.txt cp:newdir/
	assert_status 101
	assert_contains "cp:newdir/: no such directory"
	run sbx-cp nothing.txt cp:x
	assert_status 101
	assert_contains "nothing.txt: No such file or directory"
}

@test "out of the sandbox: the tree as it was; links leading out are left out and named; placement as docker cp" {
	sbx-create cp >/dev/null
	sbx-cp src cp:. >/dev/null
	sbx-exec -raw cp -- sh -c 'ln -s ../../etc ~/src/d/up && ln -s e/b.txt ~/src/d/in'
	run --separate-stderr sbx-cp cp:src back
	assert_status 0
	assert_json '.to == "back" and (.skipped_links | sort) == ["src/d/up", "src/out"]'
	[ "$stderr" = "sbx-cp: warning: left out 2 symlinks leading out of what was copied: src/out, src/d/up" ] ||
		[ "$stderr" = "sbx-cp: warning: left out 2 symlinks leading out of what was copied: src/d/up, src/out" ]
	rm src/out
	ln -s e/b.txt src/d/in
	[ "$(tree_of back)" = "$(tree_of src)" ]
	[ "$(readlink back/d/in)" = e/b.txt ]
	# into an existing directory under its own name; a file under a new name; contents with /.
	mkdir into
	run --separate-stderr sbx-cp cp:src into
	assert_json '.to == "into/src"'
	[ -f into/src/d/e/b.txt ]
	run sbx-cp cp:src/d/e/b.txt into/b-copy.txt
	[ "$(cat into/b-copy.txt)" = two ]
	run --separate-stderr sbx-cp cp:/home/clawtainer/src/d/. into/
	assert_json '.to == "into/" and .files == 4'
	[ -f into/big.bin ]
	[ -d into/e ]
	run sbx-cp cp:src into/b-copy.txt
	assert_status 100
	assert_contains "cannot copy a directory onto the file into/b-copy.txt"
	run sbx-cp cp:nothere x
	assert_status 101
	assert_contains "cp:nothere: no such file or directory"
	run sbx-cp cp:src nodir/x
	assert_status 101
	assert_contains "nodir: no such directory"
}

# A sandbox whose tar is a liar: it prints $1 (a tar made by python) whatever it is asked.
# Its image (tests/oci/mkimage.py): a static busybox for sh and the probe's tools, and tar.
liar_sandbox() {	# $1 = archive kind
	python3 - "$BATS_TEST_TMPDIR/evil.tar" "$1" <<'PY'
import io, sys, tarfile
path, kind = sys.argv[1], sys.argv[2]
t = tarfile.open(path, "w", format=tarfile.GNU_FORMAT)
def add(name, type=tarfile.REGTYPE, data=b"x", link=""):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = link; i.mode = 0o644
    if type == tarfile.REGTYPE:
        i.size = len(data); t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
add("src", tarfile.DIRTYPE)
add("src/ok.txt")
if kind == "traversal": add("src/../../escaped.txt")
if kind == "elsewhere": add("other/evil.txt")
if kind == "through-link":
    add("src/ln", tarfile.SYMTYPE, link="/tmp"); add("src/ln/evil.txt")
if kind == "device": add("src/dev", tarfile.CHRTYPE)
if kind == "hardlink-out": add("src/hl", tarfile.LNKTYPE, link="../../etc/passwd")
t.close()
PY
	cat >"$BATS_TEST_TMPDIR/spec.json" <<-EOF
	{"layers":[{"compress":"gzip","entries":[["hostfile","bin/busybox","/bin/busybox"],
	  ["symlink","bin/sh","busybox"],["symlink","bin/cat","busybox"],
	  ["symlink","bin/dirname","busybox"],["symlink","bin/readlink","busybox"],
	  ["symlink","bin/mkdir","busybox"],["dir","tmp"],
	  ["file","bin/tar","#!/bin/sh\\nexec cat /evil.tar\\n",493],
	  ["hostfile","evil.tar","$BATS_TEST_TMPDIR/evil.tar"]]}],"tag":"latest"}
	EOF
	python3 "$SBX_TOP/tests/oci/mkimage.py" "$BATS_TEST_TMPDIR/spec.json" "$BATS_TEST_TMPDIR/liar.tar" >/dev/null
	sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/liar.tar" liar >/dev/null
	sbx-exec -raw liar -- mkdir /home/clawtainer/src
}

@test "out of the sandbox: a hostile archive is refused whole, before anything is written; streams stop" {
	for kind in traversal elsewhere through-link device hardlink-out; do
		liar_sandbox "$kind"
		run sbx-cp liar:src "$W/back"
		assert_status 111
		assert_contains "refusing entry"
		[ ! -e "$W/back" ]
		[ ! -e "$BATS_TEST_TMPDIR/escaped.txt" ]
		[ ! -e "$W/escaped.txt" ]
		mkdir "$W/into"
		run sbx-cp liar:src "$W/into"
		assert_status 111
		[ -z "$(ls -A "$W/into")" ]
		run --separate-stderr sbx-cp liar:src -
		assert_status 111
		[[ "$stderr" == *"refusing entry"* ]]
		rmdir "$W/into"
		sbx-delete liar >/dev/null
	done
	# what the checks refuse, here: the names in the messages
	liar_sandbox elsewhere
	run sbx-cp liar:src "$W/back"
	assert_contains 'refusing entry "other/evil.txt": it is not in what was copied ("./src")'
}

@test "tar streams: NAME:PATH - writes a clean tar (links out left out), - NAME:DIR reads one" {
	sbx-create cp >/dev/null
	sbx-cp src cp:. >/dev/null
	run --separate-stderr bash -c 'sbx-cp cp:src - | tar -tvf -'
	assert_status 0
	assert_contains "src/d/e/b.txt"
	assert_contains "src/link -> a.txt"
	[[ "$output" != *"src/out"* ]]
	[ "$stderr" = "sbx-cp: warning: left out 1 symlink leading out of what was copied: src/out" ]
	mkdir streamed
	sbx-cp cp:src - 2>/dev/null | tar -xf - -C streamed
	rm src/out
	[ "$(tree_of streamed/src)" = "$(tree_of src)" ]
	# and back in: a tar stream from standard input into a directory
	sbx-exec -raw cp -- mkdir /home/clawtainer/in
	run bash -c 'tar -cf - -C src . | sbx-cp - cp:in'
	assert_status 0
	assert_json '.from == "-" and .to == "cp:/home/clawtainer/in"'
	[ "$(sandbox_tree_of cp /home/clawtainer/in)" = "$(tree_of src)" ]
	run bash -c 'tar -cf - -C src . | sbx-cp - cp:in/a.txt'
	assert_status 100
	assert_contains "is not a directory (a tar stream is extracted into one)"
}

@test "-max-size bounds what comes out to the host" {
	sbx-create cp >/dev/null
	sbx-cp src cp:. >/dev/null
	run sbx-cp -max-size 1M cp:src "$W/back"
	assert_status 111
	assert_contains "expands beyond the limit of 1048576 bytes"
	[ ! -e "$W/back" ]
}

@test "kubernetes: in and out, recursively, and both tar streams, through the test server" {
	kts_start -ready-delay 100ms
	export SANDBOX_BACKEND=kubernetes
	sbx-create k1 >/dev/null
	run sbx-cp src k1:.
	assert_status 0
	assert_json '.to == "k1:/home/clawtainer/src"'
	run --separate-stderr sbx-cp k1:src back
	assert_status 0
	assert_json '.skipped_links == ["src/out"]'
	rm src/out
	[ "$(tree_of back)" = "$(tree_of src)" ]
	mkdir streamed
	sbx-cp k1:src - 2>/dev/null | tar -xf - -C streamed
	[ "$(tree_of streamed/src)" = "$(tree_of src)" ]
	run bash -c 'tar -cf - -C src d | sbx-cp - k1:.'
	assert_status 0
	[ "$(sbx-exec -raw k1 -- sha256sum /home/clawtainer/d/big.bin | cut -d" " -f1)" = "$(sha256sum src/d/big.bin | cut -d" " -f1)" ]
	run sbx-cp k1:nothere x
	assert_status 101
}

@test "man page examples run" {
	run_man_examples sbx-cp
}
