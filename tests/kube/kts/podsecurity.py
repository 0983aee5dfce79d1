"""Pod Security admission: the Pod Security Standards (baseline, restricted) as the Kubernetes
documentation defines them (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
applied to pods in namespaces labelled pod-security.kubernetes.io/enforce (403 Forbidden) or
.../warn (a Warning header), worded as the API server's pod-security admission words them:

    pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation
    != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ...

Each check gives (reason, detail); the checks of a level run in the order of their ids, a
restricted check replacing the baseline one it tightens (capabilities, seccompProfile,
volumes). Windows-only fields are not modelled; hostProcess is refused like the rest."""

LABEL = "pod-security.kubernetes.io/"
LEVELS = ("privileged", "baseline", "restricted")
# Capabilities a baseline container may add (the container runtimes' defaults less NET_RAW).
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_CAPS = {"NET_BIND_SERVICE"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
                "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}
# Keys of a volume that are not its type.
VOLUME_META = {"name"}


def quote(names):
    return ", ".join(f'"{n}"' for n in names)


def plural(one, many, n):
    return one if n == 1 else many


def containers(spec):
    """(kind, container) for init, regular and ephemeral containers, in that order."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


def sc(obj):
    v = obj.get("securityContext")
    return v if isinstance(v, dict) else {}


def _who(names):
    return f'{plural("container", "containers", len(names))} {quote(names)}'


# ---- baseline ----

def host_namespaces(spec):
    bad = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(bad)) if bad else None


def privileged(spec):
    bad = [c.get("name", "") for c in containers(spec) if sc(c).get("privileged") is True]
    return ("privileged", f"{_who(bad)} must not set securityContext.privileged=true") \
        if bad else None


def _added(c):
    caps = sc(c).get("capabilities")
    return [x for x in (caps or {}).get("add") or [] if isinstance(x, str)] \
        if isinstance(caps, dict) else []


def capabilities_baseline(spec):
    bad, caps = [], []
    for c in containers(spec):
        extra = [x for x in _added(c) if x not in BASELINE_CAPS]
        if extra:
            bad.append(c.get("name", ""))
            caps += [x for x in extra if x not in caps]
    if not bad:
        return None
    return ("non-default capabilities",
            f"{_who(bad)} must not include {quote(caps)} in securityContext.capabilities.add")


def host_path_volumes(spec):
    bad = [v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict) and
           "hostPath" in v]
    return ("hostPath volumes", f'{plural("volume", "volumes", len(bad))} {quote(bad)}') \
        if bad else None


def host_ports(spec):
    bad, ports = [], []
    for c in containers(spec):
        hp = [str(p.get("hostPort")) for p in c.get("ports") or []
              if isinstance(p, dict) and p.get("hostPort")]
        if hp:
            bad.append(c.get("name", ""))
            ports += [p for p in hp if p not in ports]
    if not bad:
        return None
    many = len(bad) > 1
    return ("hostPort", f'{_who(bad)} {"use" if many else "uses"} '
            f'{plural("hostPort", "hostPorts", len(ports))} {", ".join(ports)}')


def host_process(spec):
    bad = [c.get("name", "") for c in containers(spec)
           if (sc(c).get("windowsOptions") or {}).get("hostProcess") is True]
    pod = (sc(spec).get("windowsOptions") or {}).get("hostProcess") is True
    if not bad and not pod:
        return None
    who = " and ".join((["pod"] if pod else []) + ([_who(bad)] if bad else []))
    return ("hostProcess", f"{who} must not set securityContext.windowsOptions.hostProcess=true")


def proc_mount(spec):
    bad, vals = [], []
    for c in containers(spec):
        pm = sc(c).get("procMount")
        if pm not in (None, "", "Default"):
            bad.append(c.get("name", ""))
            vals.append(pm)
    if not bad:
        return None
    return ("procMount", f"{_who(bad)} must not set securityContext.procMount to {quote(vals)}")


def _seccomp_type(obj):
    p = sc(obj).get("seccompProfile")
    return p.get("type") if isinstance(p, dict) else None


def seccomp_baseline(spec):
    out = []
    if _seccomp_type(spec) == "Unconfined":
        out.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    bad = [c.get("name", "") for c in containers(spec) if _seccomp_type(c) == "Unconfined"]
    if bad:
        out.append(f'{_who(bad)} must not set securityContext.seccompProfile.type to '
                   '"Unconfined"')
    return ("seccompProfile", "; ".join(out)) if out else None


def se_linux(spec):
    def bad_opts(o):
        o = sc(o).get("seLinuxOptions")
        if not isinstance(o, dict):
            return False
        return o.get("type") not in (None, "", "container_t", "container_init_t",
                                     "container_kvm_t", "container_engine_t") or \
            o.get("user") not in (None, "") or o.get("role") not in (None, "")
    pod = bad_opts(spec)
    bad = [c.get("name", "") for c in containers(spec) if bad_opts(c)]
    if not pod and not bad:
        return None
    who = " and ".join((["pod"] if pod else []) + ([_who(bad)] if bad else []))
    return ("seLinuxOptions", f"{who} set forbidden securityContext.seLinuxOptions")


def sysctls(spec):
    bad = [s.get("name", "") for s in sc(spec).get("sysctls") or []
           if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


# ---- restricted ----

def allow_privilege_escalation(spec):
    bad = [c.get("name", "") for c in containers(spec)
           if sc(c).get("allowPrivilegeEscalation") is not False]
    return ("allowPrivilegeEscalation != false",
            f"{_who(bad)} must set securityContext.allowPrivilegeEscalation=false") \
        if bad else None


def capabilities_restricted(spec):
    no_drop, adders, caps = [], [], []
    for c in containers(spec):
        capsobj = sc(c).get("capabilities")
        drop = (capsobj or {}).get("drop") if isinstance(capsobj, dict) else None
        if not isinstance(drop, list) or "ALL" not in drop:
            no_drop.append(c.get("name", ""))
        extra = [x for x in _added(c) if x not in RESTRICTED_CAPS]
        if extra:
            adders.append(c.get("name", ""))
            caps += [x for x in extra if x not in caps]
    out = []
    if no_drop:
        out.append(f'{_who(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adders:
        out.append(f"{_who(adders)} must not include {quote(caps)} in "
                   "securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(out)) if out else None


def restricted_volumes(spec):
    bad, types = [], []
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        kinds = [k for k in v if k not in VOLUME_META]
        wrong = [k for k in kinds if k not in RESTRICTED_VOLUMES]
        if wrong:
            bad.append(v.get("name", ""))
            types += [k for k in wrong if k not in types]
    if not bad:
        return None
    many = len(bad) > 1
    return ("restricted volume types",
            f'{plural("volume", "volumes", len(bad))} {quote(bad)} {"use" if many else "uses"} '
            f'restricted volume {plural("type", "types", len(types))} {quote(types)}')


def run_as_non_root(spec):
    pod = sc(spec).get("runAsNonRoot")
    out, explicit, implicit = [], [], []
    if pod is False:
        out.append("pod must not set securityContext.runAsNonRoot=false")
    for c in containers(spec):
        v = sc(c).get("runAsNonRoot")
        if v is False:
            explicit.append(c.get("name", ""))
        elif v is None and pod is not True:
            implicit.append(c.get("name", ""))
    if explicit:
        out.append(f"{_who(explicit)} must not set securityContext.runAsNonRoot=false")
    if implicit and pod is None:
        out.append(f"pod or {_who(implicit)} must set securityContext.runAsNonRoot=true")
    return ("runAsNonRoot != true", "; ".join(out)) if out else None


def run_as_user(spec):
    pod = sc(spec).get("runAsUser") == 0
    bad = [c.get("name", "") for c in containers(spec) if sc(c).get("runAsUser") == 0]
    if not pod and not bad:
        return None
    who = " and ".join((["pod"] if pod else []) + ([_who(bad)] if bad else []))
    return ("runAsUser=0", f"{who} must not set runAsUser=0")


def seccomp_restricted(spec):
    ok = ("RuntimeDefault", "Localhost")
    pod = _seccomp_type(spec)
    out, explicit, vals, implicit = [], [], [], []
    if pod is not None and pod not in ok:
        out.append(f'pod must not set securityContext.seccompProfile.type to "{pod}"')
    for c in containers(spec):
        t = _seccomp_type(c)
        if t is not None and t not in ok:
            explicit.append(c.get("name", ""))
            vals += [t] if t not in vals else []
        elif t is None and pod is None:
            implicit.append(c.get("name", ""))
    if explicit:
        out.append(f"{_who(explicit)} must not set securityContext.seccompProfile.type to "
                   f"{quote(vals)}")
    if implicit:
        out.append(f'pod or {_who(implicit)} must set securityContext.seccompProfile.type to '
                   '"RuntimeDefault" or "Localhost"')
    return ("seccompProfile", "; ".join(out)) if out else None


# (id, level, check, id it replaces at the stricter level)
CHECKS = [
    ("allowPrivilegeEscalation", "restricted", allow_privilege_escalation, None),
    ("capabilities_baseline", "baseline", capabilities_baseline, None),
    ("capabilities_restricted", "restricted", capabilities_restricted, "capabilities_baseline"),
    ("hostNamespaces", "baseline", host_namespaces, None),
    ("hostPathVolumes", "baseline", host_path_volumes, None),
    ("hostPorts", "baseline", host_ports, None),
    ("hostProcess", "baseline", host_process, None),
    ("privileged", "baseline", privileged, None),
    ("procMount", "baseline", proc_mount, None),
    ("restrictedVolumes", "restricted", restricted_volumes, "hostPathVolumes"),
    ("runAsNonRoot", "restricted", run_as_non_root, None),
    ("runAsUser", "restricted", run_as_user, None),
    ("seLinuxOptions", "baseline", se_linux, None),
    ("seccompProfile_baseline", "baseline", seccomp_baseline, None),
    ("seccompProfile_restricted", "restricted", seccomp_restricted, "seccompProfile_baseline"),
    ("sysctls", "baseline", sysctls, None),
]


def violations(level, spec):
    """[(reason, detail)] of the pod spec at a level."""
    if level not in ("baseline", "restricted"):
        return []
    active = [c for c in CHECKS if c[1] == "baseline" or level == "restricted"]
    replaced = {c[3] for c in active if c[3]}
    out = []
    for cid, _, fn, _ in active:
        if cid in replaced:
            continue
        r = fn(spec if isinstance(spec, dict) else {})
        if r:
            out.append(r)
    return out


def policy(ns_labels, mode):
    """(level, version) of a namespace for mode enforce|warn|audit, or None."""
    labels = ns_labels or {}
    level = labels.get(LABEL + mode)
    if level not in ("baseline", "restricted"):
        return None
    return level, labels.get(LABEL + mode + "-version") or "latest"


def message(level, version, found):
    """'violates PodSecurity "restricted:latest": reason (detail), ...'"""
    parts = ", ".join(f"{r} ({d})" if d else r for r, d in found)
    return f'violates PodSecurity "{level}:{version}": {parts}'


def check(ns_labels, spec):
    """(forbidden message or None, [warning texts]) for a pod spec in a namespace."""
    forbidden = None
    enforce = policy(ns_labels, "enforce")
    if enforce:
        found = violations(enforce[0], spec)
        if found:
            forbidden = message(enforce[0], enforce[1], found)
    warnings = []
    warn = policy(ns_labels, "warn")
    if warn:
        found = violations(warn[0], spec)
        if found:
            warnings.append("would " + message(warn[0], warn[1], found))
    return forbidden, warnings


def bad_label(ns_labels):
    """A namespace label value the admission plugin refuses, as (key, value), else None."""
    for k, v in (ns_labels or {}).items():
        if not k.startswith(LABEL):
            continue
        mode = k[len(LABEL):]
        if mode in ("enforce", "warn", "audit") and v not in LEVELS:
            return k, v
    return None
