"""NetworkPolicy (networking.k8s.io/v1) validation as the API server applies it
(ValidateNetworkPolicy): the pod selector, policy types, each rule's ports (protocol, port,
endPort) and peers (a pod and/or namespace selector, or an ipBlock alone, with a valid CIDR
and exceptions strictly inside it). 422 Invalid with the API server's field paths."""
import ipaddress
import re

PROTOCOLS = ("SCTP", "TCP", "UDP")
POLICY_TYPES = ("Egress", "Ingress")
OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")
# Label keys ([prefix/]name) and values, as metav1 validation checks them.
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def _supported(values):
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def _label_key_ok(k):
    if not isinstance(k, str):
        return False
    prefix, _, name = k.rpartition("/")
    if prefix and (len(prefix) > 253 or not LABEL_PREFIX.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(LABEL_NAME.match(name))


def _label_value_ok(v):
    return isinstance(v, str) and (v == "" or (len(v) <= 63 and bool(LABEL_NAME.match(v))))


def _selector(sel, path, errs, E):
    if sel is None:
        return
    if not isinstance(sel, dict):
        errs.append(E(path, "Invalid value", "must be a label selector", sel))
        return
    for k, v in (sel.get("matchLabels") or {}).items():
        if not _label_key_ok(k):
            errs.append(E(f"{path}.matchLabels", "Invalid value",
                          "name part must consist of alphanumeric characters, '-', '_' or '.', "
                          "and must start and end with an alphanumeric character", k))
        if not _label_value_ok(v):
            errs.append(E(f"{path}.matchLabels", "Invalid value",
                          "a valid label must be an empty string or consist of alphanumeric "
                          "characters, '-', '_' or '.', and must start and end with an "
                          "alphanumeric character", v))
    for i, ex in enumerate(sel.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        op = ex.get("operator") if isinstance(ex, dict) else None
        if op not in OPERATORS:
            errs.append(E(f"{p}.operator", "Unsupported value", _supported(OPERATORS), op))
            continue
        vals = ex.get("values") or []
        if op in ("In", "NotIn") and not vals:
            errs.append(E(f"{p}.values", "Required value",
                          "must be specified when `operator` is 'In' or 'NotIn'"))
        if op in ("Exists", "DoesNotExist") and vals:
            errs.append(E(f"{p}.values", "Forbidden",
                          "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        if not _label_key_ok(ex.get("key")):
            errs.append(E(f"{p}.key", "Invalid value",
                          "name part must consist of alphanumeric characters, '-', '_' or '.', "
                          "and must start and end with an alphanumeric character",
                          ex.get("key")))


def _cidr(text):
    try:
        return ipaddress.ip_network(text, strict=False) if isinstance(text, str) and \
            "/" in text else None
    except ValueError:
        return None


def _ports(ports, path, errs, E):
    for i, p in enumerate(ports or []):
        pp = f"{path}[{i}]"
        if not isinstance(p, dict):
            continue
        proto = p.get("protocol", "TCP")
        if proto not in PROTOCOLS:
            errs.append(E(f"{pp}.protocol", "Unsupported value", _supported(PROTOCOLS), proto))
        port = p.get("port")
        if isinstance(port, bool) or (port is not None and not isinstance(port, (int, str))):
            errs.append(E(f"{pp}.port", "Invalid value", "must be an integer or a name", port))
        elif isinstance(port, int) and not 1 <= port <= 65535:
            errs.append(E(f"{pp}.port", "Invalid value",
                          "must be between 1 and 65535, inclusive", port))
        elif isinstance(port, str) and (len(port) > 15 or not SVC_NAME.match(port) or
                                        not re.search("[a-z]", port) or "--" in port):
            errs.append(E(f"{pp}.port", "Invalid value",
                          "must contain only alpha-numeric characters (a-z, 0-9), and hyphens "
                          "(-)", port))
        end = p.get("endPort")
        if end is not None:
            if not isinstance(port, int):
                errs.append(E(f"{pp}.endPort", "Required value",
                              "may not be specified when `port` is non-numeric"))
            elif not isinstance(end, int) or end < port:
                errs.append(E(f"{pp}.endPort", "Invalid value",
                              "must be greater than or equal to `port`", end))


def _peers(peers, path, errs, E):
    for i, peer in enumerate(peers or []):
        pp = f"{path}[{i}]"
        if not isinstance(peer, dict):
            continue
        n = sum(1 for k in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(k)
                is not None)
        if n == 0:
            errs.append(E(pp, "Required value", "must specify a peer"))
            continue
        if peer.get("ipBlock") is not None and n > 1:
            errs.append(E(pp, "Forbidden", "may not specify both ipBlock and another peer"))
            continue
        _selector(peer.get("podSelector"), f"{pp}.podSelector", errs, E)
        _selector(peer.get("namespaceSelector"), f"{pp}.namespaceSelector", errs, E)
        block = peer.get("ipBlock")
        if block is None:
            continue
        net = _cidr(block.get("cidr"))
        if not block.get("cidr"):
            errs.append(E(f"{pp}.ipBlock.cidr", "Required value", ""))
            continue
        if net is None:
            errs.append(E(f"{pp}.ipBlock.cidr", "Invalid value",
                          "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                          block.get("cidr")))
            continue
        for j, ex in enumerate(block.get("except") or []):
            sub = _cidr(ex)
            if sub is None:
                errs.append(E(f"{pp}.ipBlock.except[{j}]", "Invalid value",
                              "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                              ex))
            elif sub.version != net.version or not sub.subnet_of(net) or \
                    sub.prefixlen <= net.prefixlen:
                errs.append(E(f"{pp}.ipBlock.except[{j}]", "Invalid value",
                              "must be a strict subset of `cidr`", ex))


def validate(obj):
    from .generic import FieldError as E   # noqa: N813 (generic imports this module)
    errs = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [E("spec", "Required value", "")]
    _selector(spec.get("podSelector") if "podSelector" in spec else {}, "spec.podSelector",
              errs, E)
    types = spec.get("policyTypes") or []
    if len(types) > 2:
        errs.append(E("spec.policyTypes", "Invalid value", "may not specify more than two "
                      "policyTypes", types))
    for i, t in enumerate(types):
        if t not in POLICY_TYPES:
            errs.append(E(f"spec.policyTypes[{i}]", "Unsupported value",
                          _supported(POLICY_TYPES), t))
    for key, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(key) or []):
            if not isinstance(rule, dict):
                continue
            _ports(rule.get("ports"), f"spec.{key}[{i}].ports", errs, E)
            _peers(rule.get(peers), f"spec.{key}[{i}].{peers}", errs, E)
    return errs
