#!/usr/bin/env bats
# OCI images on the local backend (sbx-image, sbx-create -image oci-archive:/oci:): small
# hand-made images (tests/oci/mkimage.py, a static busybox for a shell), the real toolbox image.

load helpers

setup() {
	setup_sbx_env
	cache="$XDG_STATE_HOME/sbx/images"
}
teardown() { teardown_sbx_env; }

# mkimg OUT: writes the image described by the JSON on stdin to OUT (.tar: an archive).
mkimg() {
	cat >"$BATS_TEST_TMPDIR/spec.json"
	python3 "$SBX_TOP/tests/oci/mkimage.py" "$BATS_TEST_TMPDIR/spec.json" "$1"
}

# The base layer every hand-made image starts with: a shell and its users.
BASE='{"compress":"gzip","entries":[["hostfile","bin/busybox","/bin/busybox"],
	["symlink","bin/sh","busybox"],["dir","etc"],
	["file","etc/passwd","root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"],
	["file","etc/group","root:x:0:\napp:x:1000:\nstaff:x:50:\n"]]}'

# Nothing but the cache's lock files may be left after a refused image.
assert_cache_clean() {
	local left
	left=$(find "$cache" -mindepth 1 ! -name '*.lock' 2>/dev/null || true)
	if [ -n "$left" ]; then
		echo "left in the cache: $left" >&2
		return 1
	fi
}

@test "whiteouts and opaque directories hide what lower layers made (gzip and zstd layers)" {
	mkimg "$BATS_TEST_TMPDIR/img.tar" <<-EOF
	{"layers":[$BASE,
	 {"compress":"gzip","entries":[["dir","keep"],["file","keep/a","a"],["file","gone","x"],
	   ["dir","gonedir"],["file","gonedir/f","f"],["dir","opq"],["file","opq/old","o"],
	   ["dir","opq/olddir"],["file","opq/olddir/f","f"]]},
	 {"compress":"zstd","entries":[["raw",".wh.gone",""],["raw","./.wh.gonedir",""],["dir","opq"],
	   ["raw","opq/.wh..wh..opq",""],["file","opq/new","n"],["file","keep/b","b"]]}],
	 "tag":"v1"}
	EOF
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/img.tar:v1" w
	assert_status 0
	assert_json '.image == "oci-archive:'"$BATS_TEST_TMPDIR"'/img.tar:v1"'
	run sbx-exec -raw w -- sh -c 'cd / && busybox ls -d gone gonedir 2>&1; busybox ls opq keep'
	assert_contains "gone: No such file or directory"
	assert_contains "gonedir: No such file or directory"
	[ "$(sbx-exec -raw w -- busybox ls /opq)" = new ]
	[ "$(sbx-exec -raw w -- busybox cat /keep/a /keep/b)" = ab ]
	# The rootfs is read-only and shared; the home is the sandbox's own.
	run sbx-exec -raw w -- busybox touch /keep/c
	assert_status 1
	assert_contains "Read-only file system"
	run sbx-exec -raw w -- sh -c 'echo hi > ~/f && busybox cat ~/f'
	[ "$output" = hi ]
}

@test "an image's /etc, /usr and /var are writable through the sandbox's own layer; the image never changes" {
	mkimg "$BATS_TEST_TMPDIR/img.tar" <<-EOF
	{"layers":[$BASE,
	 {"compress":"gzip","entries":[["dir","usr"],["file","usr/a","a"],["dir","var"],["dir","keep"]]}]}
	EOF
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/img.tar" w
	assert_status 0
	run sbx-exec -raw w -- sh -c 'echo b >> /usr/a && echo x > /etc/x && busybox mkdir /var/lib &&
		busybox cat /usr/a /etc/x && busybox stat -c %u /etc/passwd'
	assert_status 0
	[ "$output" = "$(printf 'ab\nx\n0')" ]
	run sbx-exec -raw w -- busybox touch /keep/c
	assert_status 1
	assert_contains "Read-only file system"
	# the image's unpacked files in the cache are as they were
	[ "$(cat "$(find "$cache" -path '*/rootfs/usr/a')")" = a ]
	[ -z "$(find "$cache" -path '*/rootfs/etc/x')" ]
}

@test "the image's Env, WorkingDir and User apply; HOME stays the sandbox's" {
	mkimg "$BATS_TEST_TMPDIR/layout" <<-EOF
	{"layers":[$BASE],
	 "config":{"Env":["FOO=bar baz","PATH=/bin","HOME=/nope"],"WorkingDir":"/srv/app",
	           "User":"app:staff"}}
	EOF
	run sbx-create -image "oci:$BATS_TEST_TMPDIR/layout" e
	assert_status 0
	run sbx-exec -raw e -- sh -c 'echo "$FOO|$(pwd)|$HOME|$PATH"; busybox id -u; busybox id -g'
	assert_status 0
	[ "$output" = "$(printf 'bar baz|/srv/app|/home/clawtainer|/bin:/run/sbx/bin\n1000\n50')" ]
	run sbx-exec -raw e -- sh -c 'echo ok > f && busybox cat f'
	assert_status 1	# the WorkingDir is in the read-only image
	# the image's user owns the home and holds no capability (root's alone are kept)
	run sbx-exec -raw e -- sh -c 'busybox grep CapEff /proc/self/status; echo x >~/w && busybox stat -c %u:%g ~/w'
	[ "$output" = "$(printf 'CapEff:\t0000000000000000\n1000:50')" ]
	run sbx-image "oci:$BATS_TEST_TMPDIR/layout"
	assert_status 0
	assert_json '.workdir == "/srv/app" and .user == "app:staff" and .uid == 1000 and .gid == 50'
	assert_json '.env == ["FOO=bar baz","PATH=/bin","HOME=/nope"] and .unpacked == false'
	assert_json '.digest | test("^sha256:[0-9a-f]{64}$")'
}

@test "a second create reuses the unpacked rootfs; concurrent creates unpack once" {
	mkimg "$BATS_TEST_TMPDIR/img.tar" <<-EOF
	{"layers":[$BASE,{"compress":"gzip","entries":[["file","marker","m"]]}]}
	EOF
	img="oci-archive:$BATS_TEST_TMPDIR/img.tar"
	for i in 1 2 3 4; do sbx-image "$img" >"$BATS_TEST_TMPDIR/out.$i" & done
	wait
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -s 'map(select(.unpacked)) | length')" = 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -rs 'map(.rootfs) | unique | length')" = 1 ]
	rootfs=$(jq -r .rootfs "$BATS_TEST_TMPDIR/out.1")
	[ "${rootfs#"$cache"/}" = "$(jq -r '.digest | ltrimstr("sha256:")' "$BATS_TEST_TMPDIR/out.1")/rootfs" ]
	ino=$(stat -c %i "$rootfs/marker")
	sbx-create -image "$img" c1 >/dev/null
	sbx-delete c1 >/dev/null
	sbx-create -image "$img" c2 >/dev/null
	[ "$(sbx-exec -raw c2 -- busybox cat /marker)" = m ]
	[ "$(stat -c %i "$rootfs/marker")" = "$ino" ]
	run sbx-image "$img"
	assert_json '.unpacked == false'
	[ "$(find "$cache" -mindepth 1 -maxdepth 1 -name '.tmp-*' | wc -l)" = 0 ]
}

@test "a layer whose digest does not match the manifest is refused and nothing is cached" {
	mkimg "$BATS_TEST_TMPDIR/img.tar" <<-EOF
	{"layers":[$BASE,{"compress":"none","tamper":true,"entries":[["file","evil","TAMPERME"]]}]}
	EOF
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/img.tar" d
	assert_status 100
	assert_contains "sbx-create: unable to create sandbox d: image oci-archive:$BATS_TEST_TMPDIR/img.tar: layer 2"
	assert_contains "digest mismatch"
	assert_cache_clean
	run sbx-list
	[ -z "$output" ]
}

@test "hostile layers are refused and write nothing outside the cache" {
	mkdir "$BATS_TEST_TMPDIR/outside"
	out="$BATS_TEST_TMPDIR/outside"
	n=0
	for entries in \
		'[["raw","../escape","x"]]' \
		'[["raw","a/../../escape","x"]]' \
		'[["raw","/abs-escape","x"]]' \
		'[["symlink","link","'"$out"'"],["file","link/escape","x"]]' \
		'[["hardlink","hl","/etc/hostname"]]' \
		'[["hardlink","hl","../../../../etc/hostname"]]' \
		'[["symlink","sl","/etc/hostname"],["hardlink","hl","sl"]]' \
		'[["chr","dev/null2"]]'; do
		n=$((n + 1))
		mkimg "$BATS_TEST_TMPDIR/h$n.tar" <<-EOF
		{"layers":[$BASE,{"compress":"gzip","entries":$entries}]}
		EOF
		run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/h$n.tar" h
		echo "case $n: $entries" >&2
		assert_status 100
		assert_contains "layer 2"
	done
	# Each case said why.
	run sbx-image "oci-archive:$BATS_TEST_TMPDIR/h1.tar"
	assert_contains "escapes the root filesystem"
	run sbx-image "oci-archive:$BATS_TEST_TMPDIR/h4.tar"
	assert_contains "goes through a symbolic link"
	run sbx-image "oci-archive:$BATS_TEST_TMPDIR/h5.tar"
	assert_contains "not a file of the image"
	run sbx-image "oci-archive:$BATS_TEST_TMPDIR/h8.tar"
	assert_contains "is a device node"
	[ -z "$(ls -A "$out")" ]
	[ ! -e "$BATS_TEST_TMPDIR/escape" ]
	[ ! -e "$XDG_STATE_HOME/escape" ]
	[ ! -e /abs-escape ]
	assert_cache_clean
}

@test "User is resolved in the image without following its symbolic links" {
	mkimg "$BATS_TEST_TMPDIR/img.tar" <<-EOF
	{"layers":[{"compress":"gzip","entries":[["hostfile","bin/busybox","/bin/busybox"],
	   ["dir","etc"],["symlink","etc/passwd","/etc/passwd"]]}],
	 "config":{"User":"root"}}
	EOF
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/img.tar" u
	assert_status 100
	assert_contains "image user \"root\" is not in the image's /etc/passwd"
}

@test "missing, corrupt or ambiguous images are clear errors" {
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/none.tar" b
	assert_status 101
	assert_contains "No such file or directory"
	head -c 3000 /dev/urandom >"$BATS_TEST_TMPDIR/junk.tar"
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/junk.tar" b
	assert_status 100
	assert_contains "junk.tar"
	tar -C "$BATS_TEST_TMPDIR" -cf "$BATS_TEST_TMPDIR/empty.tar" spec.json 2>/dev/null ||
		{ echo '{}' >"$BATS_TEST_TMPDIR/x.json"; tar -C "$BATS_TEST_TMPDIR" -cf "$BATS_TEST_TMPDIR/empty.tar" x.json; }
	run sbx-create -image "oci-archive:$BATS_TEST_TMPDIR/empty.tar" b
	assert_status 100
	assert_contains "is not an OCI archive: no index.json in it"
	mkimg "$BATS_TEST_TMPDIR/l" <<-EOF
	{"layers":[$BASE],"tag":"v1"}
	EOF
	run sbx-create -image "oci:$BATS_TEST_TMPDIR/l:v2" b
	assert_status 101
	assert_contains 'no image tagged "v2"'
	echo '{"manifests": 7}' >"$BATS_TEST_TMPDIR/l/index.json"
	run sbx-create -image "oci:$BATS_TEST_TMPDIR/l" b
	assert_status 100
	assert_contains "index.json lists no manifests"
	echo 'not json' >"$BATS_TEST_TMPDIR/l/index.json"
	run sbx-create -image "oci:$BATS_TEST_TMPDIR/l" b
	assert_status 100
	assert_contains "index.json is not a JSON object"
	run sbx-create -image "oci:$BATS_TEST_TMPDIR/spec.json" b
	assert_status 100
	assert_contains "is not an OCI layout (a directory)"
	run sbx-create -image "docker.io/library/debian" b
	assert_status 100
	assert_contains "oci-archive:PATH[:TAG]"
	run sbx-image /not-an-oci-ref
	assert_status 100
	assert_contains "usage: sbx-image"
	run sbx-image -h
	assert_status 0
	assert_contains "usage: sbx-image [-homedir D] IMAGE"
	run sbx-list
	[ -z "$output" ]
	assert_cache_clean
}

@test "a sandbox from the real toolbox image runs geminicli-toolbox end to end" {
	"$SBX_TOP/scripts/build-images" geminicli-toolbox
	img="oci-archive:$SBX_TOP/build/images/geminicli-toolbox.tar"
	run sbx-create -image "$img" tb
	assert_status 0
	sbx-exec tb -- sh -c 'cd && mkdir -p proj/sub && echo hi > proj/a.txt' >/dev/null
	run sbx-exec -raw tb -- sh -c 'echo "{\"dir_path\":\"$HOME/proj\"}" | geminicli-toolbox list_directory'
	assert_status 0
	assert_contains "a.txt"
	assert_contains "[DIR] sub"
	run sbx-exec -raw tb -- sh -c 'command -v geminicli-toolbox; bash -c "echo \$BASH_VERSION"; ls --version | head -1'
	assert_status 0
	assert_contains "/usr/local/bin/geminicli-toolbox"
	assert_contains "(GNU coreutils)"
}

@test "-toolset geminicli runs on the toolbox image with the image's own helper" {
	"$SBX_TOP/scripts/build-images" geminicli-toolbox
	# No host helper bound at /run/sbx/bin: the image's /usr/local/bin one must do the work.
	export SBX_TOOLBOX=/nonexistent
	sbx-create -image "oci-archive:$SBX_TOP/build/images/geminicli-toolbox.tar" gt >/dev/null
	run sbx-exec -raw gt -- sh -c 'ls /run/sbx/bin/geminicli-toolbox 2>&1; cd && echo x > note.md'
	assert_contains "No such file or directory"
	run sbx-tool -toolset geminicli gt <<<'{"id":"c1","type":"function","function":{"name":"list_directory","arguments":"{\"dir_path\":\"/home/clawtainer\"}"}}'
	assert_status 0
	assert_json '.role == "tool" and .tool_call_id == "c1"'
	assert_json '.content | contains("note.md")'
}
