#!/usr/bin/env bats
# sbx-snapshot: backups of a local sandbox's home, upstream's names and modes, sidecars,
# retention, prune-only mode beside a running snapshot, interrupted snapshots.

load helpers
load snapshot
bats_require_minimum_version 1.5.0

setup() {
	setup_sbx_env
	FS="$HOME/.local/sandboxed-tools/demo/fs"
	SRC="$BATS_TEST_TMPDIR/src"
	mkdir -p "$SRC/d" && echo data >"$SRC/d/f"
}

teardown() {
	kube_down
	[ -z "${BG:-}" ] || kill -9 "$BG" 2>/dev/null || true
	teardown_sbx_env
}

# A backup of the current home under an older name (with its sidecar renamed to match).
fake_older() {	# $1 = time stamp
	local src
	src=$(ls "$FS"/backup-*.tar.gz | tail -1)
	cp "$src" "$FS/backup-$1.tar.gz"
	sed "s/backup-.*/backup-$1.tar.gz/" "$src.sha256" >"$FS/backup-$1.tar.gz.sha256"
}

# Fills the home with ~40 MB of incompressible data so a snapshot takes a moment.
big_home() {
	sbx-exec -raw demo -- sh -c 'head -c 40000000 /dev/urandom > ~/big.bin'
}

# Waits (bounded) until a snapshot is writing its temporary file (holding no lock by then).
tmp_written() {
	local f
	for f in "$FS"/*.tmp; do [ -s "$f" ] && return 0; done
	return 1
}
wait_tmp() { wait_until -t 20 tmp_written; }

# (-h, bad flags and names: tests/usage-errors.txt)

@test "a sandbox that does not exist: status 101, nothing written" {
	run sbx-snapshot ghost
	assert_status 101
	assert_contains "sbx-snapshot: unable to snapshot sandbox ghost: sandbox ghost not found"
	[ -z "$(ls -A "$HOME/.local/sandboxed-tools/ghost/fs" 2>/dev/null)" ]
}

@test "writes upstream's backup name and modes, ./ entries, and a sidecar sha256sum accepts" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'mkdir -p ~/src && echo hello > ~/src/a.txt'
	run sbx-snapshot demo
	assert_status 0
	local path
	path=$(printf '%s' "$output" | jq -r .path)
	# upstream's stamp, then the nanoseconds: unique, and after upstream's same second
	[[ $(basename "$path") =~ ^backup-[0-9]{8}T[0-9]{6}_[0-9]{9}\.tar\.gz$ ]]
	[ "$(dirname "$path")" = "$FS" ]
	# The name is the local time: within a minute of what date says in TZ.
	local stamp now
	stamp=$(basename "$path" | cut -c8-20)
	now=$(TZ=${TZ:-} date +%Y%m%dT%H%M)
	[ "${stamp:0:13}" = "${now:0:13}" ] || [ "${stamp:0:11}" = "${now:0:11}" ]
	[ "$(stat -c %a "$FS")" = 700 ]
	[ "$(stat -c %a "$path")" = 600 ]
	assert_json ".bytes == $(stat -c %s "$path")"
	assert_json '.files == 2 and .pruned == []'
	assert_json ".sha256 == \"$(sha256sum "$path" | cut -d' ' -f1)\""
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	run tar -tzf "$path"
	assert_status 0
	[ "${lines[0]}" = "./" ]
	assert_contains "./src/a.txt"
	[ -z "$(ls "$FS" | grep tmp)" ]
}

@test "TZ decides the time stamp (local time, as upstream)" {
	sbx-create demo >/dev/null
	run env TZ=UTC-14 sbx-snapshot demo
	assert_status 0
	local stamp
	stamp=$(basename "$(printf '%s' "$output" | jq -r .path)" | cut -c8-20)
	[ "${stamp:0:11}" = "$(TZ=UTC-14 date +%Y%m%dT%H)" ] || [ "${stamp:0:9}" = "$(TZ=UTC-14 date +%Y%m%d)" ]
}

@test "-compress zstd writes a .tar.zst that zstd and tar read" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo z > ~/z.txt'
	run sbx-snapshot -compress zstd demo
	assert_status 0
	local path
	path=$(printf '%s' "$output" | jq -r .path)
	[[ $path == *.tar.zst ]]
	zstd -qt "$path"
	run tar --zstd -tf "$path"
	assert_contains "./z.txt"
}

@test "-homedir archives a directory inside the sandbox with tar, checked as it streams" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'mkdir -p /tmp/wdir/d && echo w > /tmp/wdir/d/w.txt'
	run sbx-snapshot -homedir /tmp/wdir demo
	assert_status 0
	assert_json '.files == 2'
	run tar -tzf "$(printf '%s' "$output" | jq -r .path)"
	assert_contains "./d/w.txt"
	run sbx-snapshot -homedir /tmp/nonexistent demo
	assert_status 111
	assert_contains "snapshot failed with exit code 2"
	[ "$(ls "$FS" | grep -c 'tar.gz$')" = 1 ]
}

@test "a home with a link pointing outside is snapshotted with the link as it is, never followed" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'ln -s /etc ~/etc-link && echo x > ~/f'
	run sbx-snapshot demo
	assert_status 0
	assert_json '.files == 2'
	tar -tvzf "$(printf '%s\n' "$output" | jq -r .path)" >"$BATS_TEST_TMPDIR/list"
	grep -q -- './etc-link -> /etc$' "$BATS_TEST_TMPDIR/list"
	run ! grep -q passwd "$BATS_TEST_TMPDIR/list"
	run sbx-snapshot -homedir /home/clawtainer demo
	assert_status 0
	assert_json '.files == 2'
}

@test "entries the sandbox may not read are left out with a warning, the rest is kept" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'cd ~ && echo a > ok && echo s > mine && chmod 000 mine'
	# what no id of the sandbox's owns and none may read (the host's root's, mode 000)
	home=$XDG_STATE_HOME/sbx/default/demo/home
	echo s >"$home/secret" && chown 0:0 "$home/secret" && chmod 000 "$home/secret"
	mkdir "$home/closed" && echo x >"$home/closed/f" && chown -R 0:0 "$home/closed" && chmod 000 "$home/closed"
	run --separate-stderr sbx-snapshot demo
	assert_status 0
	[[ $stderr == *"warning: 2 entries left out"* ]]
	run tar -tzf "$(printf '%s' "$output" | jq -r .path)"
	assert_contains "./ok"
	[[ $output != *secret* ]]
	# the sandbox's root reads its own files whatever their mode, and so does its backup
	assert_contains "./mine"
}

@test "a root's sandbox's files of any id of its range are backed up with the owners it sees, and restored to its root" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'cd ~ && mkdir d && echo s >d/secret && chmod 600 d/secret &&
		chmod 700 d && chown -R 1000:1000 d && echo top >top && chown 65535:4242 top'
	run --separate-stderr sbx-snapshot demo
	assert_status 0
	[ -z "$stderr" ]
	backup=$(printf '%s' "$output" | jq -r .path)
	run tar -tvzf "$backup" --numeric-owner
	assert_contains " 0/0 "
	[[ $output == *" 1000/1000 "*"./d/secret"* ]]
	[[ $output == *" 65535/4242 "*"./top"* ]]
	# no host id in the backup: every owner is one of the sandbox's own
	[ -z "$(printf '%s\n' "$output" | awk '{ split($2, o, "/"); if (o[1] > 65535 || o[2] > 65535) print }')" ]
	[ "$(tar -xOzf "$backup" ./d/secret)" = s ]
	sbx-exec -raw demo -- rm -rf d top
	sbx-restore demo >/dev/null
	run sbx-exec -raw demo -- sh -c 'cat d/secret top; stat -c %u:%g d d/secret top'
	[ "$output" = "$(printf 's\ntop\n0:0\n0:0\n0:0')" ]
}

@test "retention keeps exactly the newest -keep backups, with their sidecars" {
	sbx-create demo >/dev/null
	sbx-snapshot demo >/dev/null
	for t in 20200101T000001 20200101T000002 20200101T000003 20200101T000004; do fake_older $t; done
	find "$FS" -name "backup-*" ! -name "backup-2020*" -delete	# four old ones; the next makes five
	run sbx-snapshot -keep 3 demo
	assert_status 0
	assert_json '.pruned | length == 2'
	assert_json '.pruned[0] | endswith("backup-20200101T000001.tar.gz")'
	assert_json '.pruned[1] | endswith("backup-20200101T000002.tar.gz")'
	[ "$(ls "$FS" | grep -c '\.tar\.gz$')" = 3 ]
	[ "$(ls "$FS" | grep -c '\.sha256$')" = 3 ]
	[ -e "$FS/backup-20200101T000004.tar.gz" ]
	# The default is 5.
	for t in 20190101T000001 20190101T000002 20190101T000003; do fake_older $t; done
	run sbx-snapshot demo
	assert_status 0
	[ "$(ls "$FS" | grep -c '\.tar\.gz$')" = 5 ]
}

@test "-prune works without a sandbox, for one session or -all" {
	mkdir -p "$FS" "$HOME/.local/sandboxed-tools/other/fs" "$HOME/.local/sandboxed-tools/junk-dir"
	for t in 20200101T000001 20200101T000002 20200101T000003; do
		tar -zcf "$FS/backup-$t.tar.gz" -C "$SRC" .
		cp "$FS/backup-$t.tar.gz" "$HOME/.local/sandboxed-tools/other/fs/"
	done
	run sbx-snapshot -prune -keep 2 demo
	assert_status 0
	assert_json '.session == "demo" and (.pruned | length == 1)'
	[ ! -e "$FS/backup-20200101T000001.tar.gz" ]
	run sbx-snapshot -prune -keep 1 -all
	assert_status 0
	[ "${#lines[@]}" = 2 ]
	[ "$(ls "$FS" | grep -c 'tar.gz$')" = 1 ]
	[ "$(ls "$HOME/.local/sandboxed-tools/other/fs" | grep -c 'tar.gz$')" = 1 ]
	[ -e "$FS/backup-20200101T000003.tar.gz" ]
}

@test "-prune never removes the newest good backup, even when the newer ones are corrupt" {
	mkdir -p "$FS"
	for t in 20200101T000001 20200101T000002 20200101T000003; do
		tar -zcf "$FS/backup-$t.tar.gz" -C "$SRC" .
	done
	printf 'garbage' >"$FS/backup-20200101T000003.tar.gz"
	run sbx-snapshot -prune -keep 1 demo
	assert_status 0
	[ -e "$FS/backup-20200101T000003.tar.gz" ]
	[ -e "$FS/backup-20200101T000002.tar.gz" ]
	[ ! -e "$FS/backup-20200101T000001.tar.gz" ]
}

@test "prune-only mode while a snapshot is being written leaves it alone" {
	sbx-create demo >/dev/null
	sbx-snapshot demo >/dev/null
	fake_older 20200101T000001
	big_home
	sbx-snapshot demo >"$BATS_TEST_TMPDIR/out" 2>&1 &
	BG=$!
	wait_tmp
	kill -STOP "$BG"
	local tmp
	tmp=$(ls "$FS"/*.tmp)
	touch -d '1 hour ago' "$tmp"	# old: only its lock protects it now
	run sbx-snapshot -prune -keep 1 demo
	assert_status 0
	[ -e "$tmp" ]
	[ ! -e "$FS/backup-20200101T000001.tar.gz" ]
	kill -CONT "$BG"
	wait "$BG"
	BG=
	run cat "$BATS_TEST_TMPDIR/out"
	assert_json '.files == 1'
	[ -z "$(ls "$FS" | grep tmp)" ]
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
}

@test "concurrent snapshots of one session all succeed and leave matching sidecars" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'head -c 3000000 /dev/urandom > ~/r.bin'
	local pids=() p
	for p in 1 2 3 4; do
		sbx-snapshot demo >"$BATS_TEST_TMPDIR/c$p" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	for p in 1 2 3 4; do jq -e .sha256 "$BATS_TEST_TMPDIR/c$p" >/dev/null; done
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	[ "$(ls "$FS" | grep -c 'tar.gz$')" = "$(ls "$FS" | grep -c 'sha256$')" ]
	[ -z "$(ls "$FS" | grep tmp)" ]
}

@test "kill -9 during a snapshot leaves no final file; the earlier backup stays good" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo before > ~/state.txt'
	sbx-snapshot demo >/dev/null
	fake_older 20200101T000001
	find "$FS" -name "backup-*" ! -name "backup-2020*" -delete
	big_home
	sbx-snapshot demo >/dev/null 2>&1 &
	BG=$!
	wait_tmp
	kill -9 "$BG"
	wait "$BG" || true
	BG=
	[ "$(ls "$FS" | grep -c 'tar.gz$')" = 1 ]
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	# The dead writer's temporary goes with the next prune once it is stale.
	touch -d '1 hour ago' "$FS"/*.tmp
	sbx-snapshot -prune demo >/dev/null
	[ -z "$(ls "$FS" | grep tmp)" ]
	sbx-delete demo >/dev/null
	sbx-create demo >/dev/null
	run sbx-restore demo
	assert_status 0
	assert_json '.restored | endswith("backup-20200101T000001.tar.gz")'
	run sbx-exec -raw demo -- sh -c 'cat ~/state.txt'
	[ "$output" = before ]
}

@test "SIGTERM or SIGINT during a snapshot: 128+n, no final file, no temporary" {
	sbx-create demo >/dev/null
	big_home
	for sig in TERM INT; do
		sbx-snapshot demo >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
		BG=$!
		wait_tmp
		kill -$sig "$BG"
		local st=0
		wait "$BG" || st=$?
		BG=
		[ "$st" = $((128 + $(kill -l $sig))) ]
		grep -q "interrupted; no backup written" "$BATS_TEST_TMPDIR/err"
		[ -z "$(ls -A "$FS" | grep backup-)" ]
	done
}

@test "progress goes to stderr only when it is a terminal" {
	sbx-create demo >/dev/null
	run sbx-snapshot demo
	assert_status 0
	[[ $output != *"MB/s"* ]]
	run script -qec "sbx-snapshot demo 2>&1 >/dev/null" /dev/null
	assert_status 0
	assert_contains "MB written"
	assert_contains "MB/s"
}

# --- the kubernetes backend (kube_up in snapshot.bash) ---

@test "kubernetes: tar runs in the pod, the stream is checked into a backup with a sidecar" {
	kube_up
	sbx-create k1 >/dev/null
	sbx-exec -raw k1 -- sh -c 'mkdir -p ~/d && echo kube > ~/d/f.txt && ln -s d/f.txt ~/l'
	run sbx-snapshot k1
	assert_status 0
	assert_json '.files == 3 and (.path | endswith(".tar.gz"))'
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	run tar -tzf "$(printf '%s' "$output" | jq -r .path)"
	assert_contains "./d/f.txt"
	run sbx-snapshot -compress zstd k1
	assert_status 0
	zstd -qt "$(printf '%s' "$output" | jq -r .path)"
	# a link out of the home is kept as a link, never followed
	sbx-exec -raw k1 -- sh -c 'ln -s /etc ~/out'
	run sbx-snapshot k1
	assert_status 0
	assert_json '.files == 4'
	tar -tvzf "$(printf '%s' "$output" | jq -r .path)" | grep -q -- './out -> /etc$'
	run sbx-snapshot -homedir /nonexistent k1
	assert_status 111
	assert_contains "snapshot failed with exit code 2: tar:"
}

@test "kubernetes: an exec cut mid-stream leaves no backup and the earlier one good" {
	kube_up
	sbx-create k1 >/dev/null
	sbx-snapshot k1 >/dev/null
	sbx-exec -raw k1 -- sh -c 'head -c 2000000 /dev/urandom > ~/big.bin'
	kts_ctl faults '{"exec_drop_after_bytes": 100000}' >/dev/null
	before=$(ls "$FS")
	run sbx-snapshot k1
	assert_status 111
	assert_contains "failed to execute snapshot"
	[ "$(ls "$FS")" = "$before" ]
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
}

@test "man page EXAMPLES run as written, and so does the crontab line" {
	run_man_examples sbx-snapshot
	[ "$(ls "$FS" | grep -c 'backup-.*\.tar\.gz$')" = 1 ]
	[ "$(ls "$FS" | grep -c 'backup-.*\.tar\.zst$')" = 1 ]
	local line
	line=$(man_examples sbx-snapshot | sed -n 's|^# \*/30 \* \* \* \* ||p')
	[ "$line" = "sbx-snapshot -prune -keep 5 -all" ]
	run sh -c "$line"
	assert_status 0
	assert_json '.session == "demo" and .pruned == []'
}

@test "-backup-budget: the oldest go first, never the newest; one backup beyond it fails and leaves the rest" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'head -c 300000 /dev/urandom > ~/r'
	for i in 1 2 3 4; do sbx-snapshot -backup-budget 700K demo >"$BATS_TEST_TMPDIR/s$i"; done
	# ~300 KB each: two fit in 700K
	[ "$(ls "$FS" | grep -c '\.tar\.gz$')" = 2 ]
	[ -e "$(jq -r .path "$BATS_TEST_TMPDIR/s4")" ]
	[ -e "$(jq -r .path "$BATS_TEST_TMPDIR/s3")" ]
	before=$(ls "$FS")
	run env SANDBOX_BACKUP_BUDGET=100K sbx-snapshot demo
	assert_status 111
	assert_contains "this backup alone is larger than the session's backup budget of 102400 bytes"
	[ "$(ls "$FS")" = "$before" ]
}

@test "a new sandbox of a session with backups owes a restore: snapshot refused until sbx-restore, or -fresh" {
	sbx-create demo >/dev/null
	sbx-exec -raw demo -- sh -c 'echo kept > ~/k'
	sbx-snapshot demo >/dev/null
	sbx-delete demo >/dev/null
	sbx-create demo >/dev/null
	[ -e "$FS/.restore-owed" ]
	run sbx-snapshot demo
	assert_status 111
	assert_contains "the home of sandbox demo owes a restore"
	assert_contains "sbx-restore -fresh demo"
	# a create that reuses the sandbox keeps the mark as it is
	sbx-create demo >/dev/null
	[ -e "$FS/.restore-owed" ]
	run sbx-restore -fresh demo
	assert_status 0
	assert_json '.restored == null'
	[ ! -e "$FS/.restore-owed" ]
	run sbx-snapshot demo
	assert_status 0
	# restored by choice: a reuse after that owes nothing
	sbx-create demo >/dev/null
	[ ! -e "$FS/.restore-owed" ]
}
