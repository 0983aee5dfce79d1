"""Label and field selectors (the equality and set-based forms kubectl and client-go send)."""
import re


class SelectorError(Exception):
    pass


def _split(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _term(t, get):
    m = re.match(r"^(\S+?)\s+(in|notin)\s+\((.*)\)$", t)
    if m:
        key, op, vals = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
        if op == "in":
            return lambda o: get(o, key) in vals
        return lambda o: get(o, key) not in vals
    m = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", t)
    if m:
        key, op, val = m.group(1).strip(), m.group(2), m.group(3).strip()
        if op == "!=":
            return lambda o: get(o, key) != val
        return lambda o: get(o, key) == val
    if t.startswith("!"):
        key = t[1:].strip()
        return lambda o: get(o, key) is None
    if re.match(r"^[A-Za-z0-9._/-]+$", t):
        return lambda o: get(o, t) is not None
    raise SelectorError(f"unable to parse requirement: {t!r}")


def _label(o, key):
    return ((o.get("metadata") or {}).get("labels") or {}).get(key)


FIELDS = {"metadata.name": lambda o: o["metadata"].get("name"),
          "metadata.namespace": lambda o: o["metadata"].get("namespace")}
# An Event's own field selectors (kubectl describe and sbx ask for a claim's events by them).
for _f in ("kind", "name", "namespace", "uid"):
    FIELDS["involvedObject." + _f] = lambda o, f=_f: (o.get("involvedObject") or {}).get(f)


def _field(o, key):
    if key not in FIELDS:
        raise SelectorError(f'field label not supported: {key}')
    return FIELDS[key](o)


def matcher(label_selector, field_selector):
    """A predicate on objects; raises SelectorError on a selector it cannot parse."""
    preds = [_term(t, _label) for t in _split(label_selector or "")]
    for t in _split(field_selector or ""):
        key = re.split(r"!=|==|=", t)[0].strip()
        if key not in FIELDS:
            raise SelectorError(f'"{key}" is not a known field selector: only ' +
                                ", ".join(f'"{k}"' for k in FIELDS))
        preds.append(_term(t, _field))
    return lambda o: all(p(o) for p in preds)
