#!/usr/bin/env bats
# sbx-restore: round trips through real local sandboxes, fall-back past corrupt backups,
# upstream (GNU tar) backups, and hostile archives refused with the home untouched.

load helpers
load snapshot
bats_require_minimum_version 1.5.0

setup() {
	setup_sbx_env
	FS="$HOME/.local/sandboxed-tools/demo/fs"
}

teardown() {
	kube_down
	teardown_sbx_env
}

# Lists a sandbox home: path, type, mode, size, mtime (seconds), link target; sorted (no
# directory sizes: they differ between file systems).
listing() {	# $1 = sandbox, $2 = directory (default ~)
	sbx-exec -raw "$1" -- sh -c "cd ${2:-/home/clawtainer} && find . -mindepth 1 \( -type d -printf '%p|d|%m|%Ts\n' \) -o -printf '%p|%y|%m|%s|%Ts|%l\n' | LC_ALL=C sort; cat ./a/b/c/deep.txt ./run.sh"
}

# A home worth restoring: nested dirs, links inside, an empty file, odd names, modes, mtimes.
populate() {	# $1 = sandbox, $2 = directory (default ~)
	sbx-exec -raw "$1" -- sh -c "mkdir -p ${2:-/home/clawtainer} && cd ${2:-/home/clawtainer} && mkdir -p a/b/c && chmod 750 a && chmod 700 a/b &&
		echo deep > a/b/c/deep.txt && chmod 640 a/b/c/deep.txt &&
		printf '#!/bin/sh\necho hi\n' > run.sh && chmod 755 run.sh && touch -d '2001-02-03 04:05:06' run.sh &&
		: > empty && echo s > 'with space' && echo n > 'new
line' && echo u > 'été 漢字' &&
		ln -s a/b link && ln -s ../../run.sh a/b/up && ln -s nowhere dangling &&
		echo same > hard1 && ln hard1 a/hard2 && touch -d '2010-01-01 00:00:00' a/b/c"
}

# Writes a hostile gzip tar: $1 = file, $2 = kind.
hostile() {
	python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
path, kind = sys.argv[1], sys.argv[2]
t = tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT)
def add(name, type=tarfile.REGTYPE, data=b"x", link=""):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = link; i.mode = 0o644
    if type == tarfile.REGTYPE:
        i.size = len(data); t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
add("./", tarfile.DIRTYPE)
add("./ok.txt")
if kind == "traversal": add("./../escaped.txt")
if kind == "absolute": add(sys.argv[1] + ".abs")
if kind == "symlink-out-write":
    add("./out", tarfile.SYMTYPE, link="/etc"); add("./out/evil.txt")
if kind == "symlink-then-write":
    add("./sub", tarfile.DIRTYPE); add("./ln", tarfile.SYMTYPE, link="sub"); add("./ln/evil.txt")
if kind == "hardlink-out": add("./hl", tarfile.LNKTYPE, link="../outside.txt")
if kind == "device": add("./dev", tarfile.CHRTYPE)
if kind == "fifo": add("./p", tarfile.FIFOTYPE)
if kind == "bomb":
    add("./zeros1", data=bytes(700 * 1024)); add("./zeros2", data=bytes(700 * 1024))
# what stays inside but extraction would fail on halfway
if kind == "hardlink-missing": add("./hl", tarfile.LNKTYPE, link="./nowhere")
if kind == "hardlink-self": add("./hl", tarfile.LNKTYPE, link="./hl")
if kind == "hardlink-dir":
    add("./d", tarfile.DIRTYPE); add("./hl", tarfile.LNKTYPE, link="./d")
if kind == "file-over-dir":
    add("./d", tarfile.DIRTYPE); add("./d/x"); add("./d")
if kind == "under-a-file": add("./f"); add("./f/x")
if kind == "long-name": add("./" + "n" * 256)
t.close()
PY
}

# (-h, bad flags and names: tests/usage-errors.txt)

@test "a sandbox that does not exist: status 101" {
	run sbx-restore ghost
	assert_status 101
	assert_contains "sbx-restore: unable to restore sandbox ghost: sandbox ghost not found"
}

@test "no backup: an error saying what is missing (exit 101); with -optional a fresh start, restored null" {
	sbx-create demo >/dev/null
	run --separate-stderr sbx-restore demo
	assert_status 101
	[ -z "$output" ]
	[ "$stderr" = "sbx-restore: unable to restore sandbox demo: session demo has no backup in $HOME/.local/sandboxed-tools/demo/fs (to restore another backup, name it with -from FILE)" ]
	run sbx-restore -optional demo
	assert_status 0
	[ "$output" = '{"restored":null,"files":0,"bytes":0,"skipped_corrupt":[],"skipped_links":[]}' ]
}

@test "round trip through delete and create keeps names, types, modes, mtimes, links" {
	sbx-create demo >/dev/null
	populate demo
	before=$(listing demo)
	run sbx-snapshot demo
	assert_status 0
	assert_json '.files == 14'
	sbx-delete demo >/dev/null
	sbx-create demo >/dev/null
	run sbx-restore demo
	assert_status 0
	assert_json '.files == 14 and .skipped_corrupt == []'
	assert_json ".restored == \"$(ls "$FS"/backup-*.tar.gz)\""
	after=$(listing demo)
	[ "$before" = "$after" ]
	# Restored files belong to the sandbox: it can change them.
	sbx-exec -raw demo -- sh -c 'echo changed > ~/a/b/c/deep.txt && rm ~/empty'
}

@test "round trip with zstd, and through tar inside the sandbox (-homedir)" {
	sbx-create demo >/dev/null
	populate demo
	populate demo /tmp/work
	before=$(listing demo)
	beforew=$(listing demo /tmp/work)
	sbx-snapshot -compress zstd demo >/dev/null
	sbx-snapshot -homedir /tmp/work demo >/dev/null
	sbx-delete demo >/dev/null
	sbx-create demo >/dev/null
	run sbx-restore -from "$(ls "$FS"/backup-*.tar.zst)" demo
	assert_status 0
	[ "$(listing demo)" = "$before" ]
	sbx-exec -raw demo -- mkdir /tmp/work
	run sbx-restore -homedir /tmp/work -from "$(ls "$FS"/backup-*.tar.gz)" demo
	assert_status 0
	[ "$(listing demo /tmp/work)" = "$beforew" ]
	run sbx-restore -homedir /tmp/work -from "$(ls "$FS"/backup-*.tar.zst)" demo
	assert_status 0
	# On top of an existing tree GNU tar may touch a directory after setting its time (it
	# replaces links through placeholders): compare all but directory times there.
	local nodirtime='s/^(.*\|d\|[0-7]+)\|[0-9]+$/\1/'
	[ "$(listing demo /tmp/work | sed -E "$nodirtime")" = "$(printf '%s\n' "$before" | sed -E "$nodirtime")" ]
}

@test "a backup made by GNU tar -zcf - -C home . (upstream's command) restores" {
	sbx-create demo >/dev/null
	mkdir -p "$BATS_TEST_TMPDIR/src/dir" "$FS"
	echo upstream >"$BATS_TEST_TMPDIR/src/dir/file.txt"
	ln -s dir/file.txt "$BATS_TEST_TMPDIR/src/link"
	tar -zcf - -C "$BATS_TEST_TMPDIR/src" . >"$FS/backup-20250101T120000.tar.gz"
	run sbx-restore demo
	assert_status 0
	assert_json '.restored | endswith("backup-20250101T120000.tar.gz")'
	assert_json '.files == 3'
	run sbx-exec -raw demo -- sh -c 'cat ~/link'
	[ "$output" = upstream ]
}

@test "a corrupt newest backup falls back to the previous good one, with a warning" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo one > ~/v.txt'
	sbx-snapshot demo >/dev/null
	good=$(ls "$FS"/backup-*.tar.gz)
	mv "$good" "$FS/backup-20200101T000000.tar.gz"
	sed 's/backup-.*/backup-20200101T000000.tar.gz/' "$good.sha256" >"$FS/backup-20200101T000000.tar.gz.sha256"
	rm "$good.sha256"
	sbx-exec -raw demo -- sh -c 'echo two > ~/v.txt'
	sbx-snapshot demo >/dev/null
	newest=$(ls "$FS"/backup-*.tar.gz | tail -1)
	# Flip bytes in the middle: the checksum no longer matches.
	printf 'XXXX' | dd of="$newest" bs=1 seek=30 conv=notrunc 2>/dev/null
	sbx-exec -raw demo -- sh -c 'rm ~/v.txt'
	run --separate-stderr sbx-restore demo
	assert_status 0
	[[ $stderr == *"sbx-restore: warning: skipping backup $newest: corrupt archive"* ]]
	assert_json ".skipped_corrupt == [\"$newest\"]"
	assert_json '.restored | endswith("backup-20200101T000000.tar.gz")'
	run sbx-exec -raw demo -- sh -c 'cat ~/v.txt'
	[ "$output" = one ]
	# An intact archive whose sidecar disagrees is checked by its own checksums and restored:
	# the sidecar is what broke.
	sed -i 's/^./0/' "$newest.sha256"
	cp "$FS/backup-20200101T000000.tar.gz" "$newest"
	sed -i 's/^./f/' "$newest.sha256"
	run --separate-stderr sbx-restore demo
	assert_status 0
	[[ $stderr == *"warning: the sidecar of $newest is wrong; its archive checked out by its own checksums"* ]]
	assert_json ".restored == \"$newest\""
	# ...and one whose gzip CRC is damaged as well is skipped
	s=$(stat -c %s "$newest")
	printf '\377\377' | dd of="$newest" bs=1 seek=$((s - 8)) conv=notrunc 2>/dev/null
	run --separate-stderr sbx-restore demo
	assert_status 0
	[[ $stderr == *"skipping backup $newest: checksum mismatch (sidecar f"*"gzip stream is corrupt"* ]]
	# A truncated newest backup without sidecar falls back too.
	head -c 100 "$FS/backup-20200101T000000.tar.gz" >"$FS/backup-20991231T235959.tar.gz"
	run --separate-stderr sbx-restore demo
	assert_status 0
	[[ $stderr == *"skipping backup $FS/backup-20991231T235959.tar.gz: corrupt archive"* ]]
	assert_json '.skipped_corrupt | length == 2'
}

@test "all backups corrupt: an error, not a fresh start" {
	sbx-create demo >/dev/null
	mkdir -p "$FS"
	printf 'junk' >"$FS/backup-20200101T000000.tar.gz"
	printf 'junk' >"$FS/backup-20200102T000000.tar.zst"
	run sbx-restore demo
	assert_status 111
	assert_contains "none of the 2 backups"
}

@test "-from a corrupt file fails without falling back; a file that is no archive is 100, a missing one 101" {
	sbx-create demo >/dev/null
	printf 'hello\n' | gzip | head -c 12 >"$BATS_TEST_TMPDIR/cut.tar.gz"
	run sbx-restore -from "$BATS_TEST_TMPDIR/cut.tar.gz" demo
	assert_status 111
	assert_contains "corrupt archive"
	printf 'junk' >"$BATS_TEST_TMPDIR/junk.tar.gz"
	run --separate-stderr sbx-restore -from "$BATS_TEST_TMPDIR/junk.tar.gz" demo
	assert_status 100
	[ "$stderr" = "sbx-restore: unable to restore sandbox demo: $BATS_TEST_TMPDIR/junk.tar.gz is not a backup (a tar archive, gzip- or zstd-compressed)" ]
	run sbx-restore -from /etc/passwd demo
	assert_status 100
	assert_contains "/etc/passwd is not a backup"
	run sbx-restore -from "$BATS_TEST_TMPDIR/missing.tar.gz" demo
	assert_status 101
	assert_contains "missing.tar.gz: no such file"
}

@test "hostile archives are refused, naming the entry, and the home is untouched" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo mine > ~/keep.txt'
	echo outside >"$BATS_TEST_TMPDIR/outside.txt"
	before=$(sbx-exec -raw demo -- sh -c 'cd ~ && find . -printf "%p %s %T@\n" | sort')
	for kind in traversal absolute symlink-out-write symlink-then-write hardlink-out device fifo bomb \
		hardlink-missing hardlink-self hardlink-dir file-over-dir under-a-file long-name; do
		hostile "$BATS_TEST_TMPDIR/$kind.tar.gz" "$kind"
		for how in "" "-homedir /home/clawtainer"; do
			run sbx-restore $how -max-size 1M -from "$BATS_TEST_TMPDIR/$kind.tar.gz" demo
			assert_status 111
			case $kind in
			traversal) assert_contains 'refusing entry "./../escaped.txt": ".." path component' ;;
			absolute) assert_contains "absolute path" ;;
			symlink-out-write) assert_contains 'refusing entry "./out/evil.txt": it goes through the symlink "./out"' ;;
			symlink-then-write) assert_contains 'refusing entry "./ln/evil.txt": it goes through the symlink "./ln"' ;;
			hardlink-out) assert_contains 'refusing entry "./hl": hard link target is outside' ;;
			device) assert_contains 'refusing entry "./dev": device node' ;;
			fifo) assert_contains 'refusing entry "./p": fifo' ;;
			bomb) assert_contains "expands beyond the limit of 1048576 bytes" ;;
			hardlink-missing) assert_contains 'refusing entry "./hl": hard link target "./nowhere" is not an earlier file of the archive' ;;
			hardlink-self) assert_contains 'refusing entry "./hl": hard link target "./hl" is not an earlier file of the archive' ;;
			hardlink-dir) assert_contains 'refusing entry "./hl": hard link to a directory' ;;
			file-over-dir) assert_contains 'refusing entry "./d": it replaces a directory of the archive' ;;
			under-a-file) assert_contains 'refusing entry "./f/x": it goes through the file "./f" of the archive' ;;
			long-name) assert_contains "a name component longer than 255 bytes" ;;
			esac
			[ ! -e "$FS/.restore-incomplete" ]
			after=$(sbx-exec -raw demo -- sh -c 'cd ~ && find . -printf "%p %s %T@\n" | sort')
			[ "$before" = "$after" ]
		done
	done
	[ "$(cat "$BATS_TEST_TMPDIR/outside.txt")" = outside ]
	[ ! -e "$BATS_TEST_TMPDIR/escaped.txt" ]
	# The same bomb passes under the default limit.
	run sbx-restore -from "$BATS_TEST_TMPDIR/bomb.tar.gz" demo
	assert_status 0
	assert_json '.files == 3'
}

@test "backups restore with GNU tar too: ./ entries, nothing outside" {
	sbx-create demo >/dev/null
	populate demo
	sbx-snapshot demo >/dev/null
	mkdir "$BATS_TEST_TMPDIR/x"
	tar -zxf "$(ls "$FS"/backup-*.tar.gz)" -C "$BATS_TEST_TMPDIR/x"
	[ "$(cat "$BATS_TEST_TMPDIR/x/a/b/c/deep.txt")" = deep ]
	[ "$(readlink "$BATS_TEST_TMPDIR/x/link")" = a/b ]
	run --separate-stderr tar -tzf "$(ls "$FS"/backup-*.tar.gz)"
	assert_status 0
	[ -z "$stderr" ]
	[ "${lines[0]}" = ./ ]
	for l in "${lines[@]}"; do [[ $l == ./* ]]; done
}

# --- the kubernetes backend (kube_up in snapshot.bash) ---

@test "kubernetes: round trip over v5 and v4 exec (no stdin close on v4), gzip and zstd" {
	kube_up
	sbx-create k1 >/dev/null
	sbx-exec -raw k1 -- sh -c 'mkdir -p ~/d && head -c 3000000 /dev/urandom > ~/d/big.bin && echo v > ~/v.txt && chmod 640 ~/v.txt && ln -s d ~/l'
	want=$(sbx-exec -raw k1 -- sh -c 'cd ~ && sha256sum d/big.bin v.txt && stat -c %a v.txt && readlink l')
	sbx-snapshot k1 >/dev/null
	sbx-snapshot -compress zstd k1 >/dev/null
	for proto in v5 v4; do
		for f in "$FS"/backup-*.tar.gz "$FS"/backup-*.tar.zst; do
			sbx-delete k1 >/dev/null
			sbx-create k1 >/dev/null
			run env SBX_KUBE_EXEC_PROTOCOL=$proto sbx-restore -from "$f" k1
			assert_status 0
			assert_json '.files == 4'
			[ "$(sbx-exec -raw k1 -- sh -c 'cd ~ && sha256sum d/big.bin v.txt && stat -c %a v.txt && readlink l')" = "$want" ]
		done
	done
	# Without -from: the newest backup, found in the session's directory.
	run sbx-restore k1
	assert_status 0
	assert_json '.restored | endswith(".tar.zst")'
}

# A home with a python venv: links out of the home are kept by snapshot (never followed) and
# left out by restore, named on stderr and in "skipped_links"; everything else comes back.
venv_round_trip() {	# $1 = sandbox
	sbx-exec -raw "$1" -- sh -c 'mkdir -p ~/venv/bin && ln -s /usr/bin/python3 ~/venv/bin/python &&
		ln -s python ~/venv/bin/python3 && ln -s ../../../etc ~/venv/up && echo keep > ~/venv/pyvenv.cfg'
	run sbx-snapshot "$1"
	assert_status 0
	path=$(printf '%s\n' "$output" | jq -r .path)
	tar -tvzf "$path" | grep -q -- '-> /usr/bin/python3'
	sbx-delete "$1" >/dev/null
	sbx-create "$1" >/dev/null
	run --separate-stderr sbx-restore "$1"
	assert_status 0
	assert_json '.skipped_links == ["./venv/bin/python", "./venv/up"] or .skipped_links == ["./venv/up", "./venv/bin/python"]'
	[[ "$stderr" == *"sbx-restore: warning: left out 2 symlinks pointing outside the home: ./venv/"* ]]
	run sbx-exec -raw "$1" -- sh -c 'cd ~/venv && cat pyvenv.cfg && readlink bin/python3 && ls -A bin up 2>&1'
	assert_contains $'keep\npython\n'
	assert_contains "cannot access 'up'"
	assert_contains $'bin:\npython3'
	[[ "$output" != *$'bin:\npython\n'* ]]
}

@test "a home with a python venv: snapshot keeps links out of the home, restore leaves them out and names them" {
	sbx-create demo >/dev/null
	venv_round_trip demo
}

@test "kubernetes: a home with a python venv round-trips, links out of the home left out" {
	kube_up
	FS="$HOME/.local/sandboxed-tools/k1/fs"
	sbx-create k1 >/dev/null
	venv_round_trip k1
}

@test "kubernetes: hostile archives are refused before anything reaches the pod" {
	kube_up
	sbx-create k1 >/dev/null
	for kind in traversal symlink-out-write device hardlink-missing file-over-dir; do
		hostile "$BATS_TEST_TMPDIR/$kind.tar.gz" "$kind"
		run sbx-restore -from "$BATS_TEST_TMPDIR/$kind.tar.gz" k1
		assert_status 111
		assert_contains "refusing entry"
	done
	run sbx-exec -raw k1 -- sh -c 'ls -A ~ | wc -l'
	[ "$output" = 0 ]
}

# ln -s /etc/passwd s; ln s h: a hard link to a symlink that restore leaves out. A backup sbx
# wrote must restore: the link's other name is left out with it, nothing fails halfway.
hardlinked_symlinks() {	# $1 = sandbox
	sbx-exec -raw "$1" -- sh -c 'cd ~ && echo f > f && ln -s /etc/passwd s && ln s h &&
		ln -s f in && ln in in2'
	run sbx-snapshot "$1"
	assert_status 0
	sbx-delete "$1" >/dev/null
	sbx-create "$1" >/dev/null
	run --separate-stderr sbx-restore "$1"
	assert_status 0
	assert_json '(.skipped_links | sort) == ["./h", "./s"]'
	[ ! -e "$FS/.restore-incomplete" ]
	run sbx-exec -raw "$1" -- sh -c 'cd ~ && cat f in2 && readlink in in2 && ls -A'
	[ "$output" = "$(printf 'f\nf\nf\nf\nf\nin\nin2')" ]
	# and the next snapshot is not refused
	run sbx-snapshot "$1"
	assert_status 0
}

@test "a hard link to a symlink that leads out (ln -s /etc/passwd s; ln s h) snapshots and restores, both left out" {
	sbx-create demo >/dev/null
	hardlinked_symlinks demo
	# the snapshot stores a symlink's other names as symlinks, never as a hard link to it
	run tar -tvzf "$(ls "$FS"/backup-*.tar.gz | tail -1)"
	[[ "$output" == *"./in2 -> f"* ]]
	[[ "$output" != *" link to "* ]]
}

@test "kubernetes: a hard link to a symlink that leads out, as tar in the pod stores it, restores" {
	kube_up
	sbx-create k1 >/dev/null
	hardlinked_symlinks k1
	# tar in the pod did store hard links: restore left the one to s out, with s
	run tar -tvzf "$(ls "$FS"/backup-*.tar.gz | head -1)"
	assert_contains " link to "
}

@test "man page examples run" {
	run_man_examples sbx-restore
}
