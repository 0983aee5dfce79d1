"""The Sandbox CustomResourceDefinition and an openAPIV3Schema checker that behaves like the
API server's: defaults are applied, nulls and unknown fields pruned (reported for strict field
validation), and types, required, enum, pattern, lengths, bounds and int-or-string checked.
CEL rules (x-kubernetes-validations) are not evaluated, but for one shape the server
recognises: a field's immutability rule on an object property (transition_errors). Not covered:
other CEL rules and list-type uniqueness."""
import copy
import json
import os
import re

import yaml

CRD_FILE = "agents.x-k8s.io_sandboxes.yaml"
CRD_ENV = "SBX_SANDBOX_CRD"
# metadata.name of a custom resource: a DNS-1123 subdomain.
NAME_MAX = 253
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE_MAX = 63


# The copy shipped in the repository, with its licence (third_party/agent-sandbox/).
CRD_DIR = os.path.join("third_party", "agent-sandbox")


def crd_path(repo_top):
    """The CRD file: $SBX_SANDBOX_CRD, else the repository's own copy."""
    env = os.environ.get(CRD_ENV)
    if env:
        return env
    return os.path.join(repo_top, CRD_DIR, CRD_FILE)


class FieldError:
    """One cause of a 422, as metav1.StatusCause."""

    def __init__(self, path, reason, message):
        self.path, self.reason, self.message = path, reason, message

    def text(self):
        return f"{self.path}: {self.message}" if self.path else self.message

    def cause(self):
        return {"reason": self.reason, "message": self.message, "field": self.path}


def go_value(v):
    """A value as Go's %v/%q would show it in a validation message."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _has_type(v, t):
    got = _type_name(v)
    return got == t or (t == "number" and got == "integer")


class Checker:
    """Walks one object against one schema, mutating it (defaults, pruning)."""

    def __init__(self):
        self.errors = []
        self.unknown = []

    def err(self, path, reason, message):
        self.errors.append(FieldError(path, reason, message))

    def check(self, v, s, path):
        if s.get("x-kubernetes-int-or-string"):
            if not isinstance(v, (int, str)) or isinstance(v, bool):
                self.err(path, "FieldValueTypeInvalid",
                         f"Invalid value: {go_value(v)}: {path} in body must be of type "
                         f"integer-or-string: {go_value(_type_name(v))}")
            return
        if "anyOf" in s and not any(self._quiet_ok(v, alt) for alt in s["anyOf"]):
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     "must match at least one schema in anyOf")
            return
        t = s.get("type")
        if t and not _has_type(v, t):
            self.err(path, "FieldValueTypeInvalid",
                     f"Invalid value: {go_value(_type_name(v))}: {path} in body must be of type "
                     f"{t}: {go_value(_type_name(v))}")
            return
        if "enum" in s and v not in s["enum"]:
            allowed = ", ".join(go_value(e) for e in s["enum"])
            self.err(path, "FieldValueNotSupported",
                     f"Unsupported value: {go_value(v)}: supported values: {allowed}")
        if isinstance(v, str):
            self._string(v, s, path)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            self._number(v, s, path)
        elif isinstance(v, list):
            self._array(v, s, path)
        elif isinstance(v, dict):
            self._object(v, s, path)

    def _quiet_ok(self, v, s):
        sub = Checker()
        sub.check(copy.deepcopy(v), s, "")
        return not sub.errors

    def _string(self, v, s, path):
        if "maxLength" in s and len(v) > s["maxLength"]:
            self.err(path, "FieldValueTooLong",
                     f"Too long: may not be longer than {s['maxLength']}")
        if "minLength" in s and len(v) < s["minLength"]:
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     f"should be at least {s['minLength']} chars long")
        if "pattern" in s and not re.search(s["pattern"], v):
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     f"should match '{s['pattern']}'")
        if s.get("format") == "date-time" and not re.match(
                r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", v):
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     "must be of type date-time: " + go_value(v))

    def _number(self, v, s, path):
        if "minimum" in s and v < s["minimum"]:
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     f"should be greater than or equal to {s['minimum']}")
        if "maximum" in s and v > s["maximum"]:
            self.err(path, "FieldValueInvalid", f"Invalid value: {go_value(v)}: {path} in body "
                     f"should be less than or equal to {s['maximum']}")

    def _array(self, v, s, path):
        if "maxItems" in s and len(v) > s["maxItems"]:
            self.err(path, "FieldValueTooMany", f"Too many: {len(v)}: must have at most "
                     f"{s['maxItems']} items")
        items = s.get("items")
        if items is None:
            return
        for i in range(len(v)):
            if v[i] is None and not items.get("nullable"):
                self.err(f"{path}[{i}]", "FieldValueTypeInvalid",
                         f"Invalid value: \"null\": {path}[{i}] in body must be of type "
                         f"{items.get('type', 'object')}: \"null\"")
                continue
            v[i] = self._defaults(v[i], items)
            self.check(v[i], items, f"{path}[{i}]")

    def _object(self, v, s, path):
        props = s.get("properties")
        addl = s.get("additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields", False)
        embedded = s.get("x-kubernetes-embedded-resource", False)
        for k in list(v):
            sub = props.get(k) if props else None
            kp = f"{path}.{k}" if path else k
            if sub is None and isinstance(addl, dict):
                sub = addl
            if sub is None:
                if embedded and k in ("apiVersion", "kind", "metadata"):
                    continue
                if addl is False:
                    self.err(kp, "FieldValueForbidden", "Forbidden: field not declared in schema")
                elif not preserve and (props is not None or addl is None):
                    self.unknown.append(kp)
                    del v[k]
                continue
            if v[k] is None and not sub.get("nullable"):
                del v[k]          # the API server prunes nulls of non-nullable fields
                continue
            v[k] = self._defaults(v[k], sub)
            self.check(v[k], sub, kp)
        for k in s.get("required", []):
            if k not in v:
                self.err(f"{path}.{k}" if path else k, "FieldValueRequired", "Required value")

    @staticmethod
    def _defaults(v, s):
        if isinstance(v, dict) and "properties" in s:
            for k, sub in s["properties"].items():
                if k not in v and "default" in sub:
                    v[k] = copy.deepcopy(sub["default"])
        return v


def check_metadata(meta, errors, require_name=True):
    """metadata rules the API server applies to every custom resource."""
    if not isinstance(meta, dict):
        errors.append(FieldError("metadata", "FieldValueTypeInvalid",
                                 "Invalid value: metadata: must be an object"))
        return
    name = meta.get("name")
    if name is None or name == "":
        if require_name and not meta.get("generateName"):
            errors.append(FieldError("metadata.name", "FieldValueRequired",
                                     "Required value: name or generateName is required"))
    elif not isinstance(name, str) or len(name) > NAME_MAX or not NAME_RE.match(name):
        errors.append(FieldError("metadata.name", "FieldValueInvalid",
                                 f"Invalid value: {go_value(name)}: a lowercase RFC 1123 subdomain "
                                 "must consist of lower case alphanumeric characters, '-' or '.', "
                                 "and must start and end with an alphanumeric character"))
    for field in ("labels", "annotations"):
        m = meta.get(field)
        if m is None:
            continue
        if not isinstance(m, dict) or not all(isinstance(x, str) for x in m.values()):
            errors.append(FieldError(f"metadata.{field}", "FieldValueTypeInvalid",
                                     f"Invalid value: metadata.{field}: must be a map of strings"))
        elif field == "labels":
            for k, x in m.items():
                if len(x) > LABEL_VALUE_MAX:
                    errors.append(FieldError("metadata.labels", "FieldValueInvalid",
                                             f"Invalid value: {go_value(x)}: must be no more than "
                                             f"{LABEL_VALUE_MAX} characters"))


# The transition rule that makes field F of an object immutable, as controller-gen writes it:
# has(self.F) == has(oldSelf.F) && (!has(self.F) || self.F == oldSelf.F)
IMMUTABLE_RULE = re.compile(r"^has\(self\.(\w+)\) == has\(oldSelf\.\1\) && \(!has\(self\.\1\) "
                            r"\|\| self\.\1 == oldSelf\.\1\)$")


class CRD:
    """The Sandbox CRD: versions, their schemas and printer columns."""

    def __init__(self, path):
        # libyaml's parser when PyYAML has it (Debian's does): the same documents, and this
        # 390 kB file in a seventh of the time, which every server start pays
        with open(path, encoding="utf-8") as f:
            d = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        spec = d["spec"]
        self.group = spec["group"]
        self.names = spec["names"]
        self.kind = self.names["kind"]
        self.plural = self.names["plural"]
        self.versions = {}
        self.storage = None
        for v in spec["versions"]:
            if not v.get("served", True):
                continue
            self.versions[v["name"]] = v
            if v.get("storage"):
                self.storage = v["name"]
        self.preferred = self.storage

    def schema(self, version):
        return self.versions[version]["schema"]["openAPIV3Schema"]

    def columns(self, version):
        return self.versions[version].get("additionalPrinterColumns", [])

    def transition_errors(self, old, new, version):
        """The immutability rules of the top-level properties (spec's volumeClaimTemplates)
        broken by an update from old to new (both defaulted), worded as the API server words
        a failed CEL rule."""
        errors = []
        props = self.schema(version).get("properties") or {}
        for top, sub in props.items():
            for rule in sub.get("x-kubernetes-validations") or []:
                m = IMMUTABLE_RULE.match(" ".join(str(rule.get("rule", "")).split()))
                o, n = old.get(top), new.get(top)
                if not m or not isinstance(o, dict) or not isinstance(n, dict):
                    continue
                f = m.group(1)
                if (f in o) != (f in n) or o.get(f) != n.get(f):
                    msg = rule.get("message") or f"failed rule: {rule.get('rule')}"
                    errors.append(FieldError(top, "FieldValueInvalid",
                                             f'Invalid value: "object": {msg}'))
        return errors

    def validate(self, obj, version, status_only=False):
        """Defaults and prunes obj in place; returns (errors, unknown_field_paths)."""
        c = Checker()
        s = self.schema(version)
        if status_only:
            st = obj.get("status")
            if st is not None:
                c.check(st, s["properties"].get("status", {}), "status")
            return c.errors, c.unknown
        meta = obj.get("metadata", {})
        check_metadata(meta, c.errors)
        top = dict(s)
        props = dict(top.get("properties", {}))
        props["metadata"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        top["properties"] = props
        Checker._defaults(obj, top)
        c.check(obj, top, "")
        return c.errors, c.unknown
