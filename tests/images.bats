#!/usr/bin/env bats
# images/: every Dockerfile builds with buildah (scripts/build-images, as `make images` runs it)
# into an OCI archive under build/images/, and each image holds what it promises, checked by
# running it as a local sandbox (sbx-create -image oci-archive:…).

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

# oci_config ARCHIVE: the image config (JSON) of the archive's only image.
oci_config() {
	local m c
	m=$(tar -xOf "$1" index.json | jq -r '.manifests[0].digest | ltrimstr("sha256:")')
	c=$(tar -xOf "$1" "blobs/sha256/$m" | jq -r '.config.digest | ltrimstr("sha256:")')
	tar -xOf "$1" "blobs/sha256/$c"
}

# The archives the build should have made, one per images/*/Dockerfile.
image_names() {
	local d
	for d in "$SBX_TOP"/images/*/Dockerfile; do basename "$(dirname "$d")"; done
}

# check_<image> NAME ARCHIVE: what each image must hold. Every image needs one.
check_geminicli_toolbox() {
	run sbx-create -image "oci-archive:$2" "$1"
	assert_status 0
	run sbx-exec -raw "$1" -- sh -c 'cd && echo hello > a.txt &&
		echo "{\"dir_path\":\"$HOME\"}" | /usr/local/bin/geminicli-toolbox list_directory'
	assert_status 0
	assert_contains "a.txt (6 bytes)"
	run sbx-exec -raw "$1" -- bash -c 'echo "bash $BASH_VERSION"; ls --version; git --version;
		curl --version; ps -p $$ -o comm=; test -s /etc/ssl/certs/ca-certificates.crt && echo certs'
	assert_status 0
	assert_contains "bash 5."
	assert_contains "(GNU coreutils)"
	assert_contains "git version"
	assert_contains "curl "
	assert_contains "certs"
	# A runtime image: no compiler came along from the build stage.
	run sbx-exec -raw "$1" -- sh -c 'for c in gcc cc make; do command -v $c && exit 1; done; echo none'
	assert_status 0
	[ "$output" = none ]
	oci_config "$2" | jq -e '.config.Cmd == ["sleep","infinity"]' >/dev/null
}

check_acp_server() {
	local cfg
	cfg=$(oci_config "$2")
	printf '%s' "$cfg" | jq -e '.config.User != "" and .config.User != "root" and
		(.config.User | test("^0(:|$)") | not)' >/dev/null
	printf '%s' "$cfg" | jq -e '.config.Env | index("HOME=/data") != null' >/dev/null
	run sbx-create -homedir /data -image "oci-archive:$2" "$1"
	assert_status 0
	run sbx-exec -raw "$1" -- sh -c 'id -u; echo $HOME'
	assert_status 0
	[ "${lines[0]}" != 0 ]
	[ "${lines[1]}" = /data ]
	run sbx-exec -raw "$1" -- acp-server -h
	assert_status 0
	assert_contains "usage: acp-server"
}

@test "every images/*/Dockerfile builds into an OCI archive under build/images" {
	run "$SBX_TOP/scripts/build-images"
	echo "$output"
	assert_status 0
	[ -n "$(image_names)" ]
	for n in $(image_names); do
		a="$SBX_TOP/build/images/$n.tar"
		[ -s "$a" ]
		[ "$(tar -xOf "$a" oci-layout | jq -r .imageLayoutVersion)" = 1.0.0 ]
		run sbx-image "oci-archive:$a:latest"
		assert_status 0
		assert_json '.digest | test("^sha256:")'
	done
	# A second run finds everything up to date and builds nothing.
	run "$SBX_TOP/scripts/build-images"
	assert_status 0
	[ "$(grep -c 'up to date' <<<"$output")" = "$(image_names | wc -l)" ]
}

@test "each image holds what it promises" {
	"$SBX_TOP/scripts/build-images" >/dev/null 2>&1
	for n in $(image_names); do
		f="check_$(tr '-' '_' <<<"$n")"
		if ! declare -F "$f" >/dev/null; then
			echo "images/$n has no $f in tests/images.bats" >&2
			return 1
		fi
		"$f" "$(tr -d '-' <<<"$n")" "$SBX_TOP/build/images/$n.tar"
	done
}

@test "build-images refuses an unknown image name and explains itself" {
	run "$SBX_TOP/scripts/build-images" no-such-image
	assert_status 1
	assert_contains "build-images: no such image: images/no-such-image/Dockerfile"
}
