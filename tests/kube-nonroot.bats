#!/usr/bin/env bats
# kube-nonroot.bats — issue 22: in a pod as sbx makes it (uid/gid 1000, fsGroup 1000, no
# capabilities, no_new_privs, emptyDir volumes owned by root and group 1000 with mode 2777 as
# the kubelet makes them), every tool of both toolsets works, snapshots and restores work, and
# backups move both ways between it and upstream's root pods. The pods are those of
# scripts/kube-test-server -exec-mode pod (root only: commands run on the host as the pod's
# users, its volumes mounted at their paths in a mount namespace of their own).

bats_require_minimum_version 1.5.0
load helpers
load kube/server

H=/home/clawtainer

setup() { kts_setup -exec-mode pod -ready-delay 100ms; }
teardown() { kts_teardown; }

# tool NAME ARGS_JSON [TOOLSET]: one tool call through sbx-tool in sandbox nr; prints content.
tool() {
	jq -cn --arg n "$1" --arg a "$2" '{id: "c1", type: "function", function: {name: $n, arguments: $a}}' |
		sbx-tool -toolset "${3:-geminicli}" nr | jq -r .content
}

@test "the pod runs as uid 1000 with fsGroup 1000, no capabilities, no_new_privs; home and /tmp writable, / not" {
	run sbx-create nr
	assert_status 0
	assert_json '.pod_security == "restricted"'
	run sbx-exec -raw nr -- sh -c 'id -u; id -g; id -G; pwd; grep -E "^(CapEff|CapBnd|NoNewPrivs):" /proc/self/status'
	assert_status 0
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
	[ "${lines[2]}" = 1000 ]
	[ "${lines[3]}" = "$H" ]
	assert_contains "CapEff:	0000000000000000"
	assert_contains "CapBnd:	0000000000000000"
	assert_contains "NoNewPrivs:	1"
	# the home is the kubelet's emptyDir with fsGroup: root-owned, group 1000, setgid, writable
	run sbx-exec -raw nr -- stat -c '%u %g %a' "$H" /tmp
	[ "$output" = "0 1000 2777
0 1000 2777" ]
	run sbx-exec -raw nr -- sh -c 'echo x > rel.txt && echo y > /tmp/t && stat -c "%u %g" rel.txt'
	assert_status 0
	[ "$output" = "1000 1000" ]
	run sbx-exec -raw nr -- sh -c 'touch /usr/x'
	[ "$status" -ne 0 ]
	assert_contains "Permission denied"
}

@test "as uid 1000: the basic tool and the eight geminicli tools work" {
	sbx-create -image geminicli-toolbox:latest nr >/dev/null
	run tool run_command '{"command":"id -u; echo made > made.txt"}' basic
	assert_contains "stdout:
1000"
	assert_contains "exit_code: 0"
	run tool run_shell_command '{"command":"mkdir -p src && printf \"alpha\\nbeta\\n\" > src/a.txt && echo made"}'
	assert_contains "Output: made"
	run tool list_directory "{\"dir_path\":\"$H/src\"}"
	assert_contains "a.txt (11 bytes)"
	run tool read_file '{"file_path":"src/a.txt"}'
	[ "$output" = "alpha
beta" ]
	run tool write_file '{"file_path":"src/b.txt","content":"gamma\n"}'
	assert_contains "Successfully created and wrote to new file: $H/src/b.txt"
	run tool replace '{"file_path":"src/a.txt","instruction":"capitalise","old_string":"beta","new_string":"BETA"}'
	assert_contains "Successfully modified file: $H/src/a.txt (1 replacements)"
	run tool glob '{"pattern":"src/*.txt"}'
	assert_contains 'Found 2 file(s) matching "src/*.txt"'
	run tool grep_search '{"pattern":"BETA"}'
	assert_contains "L2: BETA"
	run tool read_many_files '{"include":["src/b.txt"]}'
	assert_contains "--- $H/src/b.txt ---"
	assert_contains "gamma"
	run sbx-exec -raw nr -- stat -c '%u' src/b.txt
	[ "$output" = 1000 ]
}

@test "as uid 1000: snapshot and restore round trip; the backup's entries are root's, as upstream's are" {
	sbx-create nr >/dev/null
	sbx-exec -raw nr -- sh -c 'mkdir -p d/private && echo secret > d/private/s && chmod 700 d/private && chmod 600 d/private/s && echo top > top.txt'
	run sbx-snapshot nr
	assert_status 0
	backup=$(printf '%s' "$output" | jq -r .path)
	[ -s "$backup" ]
	# every entry root-owned (0/0), so upstream's root pod restores them as its own
	run bash -c "tar -tvzf '$backup' --numeric-owner | awk '{print \$2}' | sort -u"
	[ "$output" = "0/0" ]
	sbx-delete nr
	sbx-create nr >/dev/null
	run sbx-restore nr
	assert_status 0
	run sbx-exec -raw nr -- sh -c 'cat top.txt d/private/s; stat -c "%u %a" d/private d/private/s .'
	assert_status 0
	# (directories inherit the home's setgid bit, as on a kubelet's fsGroup volume)
	[ "$output" = "top
secret
1000 2700
1000 600
0 2777" ]
}

@test "backups move both ways: upstream's root-owned archive restores as uid 1000, ours restores in a root pod as upstream restores" {
	# an archive as upstream's root pod writes it (tar -zcf - -C HOME .), files owned by root
	mkdir -p "$BATS_TEST_TMPDIR/up/cfg"
	echo upstream >"$BATS_TEST_TMPDIR/up/cfg/greeting.txt"
	chmod 700 "$BATS_TEST_TMPDIR/up/cfg"
	chmod 755 "$BATS_TEST_TMPDIR/up"
	tar -zcf "$BATS_TEST_TMPDIR/backup-20260101T000000.tar.gz" --owner=0 --group=0 -C "$BATS_TEST_TMPDIR/up" .
	sbx-create nr >/dev/null
	# upstream's own restore command fails in a non-root pod: the home is not the pod user's
	run bash -c "sbx-exec -raw nr -- tar -zxf - -C $H <'$BATS_TEST_TMPDIR/backup-20260101T000000.tar.gz'"
	[ "$status" -ne 0 ]
	assert_contains "Cannot"
	run sbx-restore -from "$BATS_TEST_TMPDIR/backup-20260101T000000.tar.gz" nr
	assert_status 0
	run sbx-exec -raw nr -- sh -c 'cat cfg/greeting.txt; stat -c "%u %a" cfg cfg/greeting.txt'
	[ "$output" = "upstream
1000 700
1000 644" ]
	# the other way: our backup, restored as upstream restores it (tar -zxf as root), is root's
	sbx-exec -raw nr -- sh -c 'echo ours > mine.txt'
	backup=$(sbx-snapshot nr | jq -r .path)
	sbx-create -run-as-root up >/dev/null
	run bash -c "sbx-exec -raw up -- tar -zxf - -C $H <'$backup'"
	assert_status 0
	run sbx-exec -raw up -- sh -c 'id -u; cat mine.txt cfg/greeting.txt; stat -c "%u %g" mine.txt cfg'
	[ "$output" = "0
ours
upstream
0 0
0 0" ]
}

@test "as uid 1000: sbx-cp puts a directory's contents and a tar stream into the home" {
	sbx-create nr >/dev/null
	mkdir -p "$BATS_TEST_TMPDIR/src/sub"
	echo a >"$BATS_TEST_TMPDIR/src/sub/f"
	run sbx-cp "$BATS_TEST_TMPDIR/src/." nr:.
	assert_status 0
	tar -C "$BATS_TEST_TMPDIR/src" -cf - . | sbx-cp - nr:.
	run sbx-exec -raw nr -- sh -c 'cat sub/f; stat -c "%u %a" sub .'
	[ "$output" = "a
1000 755
0 2777" ]
}
