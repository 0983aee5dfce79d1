"""PersistentVolumeClaims made from a Sandbox's volumeClaimTemplates, as the Agent Sandbox
controller makes them (name TEMPLATE-SANDBOX, the template's labels and annotations, the
sandbox-name-hash label, owned by the Sandbox), bound at once to a volume of the default
StorageClass, or left Pending with a Warning Event (a StorageClass the cluster does not have,
or the pvc_pending knob). A claim's data lives in a directory of the server's own that
outlives the pod: the controller saves the home there when it suspends a Sandbox and puts it
back when the Sandbox runs again, so the home comes back as from a volume."""
import copy
import os
import shutil
import uuid

from .store import now_rfc3339

# The StorageClass every claim without storageClassName gets (a cluster's default one).
DEFAULT_CLASS = "standard"
# The label the controller puts on every PVC and pod of a Sandbox (an FNV-1a hash of its name).
NAME_HASH_LABEL = "agents.x-k8s.io/sandbox-name-hash"
# What keeps a claim in use from going away (the API server's pvc-protection finalizer).
PROTECTION = "kubernetes.io/pvc-protection"


def name_hash(name):
    """The 32-bit FNV-1a hash of name as 8 hex digits, as the controller labels its objects."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def suspended(obj):
    """Whether the Sandbox asks to be suspended: operatingMode Suspended (v1beta1) or
    replicas 0 (v1alpha1, which the conversion maps to Suspended)."""
    spec = obj.get("spec") or {}
    return spec.get("operatingMode") == "Suspended" or spec.get("replicas") == 0


def templates(obj):
    return [t for t in (obj.get("spec") or {}).get("volumeClaimTemplates") or []
            if isinstance(t, dict) and (t.get("metadata") or {}).get("name")]


def claim_name(template, sandbox_name):
    return f"{template['metadata']['name']}-{sandbox_name}"


def pod_volumes(obj):
    """The pod template's spec with a persistentVolumeClaim volume per template, replacing a
    volume of the same name (as the controller merges them), and [(claim, mountPath)] of the
    first container's mounts of them."""
    spec = copy.deepcopy(((obj.get("spec") or {}).get("podTemplate") or {}).get("spec") or {})
    name = obj["metadata"]["name"]
    tmpl = {t["metadata"]["name"]: claim_name(t, name) for t in templates(obj)}
    if not tmpl:
        return spec, []
    vols = [v for v in spec.get("volumes") or [] if v.get("name") not in tmpl]
    vols += [{"name": t, "persistentVolumeClaim": {"claimName": c}} for t, c in tmpl.items()]
    spec["volumes"] = vols
    mounts = []
    for c in (spec.get("containers") or [])[:1]:
        for m in c.get("volumeMounts") or []:
            if m.get("name") in tmpl and m.get("mountPath"):
                mounts.append((tmpl[m["name"]], m["mountPath"]))
    return spec, mounts


class Claims:
    """The claims of Sandboxes: their objects (in the generic stores) and their data."""

    def __init__(self, ctx, root):
        self.ctx = ctx
        self.root = root

    def _pvcs(self):
        return self.ctx.generic_stores[("", "persistentvolumeclaims")]

    def _events(self):
        return self.ctx.generic_stores[("", "events")]

    def data(self, ns, claim):
        """Where claim's data is kept (a directory or file the backend chooses inside it)."""
        return os.path.join(self.root, ns, claim)

    def _event(self, pvc, reason, message):
        ns, name = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
        t = now_rfc3339()
        self._events().create({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                               "name": name, "namespace": ns,
                               "uid": pvc["metadata"]["uid"]},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
            "firstTimestamp": t, "lastTimestamp": t,
            "source": {"component": "persistentvolume-controller"},
            "reportingComponent": "persistentvolume-controller"})

    def ensure(self, obj):
        """Makes the Sandbox's claims that do not exist yet; returns the names of those that
        are Pending (the pod cannot be scheduled while one is)."""
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        pending = []
        for t in templates(obj):
            cname = claim_name(t, name)
            live = self._pvcs().get(ns, cname)
            if live is None:
                live = self._make(obj, t, cname)
            if (live.get("status") or {}).get("phase") != "Bound":
                pending.append(cname)
        return pending

    def _make(self, obj, t, cname):
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        meta = t.get("metadata") or {}
        spec = copy.deepcopy(t.get("spec") or {})
        spec.setdefault("volumeMode", "Filesystem")
        cls = spec.setdefault("storageClassName", DEFAULT_CLASS)
        labels = dict(meta.get("labels") or {})
        labels[NAME_HASH_LABEL] = name_hash(name)
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": cname, "namespace": ns, "labels": labels,
                            "finalizers": [PROTECTION],
                            "ownerReferences": [{
                                "apiVersion": obj["apiVersion"], "kind": "Sandbox",
                                "name": name, "uid": obj["metadata"]["uid"],
                                "controller": True, "blockOwnerDeletion": True}]},
               "spec": spec}
        if meta.get("annotations"):
            pvc["metadata"]["annotations"] = dict(meta["annotations"])
        fault = self.ctx.faults.pvc_pending
        known = self.ctx.generic_stores[("storage.k8s.io", "storageclasses")].get("", cls)
        if fault or known is None:
            pvc["status"] = {"phase": "Pending"}
            created = self._pvcs().create(pvc)
            if fault:
                self._event(created, fault[0], fault[1])
            else:
                self._event(created, "ProvisioningFailed",
                            f'storageclass.storage.k8s.io "{cls}" not found')
            return created
        spec["volumeName"] = "pvc-" + str(uuid.uuid4())
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        pvc["status"] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or []),
                         "capacity": {"storage": size}}
        os.makedirs(self.data(ns, cname), exist_ok=True)
        return self._pvcs().create(pvc)

    def forget(self, obj):
        """Drops the data of a deleted Sandbox's claims (the garbage collector deleted them)."""
        for t in templates(obj):
            shutil.rmtree(self.data(obj["metadata"]["namespace"],
                                    claim_name(t, obj["metadata"]["name"])), ignore_errors=True)


def default_classes():
    """The StorageClasses every cluster of this server has: one default class."""
    return [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": DEFAULT_CLASS, "namespace": "",
                          "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
             "provisioner": "kube-test-server/hostpath", "reclaimPolicy": "Delete",
             "volumeBindingMode": "Immediate"}]
