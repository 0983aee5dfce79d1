#!/usr/bin/env bats
# kube-suspend.bats — issue 34 on the kubernetes backend: with -idle pause the Sandbox's home
# is a PersistentVolumeClaim (volumeClaimTemplates), sbx-pause suspends it (operatingMode
# Suspended: the pod goes, the claim stays), sbx-resume and every use resume it, and the home
# comes back from the volume, not from a restore; processes do not survive. Against
# scripts/kube-test-server, whose controller keeps a claim's data when it deletes a pod;
# kubectl v1.35 and python3-kubernetes read the same states.

bats_require_minimum_version 1.5.0
load helpers
load kube/server
load agent

setup_file() {
	"$BATS_TEST_DIRNAME/kube/get-kubectl" >/dev/null
}

setup() {
	kts_setup -ready-delay 100ms
	kts_kubectl
	export SBX_KUBE_READY_TIMEOUT=20s
}

teardown() { kts_teardown; }

pod_gone() { ! k get pod "$1" >/dev/null 2>&1; }
pvc_gone() { ! k get pvc "$1" >/dev/null 2>&1; }

# The exec requests the server saw since the log was last cleared: their commands, one JSON
# string a line.
exec_commands() {
	kts_ctl requests | jq -c 'select(.path | endswith("/exec")) | .query.command | join(" ")'
}

@test "-idle pause: the home is a PersistentVolumeClaim of -disk and -storage-class, owned by the Sandbox, gone with it" {
	run sbx-create -idle pause -disk 1G -storage-class standard s1
	assert_status 0
	assert_json '.home_volume == "home-s1" and .keeps_processes == false and .state == "running"'
	assert_json '.idle == "pause" and .paused_ttl == "24h0m0s"'
	run k get sandbox s1 -o json
	assert_json '.spec.volumeClaimTemplates == [{"metadata": {"name": "home", "labels": {"app.kubernetes.io/managed-by": "sbx", "app.kubernetes.io/instance": "s1"}}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard"}}]'
	# no emptyDir home in the template: the controller mounts the claim at the home
	assert_json '[.spec.podTemplate.spec.volumes[].name] == ["tmp"]'
	assert_json '.spec.podTemplate.spec.containers[0].volumeMounts[0] == {"name": "home", "mountPath": "/home/clawtainer"}'
	uid=$(k get sandbox s1 -o jsonpath='{.metadata.uid}')
	run k get pvc home-s1 -o json
	assert_status 0
	assert_json ".status.phase == \"Bound\" and .metadata.ownerReferences[0].uid == \"$uid\" and .spec.resources.requests.storage == \"1Gi\""
	run k get pod s1 -o json
	assert_json '[.spec.volumes[] | select(.name == "home")] == [{"name": "home", "persistentVolumeClaim": {"claimName": "home-s1"}}]'
	# reused with the same spec (the env says -idle pause as well); a Sandbox without a claim
	# is not reused for -idle pause
	run env SANDBOX_IDLE=pause sbx-create -disk 1G s1
	assert_json '.reused == true and .idle == "pause"'
	run sbx-create -storage-class standard s2
	assert_status 100
	assert_contains "only a sandbox made with -idle pause has"
	sbx-create s2 >/dev/null
	run sbx-create -idle pause s2
	assert_status 100
	assert_contains "its home is an emptyDir, not a PersistentVolumeClaim"
	sbx-delete s1 >/dev/null
	wait_until pvc_gone home-s1
}

@test "sbx-pause: Suspended, pod gone, claim kept; a file in the home comes back on resume without a restore; processes do not" {
	SANDBOX_PAUSED_TTL=2h sbx-create -idle pause s3 >/dev/null
	run k get sandbox s3 -o jsonpath='{.metadata.annotations.sbx/paused-ttl}'
	[ "$output" = 7200 ]
	sbx-exec s3 -- sh -c 'echo kept >note; setsid sleep 600 >/dev/null 2>&1 &' >/dev/null
	before=$(date +%s)
	run sbx-pause s3
	assert_status 0
	assert_json '.state == "paused" and .keeps_processes == false and .paused_ttl == "2h0m0s"'
	assert_json '.delete_time == .shutdown_time'
	run k get sandbox s3 -o json
	assert_json '.spec.operatingMode == "Suspended"'
	# deleted -paused-ttl after the pause unless resumed
	st=$(date -d "$(jq -r .spec.shutdownTime <<<"$output")" +%s)
	(( st >= before + 7200 && st <= $(date +%s) + 7200 ))
	assert_json '[.status.conditions[] | select(.type == "Suspended") | .status, .reason] == ["True", "PodTerminated"]'
	assert_json '[.status.conditions[] | select(.type == "Ready") | .reason] == ["SandboxSuspended"]'
	pod_gone s3
	run k get pvc home-s3 -o jsonpath='{.status.phase}'
	[ "$output" = Bound ]
	# the local sandbox behind the pod is gone too: nothing of it runs
	run kts_local sbx-list
	[[ "$output" != *'"name":"s3"'* ]]
	# pausing twice is fine; sbx-list shows the state
	run sbx-pause s3
	assert_status 0
	assert_json '.state == "paused"'
	run sbx-list
	assert_json 'select(.name == "s3") | .state == "paused"'
	kts_ctl clear-requests >/dev/null
	run sbx-resume s3
	assert_status 0
	assert_json '.state == "running"'
	run sbx-exec s3 -- sh -c 'cat note; pgrep -x sleep || echo no-sleep'
	assert_json '.stdout == "kept\nno-sleep\n"'
	# no restore: the only command run since the pause is the one above
	run exec_commands
	[ "${#lines[@]}" = 1 ]
	[[ "$output" == *'cat note'* ]]
	run k get sandbox s3 -o jsonpath='{.spec.operatingMode}'
	[ "$output" = Running ]
}

@test "auto-resume: sbx-exec, sbx-tool and sbx-touch on a suspended sandbox resume it first" {
	sbx-create -idle pause s4 >/dev/null
	sbx-exec s4 -- sh -c 'echo one >f' >/dev/null
	sbx-pause s4 >/dev/null
	run sbx-exec s4 -- cat f
	assert_status 0
	assert_json '.stdout == "one\n" and .exit_code == 0'
	run k get sandbox s4 -o jsonpath='{.spec.operatingMode}'
	[ "$output" = Running ]
	sbx-pause s4 >/dev/null
	run sbx-tool s4 <<<'{"id": "c1", "type": "function", "function": {"name": "read", "arguments": {"path": "f"}}}'
	assert_status 0
	assert_json '.content | contains("one")'
	# stdin survives the retry: nothing of it was read while there was no pod
	sbx-pause s4 >/dev/null
	run sbx-exec -stdin s4 -- cat <<<"piped in"
	assert_json '.stdout == "piped in\n"'
	sbx-pause s4 >/dev/null
	run sbx-touch s4
	assert_status 0
	assert_json '.state == "running"'
	run k get sandbox s4 -o json
	assert_json '[.status.conditions[] | select(.type == "Ready") | .status] == ["True"]'
	# a create that reuses it resumes it too
	sbx-pause s4 >/dev/null
	run sbx-create -idle pause s4
	assert_status 0
	assert_json '.reused == true and .state == "running"'
}

@test "a claim that stays Pending is reported with its event's reason; a Sandbox without a claim cannot be paused; missing is 101" {
	run sbx-create -idle pause -storage-class nope s5
	assert_status 111
	assert_contains 'persistentvolumeclaim home-s5 is Pending: ProvisioningFailed: storageclass.storage.k8s.io "nope" not found'
	kts_ctl faults '{"pvc_pending": ["ProvisioningFailed", "out of disks in zone a"]}' >/dev/null
	run sbx-create -idle pause s6
	assert_status 111
	assert_contains "persistentvolumeclaim home-s6 is Pending: ProvisioningFailed: out of disks in zone a"
	run k get events --field-selector involvedObject.name=home-s6 -o jsonpath='{.items[0].type} {.items[0].reason}'
	[ "$output" = "Warning ProvisioningFailed" ]
	kts_ctl reset >/dev/null
	sbx-create s7 >/dev/null
	run sbx-pause s7
	assert_status 111
	assert_contains "keeps its home on an emptyDir"
	run sbx-pause nope
	assert_status 101
	run sbx-resume nope
	assert_status 101
	run env SANDBOX_BACKEND=local sbx-create -storage-class standard s8
	assert_status 100
	assert_contains "-storage-class is a kubernetes setting"
}

@test "volumeClaimTemplates is immutable: an update that changes it is refused 422, as the CRD's rule says" {
	sbx-create -idle pause s9 >/dev/null
	run k patch sandbox s9 --type merge -p '{"spec": {"volumeClaimTemplates": [{"metadata": {"name": "home"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}]}}'
	assert_status 1
	assert_contains 'The Sandbox "s9" is invalid: spec: Invalid value: "object": volumeClaimTemplates is immutable'
	obj=$(k get sandbox s9 -o json | jq -c 'del(.spec.volumeClaimTemplates)')
	run kts_curl -X PUT -H 'Content-Type: application/json' -d "$obj" \
		"$KTS_URL/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/s9"
	[ "${lines[-1]}" = 422 ]
	assert_contains 'volumeClaimTemplates is immutable'
	# other changes still go through: sbx-pause is an update of the same object
	run sbx-pause s9
	assert_status 0
}

@test "kubectl and python3-kubernetes see the same states of a suspended Sandbox and its claim" {
	sbx-create -idle pause s10 >/dev/null
	sbx-pause s10 >/dev/null
	kc=$(k get sandbox s10 -o json | jq -c '{mode: .spec.operatingMode, conds: [.status.conditions[] | {type, status, reason}]}')
	py=$("$BATS_TEST_DIRNAME/kube/pyclient" get s10 | jq -c '{mode: .spec.operatingMode, conds: [.status.conditions[] | {type, status, reason}]}')
	[ "$kc" = "$py" ]
	[[ "$kc" == *'"mode":"Suspended"'* ]]
	run "$BATS_TEST_DIRNAME/kube/pyclient" pvc home-s10
	assert_status 0
	assert_json '. == {"phase": "Bound", "storage": "10Gi", "class": "standard", "owner": ["Sandbox/s10"]}'
	run k get pvc home-s10 -o jsonpath='{.status.phase} {.spec.resources.requests.storage}'
	[ "$output" = "Bound 10Gi" ]
}

@test "v1alpha1: a pause is replicas 0 and a resume replicas 1" {
	kts_stop
	kts_start -ready-delay 100ms -versions v1alpha1
	SANDBOX_IDLE=pause sbx-create a1 >/dev/null
	sbx-exec a1 -- sh -c 'echo alpha >f' >/dev/null
	run sbx-pause a1
	assert_status 0
	assert_json '.state == "paused"'
	run k get sandbox a1 -o jsonpath='{.spec.replicas}'
	[ "$output" = 0 ]
	run sbx-exec a1 -- cat f
	assert_json '.stdout == "alpha\n"'
	run k get sandbox a1 -o jsonpath='{.spec.replicas}'
	[ "$output" = 1 ]
}

@test "kubectl alone: patching operatingMode suspends and resumes, and kubectl wait sees Suspended and Ready" {
	sbx-create -idle pause s11 >/dev/null
	sbx-exec s11 -- sh -c 'echo by-kubectl >f' >/dev/null
	k patch sandbox s11 --type merge -p '{"spec": {"operatingMode": "Suspended"}}' >/dev/null
	run k wait --for=condition=Suspended sandbox/s11 --timeout=60s
	assert_status 0
	wait_until pod_gone s11
	run k get sandbox s11 -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'
	[ "$output" = SandboxSuspended ]
	k patch sandbox s11 --type merge -p '{"spec": {"operatingMode": "Running"}}' >/dev/null
	run k wait --for=condition=Ready sandbox/s11 --timeout=60s
	assert_status 0
	run k get sandbox s11 -o jsonpath='{.status.conditions[?(@.type=="Suspended")].reason}'
	[ "$output" = NotSuspended ]
	run sbx-exec s11 -- cat f
	assert_json '.stdout == "by-kubectl\n"'
}

@test "-idle pause expiry: the Sandbox stays (Retain) with its claim, the pod goes; the next exec resumes it with its home; past -paused-ttl the next call deletes it" {
	sbx-create -idle pause -paused-ttl 3s e1 >/dev/null
	run k get sandbox e1 -o jsonpath='{.spec.shutdownPolicy}'
	[ "$output" = Retain ]
	sbx-exec e1 -- sh -c 'echo before >f' >/dev/null
	# its shutdown time comes: the controller tears down the pod and keeps the rest
	sbx-touch -ttl 1s e1 >/dev/null
	wait_until pod_gone e1
	run k get sandbox e1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'
	[ "$output" = SandboxExpired ]
	run k get pvc home-e1 -o jsonpath='{.status.phase}'
	[ "$output" = Bound ]
	run sbx-list
	assert_json 'select(.name == "e1") | .state == "paused" and .idle == "pause" and .paused_ttl == "3s"'
	before=$(date +%s)
	run sbx-exec e1 -- cat f
	assert_status 0
	assert_json '.stdout == "before\n"'
	# resumed: Ready, with a shutdown time from its own -ttl (the default 5m) again
	run k get sandbox e1 -o json
	assert_json '[.status.conditions[] | select(.type == "Ready") | .status] == ["True"]'
	st=$(date -d "$(jq -r .spec.shutdownTime <<<"$output")" +%s)
	(( st >= before + 300 ))
	# idle again, and paused past its -paused-ttl: the next call deletes it, claim and all
	sbx-touch -ttl 1s e1 >/dev/null
	wait_until pod_gone e1
	sleep 4
	run sbx-exec e1 -- true
	assert_status 101
	assert_contains "sandbox e1 not found"
	run k get sandbox e1
	assert_contains NotFound
	wait_until pvc_gone home-e1
	# the same for a touch (what agent-loop's turns do) and a reusing create, which makes it anew
	sbx-create -idle pause -paused-ttl 1s e2 >/dev/null
	sbx-exec e2 -- sh -c 'echo old >f' >/dev/null
	sbx-touch -ttl 1s e2 >/dev/null
	wait_until pod_gone e2
	sleep 3
	run sbx-touch e2
	assert_status 101
	assert_contains "paused past its -paused-ttl and is deleted now"
	sbx-create -idle pause -paused-ttl 1s e3 >/dev/null
	sbx-exec e3 -- sh -c 'echo old >f' >/dev/null
	sbx-touch -ttl 1s e3 >/dev/null
	wait_until pod_gone e3
	sleep 3
	run sbx-create -idle pause e3
	assert_status 0
	assert_json '.reused == false and .state == "running"'
	run sbx-exec e3 -- sh -c 'cat f 2>/dev/null || echo new home'
	assert_json '.stdout == "new home\n"'
	# sbx-pause of one kept past its shutdown time suspends it: deleted by the controller then
	sbx-create -idle pause e4 >/dev/null
	sbx-touch -ttl 1s e4 >/dev/null
	wait_until pod_gone e4
	run sbx-pause e4
	assert_status 0
	assert_json '.state == "paused"'
	run k get sandbox e4 -o json
	assert_json '.spec.operatingMode == "Suspended" and .spec.shutdownPolicy == "Delete"'
	assert_json '[.status.conditions[] | select(.type == "Suspended") | .status] == ["True"]'
	run sbx-resume e4
	assert_status 0
	assert_json '.state == "running"'
	run k get sandbox e4 -o jsonpath='{.spec.shutdownPolicy}'
	[ "$output" = Retain ]
}

# snapshots N: the fed agent-loop has saved at least N backups (N turns are over).
snapshots() { [ "$(grep -c 'saved filesystem state' "$BATS_TEST_TMPDIR/err")" -ge "$1" ]; }

@test "agent-loop -idle pause: the turn after the shutdown time resumes the kept Sandbox with its home, nothing restored; past -paused-ttl the next turn restores from the backup" {
	agent_fed -session knap -ttl 6s -idle pause -paused-ttl 3s
	echo "run: echo kept > ~/kept.txt" >&4
	wait_snapshot
	wait_until -p "$FED_PID" pod_gone knap		# its 6 s pass: the pod goes, the rest stays
	run k get sandbox knap -o jsonpath='{.spec.shutdownPolicy} {.status.conditions[?(@.type=="Ready")].reason}'
	[ "$output" = "Retain SandboxExpired" ]
	echo "run: cat ~/kept.txt" >&4
	wait_until -p "$FED_PID" snapshots 2
	wait_until -p "$FED_PID" pod_gone knap		# idle again
	sleep 4						# and past its 3 s paused ttl
	echo "run: cat ~/kept.txt" >&4
	echo "/exit" >&4
	fed_end
	jq -s -e '[.[] | select(.role == "tool") | .content] | .[1:] == ["stdout:\nkept\n\nstderr:\n\nexit_code: 0", "stdout:\nkept\n\nstderr:\n\nexit_code: 0"]' "$(hist knap)"
	run cat "$BATS_TEST_TMPDIR/err"
	# recreated and restored once: for the third turn, not the second
	[ "$(grep -c 'Active sandbox was deleted or expired' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'restoring filesystem from latest backup' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'launching sandbox for tool execution' <<<"$output")" -eq 2 ]
}
