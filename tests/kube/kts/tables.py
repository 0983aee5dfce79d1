"""meta.k8s.io/v1 Table answers (what `kubectl get` asks for), from printer columns."""
import datetime
import re

from .controller import parse_time


def human_duration(seconds):
    """Kubernetes' short age format: 45s, 5m, 3h, 2d."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 3 * 3600:
        return f"{s // 60}m"
    if s < 48 * 3600:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


JSONPATH_TOKEN = re.compile(r"\.([A-Za-z0-9_-]+)"
                            r"|\[\?\(@\.([A-Za-z0-9_-]+)==['\"]([^'\"]*)['\"]\)\]"
                            r"|\[(\d+)\]")


def jsonpath(obj, path):
    """The subset printer columns use: .a.b, [N], [?(@.k=='v')]."""
    cur = [obj]
    for tok in JSONPATH_TOKEN.findall(path):
        field, fk, fv, idx = tok
        nxt = []
        for c in cur:
            if field:
                if isinstance(c, dict) and field in c:
                    nxt.append(c[field])
            elif fk:
                if isinstance(c, list):
                    nxt.extend(x for x in c if isinstance(x, dict) and str(x.get(fk)) == fv)
            elif isinstance(c, list) and int(idx) < len(c):
                nxt.append(c[int(idx)])
        cur = nxt
    return cur


def _cell(obj, col):
    vals = jsonpath(obj, col["jsonPath"])
    if not vals:
        return None
    v = vals[0]
    if col.get("type") == "date":
        t = parse_time(v) if isinstance(v, str) else None
        return human_duration(datetime.datetime.now().timestamp() - t) if t else None
    if isinstance(v, (dict, list)):
        return str(v)
    return v


def partial(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"]}


def table(objs, columns, rv, include_object="Metadata"):
    """columns: printer columns (name, type, jsonPath); a Name column comes first."""
    defs = [{"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": "Name must be unique within a namespace."}]
    for c in columns:
        defs.append({"name": c["name"], "type": c.get("type", "string"),
                     "format": c.get("format", ""), "priority": c.get("priority", 0),
                     "description": c.get("description", "")})
    rows = []
    for o in objs:
        row = {"cells": [o["metadata"]["name"]] + [_cell(o, c) for c in columns]}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial(o)
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
            "columnDefinitions": defs, "rows": rows}


def wants_table(accept):
    return "as=Table" in (accept or "")
