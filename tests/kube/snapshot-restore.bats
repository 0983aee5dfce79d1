#!/usr/bin/env bats
# snapshot-restore.bats — sbx-snapshot and sbx-restore on -backend kubernetes, against
# scripts/kube-test-server (from the kube branch), started by each test on 127.0.0.1.
# PENDING: it needs that server, so tests/run does not pick it up from here; once the kube
# branch is on main, move these tests into tests/sbx-snapshot.bats and tests/sbx-restore.bats
# (or this file to tests/). Verified passing against the kube branch on 2026-11-30.

bats_require_minimum_version 1.5.0
load ../helpers

setup() {
	export SBX_TOP=${SBX_TOP:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	setup_sbx_env
}

teardown() {
	[ -z "${KS_PID:-}" ] || kube_stop
}

# Writes a hostile gzip tar: $1 = file, $2 = kind (traversal only here).
hostile() {
	python3 - "$1" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w:gz", format=tarfile.PAX_FORMAT)
for name, typ in (("./", tarfile.DIRTYPE), ("./ok.txt", tarfile.REGTYPE), ("./../escaped.txt", tarfile.REGTYPE)):
    i = tarfile.TarInfo(name); i.type = typ
    if typ == tarfile.REGTYPE:
        i.size = 1; t.addfile(i, io.BytesIO(b"x"))
    else:
        t.addfile(i)
t.close()
PY
}
# --- the kubernetes backend, against scripts/kube-test-server (started by the test itself) ---

kube_start() {
	KS="$BATS_TEST_TMPDIR/ks"
	mkdir -p "$KS/home" "$KS/state"
	HOME="$KS/home" XDG_STATE_HOME="$KS/state" PATH="$SBX_BIN:$PATH" \
		"$SBX_TOP/scripts/kube-test-server" -kubeconfig "$KS/kc" -ready-delay 100ms >"$KS/log" 2>&1 3>&- &
	KS_PID=$!
	local i
	for i in $(seq 1 300); do
		[ -s "$KS/kc" ] && break
		kill -0 "$KS_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$KS/kc" ] || { cat "$KS/log" >&2; return 1; }
	export KUBECONFIG="$KS/kc" SANDBOX_BACKEND=kubernetes
	FS="$HOME/.local/sandboxed-tools/k1/fs"
}

kube_stop() {
	local n
	for n in $(sbx-list 2>/dev/null | jq -r .name); do sbx-delete "$n" >/dev/null 2>&1 || true; done
	kill "$KS_PID" 2>/dev/null || true
	wait "$KS_PID" 2>/dev/null || true
	KS_PID=
}

@test "kubernetes: tar runs in the pod, the stream is checked into a backup with a sidecar" {
	kube_start
	sbx-create k1 >/dev/null
	sbx-exec -raw k1 -- sh -c 'mkdir -p ~/d && echo kube > ~/d/f.txt && ln -s d/f.txt ~/l'
	run sbx-snapshot k1
	assert_status 0
	assert_json '.files == 3 and (.path | endswith(".tar.gz"))'
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	run sbx-snapshot -compress zstd k1
	assert_status 0
	zstd -qt "$(printf '%s' "$output" | jq -r .path)"
	sbx-exec -raw k1 -- sh -c 'ln -s /etc ~/out'
	run sbx-snapshot k1
	assert_status 111
	assert_contains 'refusing entry "./out"'
	run sbx-snapshot -homedir /nonexistent k1
	assert_status 111
	assert_contains "snapshot failed with exit code 2: tar:"
	kube_stop
}

@test "kubernetes: an exec cut mid-stream leaves no backup and the earlier one good" {
	kube_start
	sbx-create k1 >/dev/null
	sbx-snapshot k1 >/dev/null
	sbx-exec -raw k1 -- sh -c 'head -c 2000000 /dev/urandom > ~/big.bin'
	"$SBX_TOP/scripts/kube-test-server" -kubeconfig "$KS/kc" -ctl faults '{"exec_drop_after_bytes": 100000}' >/dev/null
	before=$(ls "$FS")
	run sbx-snapshot k1
	assert_status 111
	assert_contains "failed to execute snapshot"
	[ "$(ls "$FS")" = "$before" ]
	(cd "$FS" && sha256sum -c --quiet ./*.sha256)
	kube_stop
}
@test "kubernetes: round trip over v5 and v4 exec (no stdin close on v4), gzip and zstd" {
	kube_start
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
	kube_stop
}

@test "kubernetes: hostile archives are refused before anything reaches the pod" {
	kube_start
	sbx-create k1 >/dev/null
	hostile "$BATS_TEST_TMPDIR/t.tar.gz" traversal
	run sbx-restore -from "$BATS_TEST_TMPDIR/t.tar.gz" k1
	assert_status 111
	assert_contains 'refusing entry "./../escaped.txt"'
	run sbx-exec -raw k1 -- sh -c 'ls -A ~ | wc -l'
	[ "$output" = 0 ]
	kube_stop
}
