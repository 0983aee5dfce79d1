#!/usr/bin/env bats
# make install: PREFIX and DESTDIR honoured; the installed tools find their helpers.

load helpers

setup() { setup_sbx_env; }
teardown() { teardown_sbx_env; }

@test "make install puts programs, helpers and man pages under DESTDIR/PREFIX" {
	dest=$BATS_TEST_TMPDIR/dest
	run make -s -C "$SBX_TOP" install DESTDIR="$dest" PREFIX=/opt/sbx
	assert_status 0
	for p in sbx-create sbx-exec sbx-touch sbx-delete sbx-list sbx-tool llm-chat; do
		[ -x "$dest/opt/sbx/bin/$p" ]
	done
	for m in "$SBX_TOP"/man/man1/*.1; do
		[ -f "$dest/opt/sbx/share/man/man1/${m##*/}" ]
	done
	[ -x "$dest/opt/sbx/libexec/sbx/sbx-init" ]
	[ -f "$dest/opt/sbx/libexec/sbx/sbx-kube.so" ]
	[ ! -e "$dest/opt/sbx/bin/sbx-init" ]
	# the installed sbx-create finds sbx-init in ../libexec/sbx
	run "$dest/opt/sbx/bin/sbx-create" installed
	assert_status 0
	run "$dest/opt/sbx/bin/sbx-exec" -raw installed -- echo ok
	[ "$output" = ok ]
	"$dest/opt/sbx/bin/sbx-delete" installed >/dev/null
	run make -s -C "$SBX_TOP" uninstall DESTDIR="$dest" PREFIX=/opt/sbx
	assert_status 0
	[ ! -e "$dest/opt/sbx/bin/sbx-create" ]
}
