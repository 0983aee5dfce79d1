#!/usr/bin/env bash
# snapshot.sh — sbx-snapshot / sbx-restore of a generated ~200 MB home (many small files and
# a few large ones) on the local backend, side by side with GNU tar on the same data:
# `tar -czf` / `tar -xzf` for gzip, `tar --zstd -cf` / `tar --zstd -xf` for zstd.
set -eu
runs=${RUNS:-3}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'sbx-delete benchsnap >/dev/null 2>&1; rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib.bash"
bench_home "$tmp/src"
size=$(du -sm "$tmp/src" | cut -f1)
sbx-create -ttl 2h benchsnap >/dev/null	# idle while tar runs: it must outlive the baseline runs
tar -cf - -C "$tmp/src" . | sbx-exec -raw benchsnap -- tar -xf - -C /home/clawtainer
mkdir -p "$tmp/x"
fs=$HOME/.local/sandboxed-tools/benchsnap/fs
clear_home="sbx-exec -raw benchsnap -- find /home/clawtainer -mindepth 1 -delete"
reset_x="sh -c 'rm -rf $tmp/x && mkdir $tmp/x'"
# One prepare command per benchmark (hyperfine wants all or none); snapshots need none.
hyperfine -N -w 1 -r "$runs" --export-json "$tmp/r.json" \
	-n "snapshot gzip: sbx-snapshot" -p true "sbx-snapshot benchsnap" \
	-n "snapshot gzip: tar -czf" -p true "tar -czf $tmp/b.tar.gz -C $tmp/src ." \
	-n "snapshot zstd: sbx-snapshot -compress zstd" -p true "sbx-snapshot -compress zstd benchsnap" \
	-n "snapshot zstd: tar --zstd -cf" -p true "tar --zstd -cf $tmp/b.tar.zst -C $tmp/src ." \
	-n "restore gzip: sbx-restore" -p "$clear_home" "sh -c 'sbx-restore -from \$(ls $fs/*.tar.gz | tail -1) benchsnap'" \
	-n "restore gzip: tar -xzf" -p "$reset_x" "tar -xzf $tmp/b.tar.gz -C $tmp/x" \
	-n "restore zstd: sbx-restore" -p "$clear_home" "sh -c 'sbx-restore -from \$(ls $fs/*.tar.zst | tail -1) benchsnap'" \
	-n "restore zstd: tar --zstd -xf" -p "$reset_x" "tar --zstd -xf $tmp/b.tar.zst -C $tmp/x" \
	>/dev/null 2>"$tmp/hyperfine.err" || { cat "$tmp/hyperfine.err" >&2; exit 1; }
echo "home: ${size} MB; backup sizes: sbx gzip $(du -m "$(ls "$fs"/*.tar.gz | tail -1)" | cut -f1) MB, tar gzip $(du -m "$tmp/b.tar.gz" | cut -f1) MB, sbx zstd $(du -m "$(ls "$fs"/*.tar.zst | tail -1)" | cut -f1) MB"
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"{'operation':8} {'codec':5} {'sbx s':>7} {'tar s':>7} {'tar/sbx':>8}")
for op in ("snapshot", "restore"):
    for codec in ("gzip", "zstd"):
        ours = [v for k, v in r.items() if k.startswith(f"{op} {codec}: sbx")][0]
        base = [v for k, v in r.items() if k.startswith(f"{op} {codec}: tar")][0]
        print(f"{op:8} {codec:5} {ours:7.2f} {base:7.2f} {base/ours:8.2f}")
gz = [v for k, v in r.items() if k.startswith("snapshot gzip: tar")][0]
zs = [v for k, v in r.items() if k.startswith("snapshot zstd: sbx")][0]
print(f"sbx-snapshot -compress zstd is {gz/zs:.1f}x faster than tar -czf")
PY
