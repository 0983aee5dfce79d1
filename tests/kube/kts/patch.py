"""The patch formats the API server takes for custom resources."""
import copy


class PatchError(Exception):
    pass


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    for p in parts:
        if isinstance(doc, list):
            doc = doc[_index(doc, p, False)]
        elif isinstance(doc, dict) and p in doc:
            doc = doc[p]
        else:
            raise PatchError(f"path not found: /{'/'.join(parts)}")
    return doc


def _index(lst, p, adding):
    if adding and p == "-":
        return len(lst)
    try:
        i = int(p)
    except ValueError:
        raise PatchError(f"invalid array index {p!r}") from None
    if i < 0 or i > len(lst) - (0 if adding else 1):
        raise PatchError(f"array index {i} out of bounds")
    return i


def json_patch(doc, ops):
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch is an array of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError("each operation needs 'op' and 'path'")
        parts = _pointer(op["path"])
        kind = op["op"]
        if kind in ("move", "copy"):
            value = copy.deepcopy(_walk(doc, _pointer(op.get("from", ""))))
            if kind == "move":
                doc = json_patch(doc, [{"op": "remove", "path": op["from"]}])
            kind = "add"
        else:
            value = copy.deepcopy(op.get("value"))
        if kind == "test":
            if _walk(doc, parts) != value:
                raise PatchError(f"test failed at {op['path']}")
            continue
        if not parts:
            if kind in ("add", "replace"):
                doc = value
                continue
            raise PatchError("cannot remove the whole document")
        parent = _walk(doc, parts[:-1])
        last = parts[-1]
        if isinstance(parent, list):
            i = _index(parent, last, kind == "add")
            if kind == "add":
                parent.insert(i, value)
            elif kind == "remove":
                del parent[i]
            elif kind == "replace":
                parent[i] = value
            else:
                raise PatchError(f"unknown operation {kind!r}")
        elif isinstance(parent, dict):
            if kind == "add":
                parent[last] = value
            elif kind in ("remove", "replace"):
                if last not in parent:
                    raise PatchError(f"path not found: {op['path']}")
                if kind == "remove":
                    del parent[last]
                else:
                    parent[last] = value
            else:
                raise PatchError(f"unknown operation {kind!r}")
        else:
            raise PatchError(f"path not found: {op['path']}")
    return doc


def apply_patch(live, applied):
    """Server-side apply, simplified: the applied configuration's fields win, maps merge,
    lists are replaced; fields the configuration does not mention are kept."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = copy.deepcopy(live)
        for k, v in applied.items():
            out[k] = apply_patch(live.get(k), v)
        return out
    return copy.deepcopy(applied)
