#!/usr/bin/env bash
# toolbox.sh — geminicli-toolbox against the usual command-line tools on a generated tree of
# 50,000 files, side by side in the same run: grep_search vs `rg -n` (all matches, no cap),
# glob vs `find -name`, and the helper's start-up (-h) vs /bin/true.
set -eu
files=${FILES:-50000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree"
# 500 directories of 100 files; every 97th file holds a match.
python3 - "$tree" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
body = "".join(f"line {k}: the quick brown fox jumps over the lazy dog {k * 7}\n" for k in range(40))
for i in range(n):
    d = os.path.join(root, f"d{i // 100:03d}")
    os.makedirs(d, exist_ok=True)
    ext = ".c" if i % 10 == 0 else ".txt"
    with open(os.path.join(d, f"f{i:05d}{ext}"), "w") as f:
        f.write(body)
        if i % 97 == 0:
            f.write(f"static int needle_{i} = {i};\n")
PY
echo '{"pattern":"needle_[0-9]+","total_max_matches":1000000,"context":0}' >"$tmp/grep.json"
echo '{"pattern":"**/*.c"}' >"$tmp/glob.json"
# correctness first: the same matches as rg
a=$(geminicli-toolbox --workdir="$tree" grep_search <"$tmp/grep.json" | grep -c '^L[0-9]*:')
b=$(cd "$tree" && rg -n 'needle_[0-9]+' | wc -l)
[ "$a" = "$b" ] || { echo "grep_search found $a matches, rg $b"; exit 1; }
cd "$tree"
hyperfine -N -w 2 -r "${RUNS:-10}" --export-json "$tmp/search.json" \
	-n "grep_search" "sh -c 'geminicli-toolbox --workdir=. grep_search <$tmp/grep.json'" \
	-n "rg -n" "sh -c 'rg -n needle_[0-9]+ >/dev/null'" \
	-n "glob" "sh -c 'geminicli-toolbox --workdir=. glob <$tmp/glob.json'" \
	-n "find -name" "sh -c 'find . -name \"*.c\" >/dev/null'" >/dev/null 2>&1
hyperfine -N -w 50 -r "${STARTS:-500}" --export-json "$tmp/start.json" \
	-n "geminicli-toolbox -h" "geminicli-toolbox -h" -n "/bin/true" "/bin/true" >/dev/null 2>&1
python3 - "$tmp/search.json" "$tmp/start.json" <<'PY'
import json, sys
s = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
t = {x["command"]: x["median"] for x in json.load(open(sys.argv[2]))["results"]}
print(f"{'command':24} {'median ms':>10} {'ratio':>8}")
for cmd, base in (("grep_search", "rg -n"), ("glob", "find -name")):
    print(f"{cmd:24} {s[cmd]*1000:10.1f} {s[cmd]/s[base]:7.2f}x")
    print(f"{base:24} {s[base]*1000:10.1f} {1:7.2f}x")
a, b = t["geminicli-toolbox -h"], t["/bin/true"]
print(f"{'geminicli-toolbox -h':24} {a*1000:10.2f} {a/b:7.2f}x")
print(f"{'/bin/true':24} {b*1000:10.2f} {1:7.2f}x")
PY
