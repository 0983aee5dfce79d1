# snapshot.bash — shared by sbx-snapshot.bats and sbx-restore.bats: the kubernetes backend
# against scripts/kube-test-server (started by the test that needs it, on 127.0.0.1).
# shellcheck shell=bash

load kube/server

# Starts the server and points the tools at it; FS is session k1's backup directory.
kube_up() {
	kts_start -ready-delay 100ms
	export SANDBOX_BACKEND=kubernetes
	FS="$HOME/.local/sandboxed-tools/k1/fs"
}

# In teardown: deletes the test's Sandboxes and stops the server, if it was started.
kube_down() {
	local n
	[ -n "${KTS_PID:-}" ] || return 0
	for n in $(sbx-list 2>/dev/null | jq -r .name); do sbx-delete "$n" >/dev/null 2>&1 || true; done
	kts_stop
	unset SANDBOX_BACKEND KUBECONFIG
}
