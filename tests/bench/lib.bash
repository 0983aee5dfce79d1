# tests/bench/lib.bash — what more than one benchmark script does (sourced).

# creates_side_by_side OUT RUNS NAME1 DELETE1 CREATE1 NAME2 DELETE2 CREATE2: two sbx-create
# commands timed by hyperfine in one run, each after its DELETE (which makes room for it),
# RUNS times each after two warm-ups; hyperfine's JSON export in OUT.
creates_side_by_side() {
	hyperfine -N -w 2 -r "$2" --export-json "$1" -p "$4" -n "$3" "$5" -p "$7" -n "$6" "$8" \
		>/dev/null 2>&1
}

# bench_home DIR: the ~200 MB home snapshot.sh and pause.sh work on, made in DIR the same way
# each time (seeded): 12000 small text-like files (1-16 KB) in 120 directories, plus 4 large
# files that compress about as well as build output (half random, half repetitive).
bench_home() {
	python3 - "$1" <<'PY'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(42)
words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
         for _ in range(5000)]
for d in range(120):
    dp = os.path.join(root, "src", f"pkg{d:03d}")
    os.makedirs(dp, exist_ok=True)
    for f in range(100):
        n = rnd.randint(1024, 16384)
        out = bytearray()
        while len(out) < n:
            out += b" ".join(rnd.choice(words) for _ in range(12)) + b"\n"
        with open(os.path.join(dp, f"f{f:03d}.txt"), "wb") as fh:
            fh.write(out[:n])
os.makedirs(os.path.join(root, "data"), exist_ok=True)
for i in range(4):
    with open(os.path.join(root, "data", f"blob{i}.bin"), "wb") as fh:
        for _ in range(96):
            fh.write(os.urandom(128 * 1024) + bytes(128 * 1024))
PY
}

# now_ns: the wall clock in ns. median: the median of the numbers on stdin, one a line.
now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# bench_kts_start TOP WORK DELAY: scripts/kube-test-server of checkout TOP with state in WORK
# and pods ready DELAY (a Go duration) after creation; sets server_pid (for the caller's
# cleanup, which kills it) and exports the kubernetes backend's environment; kubectl v1.35's
# path in kubectl.
bench_kts_start() {
	kubectl=$("$1/tests/kube/get-kubectl")
	mkdir -p "$2/home" "$2/state"
	HOME="$2/home" XDG_STATE_HOME="$2/state" "$1/scripts/kube-test-server" \
		-kubeconfig "$2/kc" -ready-delay "$3" >"$2/log" 2>&1 &
	server_pid=$!
	# shellcheck source=../helpers.bash
	. "$1/tests/helpers.bash"	# wait_until
	wait_until -p "$server_pid" test -s "$2/kc" || { cat "$2/log" >&2; return 1; }
	export KUBECONFIG="$2/kc" SANDBOX_BACKEND=kubernetes HOME="$2/home" XDG_STATE_HOME="$2/state"
}

# kube_bench_up TOP WORK: what kube-exec.sh and kube-port.sh start from: scripts/kube-test-server
# of the tree TOP with its files in WORK (kc, log, home, state), no ready delay, waited for
# (bounded); the environment pointed at it (KUBECONFIG, SANDBOX_BACKEND=kubernetes, HOME,
# XDG_STATE_HOME); the sandbox bench made. The server's pid is kube_server_pid.
kube_bench_up() {
	bench_kts_start "$1" "$2" 0 || return 1
	kube_server_pid=$server_pid
	sbx-create bench >/dev/null
}

# kube_bench_down WORK: deletes bench and stops the server kube_bench_up started (if it did).
kube_bench_down() {
	[ -n "${kube_server_pid:-}" ] || return 0
	KUBECONFIG="$1/kc" sbx-delete -backend kubernetes bench >/dev/null 2>&1 || true
	kill "$kube_server_pid" 2>/dev/null || true
	wait "$kube_server_pid" 2>/dev/null || true
}
