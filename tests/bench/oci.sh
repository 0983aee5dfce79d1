#!/usr/bin/env bash
# oci.sh — sbx-create from an OCI image: the first create (unpack into the cache) against
# `tar -xzf` of the same layers, and a second create (cached) against a create from the host
# root. The image is the toolbox image (scripts/build-images makes it; needs root). Each
# unpack starts after a sync, so neither pays for writing back the other's files.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${RUNS:-10}
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
trap 'sbx-delete benchoci >/dev/null 2>&1; rm -rf "$tmp"' EXIT
"$top/scripts/build-images" geminicli-toolbox >/dev/null 2>&1
archive=$top/build/images/geminicli-toolbox.tar
img=oci-archive:$archive

# The same layers as plain files, in manifest order, for the tar baseline.
mkdir "$tmp/blobs"
m=$(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest | ltrimstr("sha256:")')
layers=$(tar -xOf "$archive" "blobs/sha256/$m" | jq -r '.layers[].digest | ltrimstr("sha256:")')
untar=""
for l in $layers; do
	tar -xOf "$archive" "blobs/sha256/$l" >"$tmp/blobs/$l"
	untar="$untar tar -xzf $tmp/blobs/$l -C $tmp/x &&"
done
sbx-image "$img" >"$tmp/img.json"
size=$(du -sm "$(jq -r .rootfs "$tmp/img.json")" | cut -f1)
rm -rf "$XDG_STATE_HOME/sbx/images"

hyperfine -N -w 1 -r "$runs" --export-json "$tmp/r.json" \
	-n "tar -xzf of the layers" \
	-p "sh -c 'rm -rf $tmp/x && mkdir $tmp/x && sync'" "sh -c '$untar true'" \
	-n "sbx-create, unpack (cold cache)" \
	-p "sh -c 'sbx-delete benchoci; rm -rf $XDG_STATE_HOME/sbx/images; sync'" \
	"sbx-create -image $img benchoci" \
	-n "sbx-create from the host root" \
	-p "sbx-delete benchoci" "sbx-create benchoci" \
	-n "sbx-create, cached image" \
	-p "sbx-delete benchoci" "sbx-create -image $img benchoci" >/dev/null
python3 - "$tmp/r.json" "$(stat -c %s "$archive")" "$size" "$(echo $layers | wc -w)" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"image: geminicli-toolbox, archive {int(sys.argv[2]) / 1e6:.0f} MB, "
      f"{sys.argv[4]} layers, {sys.argv[3]} MB unpacked")
print(f"{'case':34} {'median ms':>10}")
for k, v in r.items():
    print(f"{k:34} {v * 1000:10.1f}")
unpack, tar = r["sbx-create, unpack (cold cache)"], r["tar -xzf of the layers"]
cached, host = r["sbx-create, cached image"], r["sbx-create from the host root"]
print(f"first create / tar -xzf: {unpack / tar:.2f}x   cached create / host-root create: "
      f"{cached / host:.2f}x")
PY
