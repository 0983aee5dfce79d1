#!/usr/bin/env python3
"""mkimage.py SPEC.json OUT — writes a small OCI image for tests/oci.bats.

OUT ending in .tar: an oci-archive; otherwise an OCI layout directory. SPEC:
  {"layers": [{"compress": "gzip"|"zstd"|"none", "tamper": false,
               "entries": [["file", PATH, TEXT], ["dir", PATH], ["symlink", PATH, TARGET],
                           ["hardlink", PATH, TARGET], ["chr", PATH], ["fifo", PATH],
                           ["hostfile", PATH, HOST_PATH], ["raw", NAME, TEXT]]}],
   "config": {"Env": [...], "WorkingDir": "/w", "User": "0"}, "tag": "latest"}
"raw" keeps NAME exactly as given (for hostile names); "tamper" stores a layer whose bytes
differ from the digest the manifest records (same size). Prints the manifest digest.
Python standard library only, plus the zstd command for zstd layers."""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def layer_tar(entries):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for ent in entries:
            kind, path = ent[0], ent[1]
            ti = tarfile.TarInfo(path if kind == "raw" else path.lstrip("/"))
            ti.mtime = 1700000000
            data = None
            if kind in ("file", "raw"):
                data = ent[2].encode()
                ti.mode = ent[3] if len(ent) > 3 else 0o644
            elif kind == "hostfile":
                with open(ent[2], "rb") as f:
                    data = f.read()
                ti.mode = 0o755
            elif kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, ent[2]
            elif kind == "hardlink":
                ti.type, ti.linkname = tarfile.LNKTYPE, ent[2]
            elif kind == "chr":
                ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            else:
                raise SystemExit("unknown entry kind " + kind)
            if data is not None:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                tf.addfile(ti)
    return bio.getvalue()


def compress(data, how):
    if how == "gzip":
        return gzip.compress(data, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=data, check=True,
                              stdout=subprocess.PIPE).stdout
    return data


def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    blobs = {}

    def put(data):
        h = hashlib.sha256(data).hexdigest()
        blobs[h] = data
        return h

    media = {"gzip": "+gzip", "zstd": "+zstd", "none": ""}
    layers, diff_ids = [], []
    for layer in spec["layers"]:
        raw = layer_tar(layer["entries"])
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
        how = layer.get("compress", "gzip")
        data = compress(raw, how)
        h = put(data)
        if layer.get("tamper"):
            # Same size, a file's data changed (it must hold "TAMPERME"; use with "none"):
            # a valid tar whose hash no longer matches the manifest.
            blobs[h] = data.replace(b"TAMPERME", b"TAMPERED", 1)
        layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" + media[how],
                       "digest": "sha256:" + h, "size": len(data)})
    config = {"architecture": "amd64", "os": "linux", "config": spec.get("config", {}),
              "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    cdata = json.dumps(config).encode()
    ch = put(cdata)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": "sha256:" + ch, "size": len(cdata)},
                "layers": layers}
    mdata = json.dumps(manifest).encode()
    mh = put(mdata)
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:" + mh, "size": len(mdata)}
    if spec.get("tag"):
        desc["annotations"] = {"org.opencontainers.image.ref.name": spec["tag"]}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps({"schemaVersion": 2, "manifests": [desc]}).encode()}
    for h, data in blobs.items():
        files["blobs/sha256/" + h] = data
    if out.endswith(".tar"):
        with tarfile.open(out, "w") as tf:
            for name, data in files.items():
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    else:
        for name, data in files.items():
            path = os.path.join(out, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
    print("sha256:" + mh)


if __name__ == "__main__":
    main()
