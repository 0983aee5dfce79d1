# tests/bench/lib.bash — what more than one benchmark script does (sourced).

# creates_side_by_side OUT RUNS NAME1 DELETE1 CREATE1 NAME2 DELETE2 CREATE2: two sbx-create
# commands timed by hyperfine in one run, each after its DELETE (which makes room for it),
# RUNS times each after two warm-ups; hyperfine's JSON export in OUT.
creates_side_by_side() {
	hyperfine -N -w 2 -r "$2" --export-json "$1" -p "$4" -n "$3" "$5" -p "$7" -n "$6" "$8" \
		>/dev/null 2>&1
}
