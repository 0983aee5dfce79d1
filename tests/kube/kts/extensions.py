"""The Agent Sandbox extensions (group extensions.agents.x-k8s.io, from the vendored upstream
CRDs): SandboxTemplates (stored only), SandboxWarmPools and SandboxClaims, with their
controllers played as upstream's extensions/controllers behave:

- a WarmPool keeps spec.replicas Sandboxes of its template (generateName POOL-, owned by the
  pool, labelled agents.x-k8s.io/warm-pool-sandbox), status replicas, readyReplicas, selector;
- a Claim (v1beta1 spec.warmPoolRef; v1alpha1 spec.warmpool with sandboxTemplateRef) adopts a
  ready Sandbox of its pool (ownership moved to the claim, pool label removed; the pool makes
  another) or, the pool empty, creates one named as the claim from the pool's template; it
  records status.sandbox.name (and the agents.x-k8s.io/sandbox-name annotation) and mirrors
  the Sandbox's Ready condition; at spec.lifecycle.shutdownTime policy Delete deletes the
  claim, Retain deletes its Sandbox and keeps the claim with Ready=False ClaimExpired. The
  claim's shutdownTime is its own: never copied to the Sandbox.
Deleting a pool or a claim deletes the Sandboxes it owns (the garbage collector's work).
Reconciled on every change and every RECONCILE_TICK."""
import asyncio
import hashlib
import logging
import os
import secrets
import time

from . import schema
from .controller import parse_time
from .store import Store, now_rfc3339

GROUP = "extensions.agents.x-k8s.io"
SANDBOX_GROUP = "agents.x-k8s.io"
FILES = {"sandboxtemplates": "extensions.agents.x-k8s.io_sandboxtemplates.yaml",
         "sandboxwarmpools": "extensions.agents.x-k8s.io_sandboxwarmpools.yaml",
         "sandboxclaims": "extensions.agents.x-k8s.io_sandboxclaims.yaml"}
# Another folder holding the three CRD files (default: the repository's third_party copy).
CRD_DIR_ENV = "SBX_EXTENSIONS_CRD_DIR"
# How often pools and claims are looked at again (Sandbox readiness changes, expiry).
RECONCILE_TICK = 0.05
POOL_LABEL = "agents.x-k8s.io/warm-pool-sandbox"
TEMPLATE_HASH_LABEL = "agents.x-k8s.io/sandbox-template-ref-hash"
LAUNCH_LABEL = "agents.x-k8s.io/launch-type"
CLAIM_UID_LABEL = "agents.x-k8s.io/claim-uid"
SANDBOX_NAME_ANNOTATION = "agents.x-k8s.io/sandbox-name"
POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name"
# generateName's suffix alphabet (the API server's: no vowels, no look-alikes).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

log = logging.getLogger("kts.extensions")


class Kind:
    """A served custom kind: its CRD, objects and controller (api.Sandboxes serves it)."""

    def __init__(self, crd, store, controller):
        self.crd, self.store, self.controller = crd, store, controller


class Passive:
    """No controller (SandboxTemplates), or one reconciling on a tick (pools, claims)."""

    def __init__(self, on_change=None, on_delete=None):
        self.on_change, self.on_delete = on_change, on_delete

    def created(self, obj):
        if self.on_change:
            self.on_change()

    updated = created

    def deleted(self, obj):
        if self.on_delete:
            self.on_delete(obj)


def short_hash(text):
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def crd_dir(repo_top):
    return os.environ.get(CRD_DIR_ENV) or os.path.join(repo_top, schema.CRD_DIR)


def owner_ref(obj, api_version, kind):
    return {"apiVersion": api_version, "kind": kind, "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def owned(obj, uid):
    return any(isinstance(r, dict) and r.get("uid") == uid
               for r in obj["metadata"].get("ownerReferences") or [])


def ready_cond(obj):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


def is_ready(obj):
    c = ready_cond(obj)
    return bool(c and c.get("status") == "True")


def pool_name_of(claim):
    """v1beta1 spec.warmPoolRef.name; a v1alpha1 claim's spec.warmpool naming a pool."""
    spec = claim.get("spec") or {}
    name = (spec.get("warmPoolRef") or {}).get("name")
    if name:
        return name
    wp = spec.get("warmpool")
    return wp if wp not in (None, "", "none", "default") else None


class Extensions:
    """The three kinds and the pool and claim controllers."""

    def __init__(self, ctx, repo_top):
        d = crd_dir(repo_top)
        self.ctx = ctx
        self.kinds = {}
        for plural, fn in FILES.items():
            crd = schema.CRD(os.path.join(d, fn))
            ctl = Passive(self.poke, self._gc) if plural != "sandboxtemplates" else Passive()
            self.kinds[plural] = Kind(crd, Store(), ctl)
        self.wake = asyncio.Event()
        self.task = None

    def store(self, plural):
        return self.kinds[plural].store

    def start(self):
        self.task = asyncio.create_task(self._loop())

    def poke(self):
        self.wake.set()

    async def _loop(self):
        while True:
            try:
                await asyncio.wait_for(self.wake.wait(), RECONCILE_TICK)
            except asyncio.TimeoutError:
                pass
            self.wake.clear()
            try:
                self.reconcile()
            except Exception:   # noqa: BLE001 (a controller keeps going, as upstream's does)
                log.exception("reconcile")

    def reconcile(self):
        for claim in self.store("sandboxclaims").list(lambda o: True):
            self._claim(claim)
        for pool in self.store("sandboxwarmpools").list(lambda o: True):
            self._pool(pool)

    # Sandboxes.
    def _sandboxes(self, match):
        return self.ctx.store.list(match)

    def _create_sandbox(self, ns, meta, template):
        spec = template.get("spec") or {}
        obj = {"apiVersion": f"{SANDBOX_GROUP}/{self.ctx.crd.storage}", "kind": "Sandbox",
               "metadata": dict(meta, namespace=ns),
               "spec": {"podTemplate": spec.get("podTemplate") or {"spec": {"containers": []}}}}
        if spec.get("volumeClaimTemplates"):
            obj["spec"]["volumeClaimTemplates"] = spec["volumeClaimTemplates"]
        if not obj["metadata"].get("name"):
            obj["metadata"]["name"] = meta["generateName"] + "".join(
                secrets.choice(NAME_ALPHABET) for _ in range(5))
        self.ctx.crd.validate(obj, self.ctx.crd.storage)
        made = self.ctx.store.create(obj)
        self.ctx.controller.created(made)
        return made

    def _delete_sandbox(self, sb):
        try:
            gone = self.ctx.store.delete(sb["metadata"]["namespace"], sb["metadata"]["name"])
        except KeyError:
            return
        self.ctx.controller.deleted(gone)

    def _gc(self, obj):
        """An owner deleted: the Sandboxes it owned go too."""
        uid = obj["metadata"].get("uid")
        for sb in self._sandboxes(lambda o: owned(o, uid)):
            self._delete_sandbox(sb)
        self.poke()

    # Pools.
    def _pool(self, pool):
        meta, spec = pool["metadata"], pool.get("spec") or {}
        ns = meta["namespace"]
        if meta.get("deletionTimestamp"):
            return
        uid = meta["uid"]
        label = short_hash(meta["name"])
        members = self._sandboxes(lambda o: o["metadata"]["namespace"] == ns and owned(o, uid))
        template = self.store("sandboxtemplates").get(
            ns, (spec.get("sandboxTemplateRef") or {}).get("name", ""))
        want = spec.get("replicas", 1)
        if self.ctx.faults.warm_pool_empty:
            want = 0
        if template is not None:
            for _ in range(want - len(members)):
                tname = template["metadata"]["name"]
                members.append(self._create_sandbox(ns, {
                    "generateName": meta["name"] + "-",
                    "labels": {POOL_LABEL: label, TEMPLATE_HASH_LABEL: short_hash(tname),
                               LAUNCH_LABEL: "warm", "agents.x-k8s.io/created-by": "controller"},
                    "ownerReferences": [owner_ref(pool, pool["apiVersion"], "SandboxWarmPool")],
                }, template))
        if len(members) > want:
            # the not ready ones go first, then the newest
            members.sort(key=lambda o: (is_ready(o), o["metadata"]["creationTimestamp"]))
            for sb in members[:len(members) - want]:
                self._delete_sandbox(sb)
            members = members[len(members) - want:]
        status = {"replicas": len(members),
                  "readyReplicas": sum(1 for o in members if is_ready(o)),
                  "selector": f"{POOL_LABEL}={label}",
                  "observedGeneration": meta.get("generation", 1)}
        if pool.get("status") != status:
            pool["status"] = status
            pool["metadata"].pop("resourceVersion", None)
            self.store("sandboxwarmpools").update(pool, check_rv=False)

    # Claims.
    def _set_claim(self, claim, cond, sandbox_name=None):
        st = dict(claim.get("status") or {})
        old = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
        cond = dict(cond, type="Ready", observedGeneration=claim["metadata"].get("generation", 1))
        cond.pop("lastTransitionTime", None)
        same = old and all(old.get(k) == cond.get(k) for k in ("status", "reason", "message"))
        cond["lastTransitionTime"] = old["lastTransitionTime"] if same and \
            old.get("lastTransitionTime") else now_rfc3339()
        st["conditions"] = [c for c in st.get("conditions") or [] if c.get("type") != "Ready"] \
            + [cond]
        if sandbox_name:
            st["sandbox"] = {"name": sandbox_name, "podIPs": ["127.0.0.1"]}
            claim["metadata"].setdefault("annotations", {})[SANDBOX_NAME_ANNOTATION] = \
                sandbox_name
        if st == claim.get("status") and not sandbox_name:
            return
        claim["status"] = st
        claim["metadata"].pop("resourceVersion", None)
        self.store("sandboxclaims").update(claim, check_rv=False)

    def _expired(self, claim):
        lc = (claim.get("spec") or {}).get("lifecycle") or {}
        t = lc.get("shutdownTime")
        if not t:
            return False
        pt = parse_time(t)
        return pt is not None and pt <= time.time()

    def _claim(self, claim):
        meta = claim["metadata"]
        ns, uid = meta["namespace"], meta["uid"]
        if meta.get("deletionTimestamp"):
            return
        lifecycle = (claim.get("spec") or {}).get("lifecycle") or {}
        bound = ((claim.get("status") or {}).get("sandbox") or {}).get("name")
        if self._expired(claim):
            if lifecycle.get("shutdownPolicy") in ("Delete", "DeleteForeground"):
                self._delete_claim(claim)
                return
            for sb in self._sandboxes(lambda o: o["metadata"]["namespace"] == ns and
                                      owned(o, uid)):
                self._delete_sandbox(sb)
            self._set_claim(claim, {"status": "False", "reason": "ClaimExpired",
                                    "message": "Claim expired. Sandbox cleanup initiated."})
            return
        if bound:
            sb = self.ctx.store.get(ns, bound)
            if sb is None:
                self._set_claim(claim, {"status": "False", "reason": "SandboxMissing",
                                        "message": "Sandbox does not exist"})
            else:
                c = ready_cond(sb) or {"status": "False", "reason": "SandboxNotReady",
                                       "message": "Sandbox is not ready"}
                self._set_claim(claim, {k: c.get(k, "") for k in ("status", "reason",
                                                                    "message")})
            return
        if self.ctx.faults.claim_reconciler_error:
            self._set_claim(claim, {"status": "False", "reason": "ReconcilerError",
                                    "message": "Error seen: " +
                                    self.ctx.faults.claim_reconciler_error})
            return
        pname = pool_name_of(claim)
        pool = self.store("sandboxwarmpools").get(ns, pname or "")
        if pool is None:
            self._set_claim(claim, {"status": "False", "reason": "WarmPoolNotFound",
                                    "message": f'SandboxWarmPool "{pname}" not found'})
            return
        tname = ((pool.get("spec") or {}).get("sandboxTemplateRef") or {}).get("name", "")
        template = self.store("sandboxtemplates").get(ns, tname)
        if template is None:
            self._set_claim(claim, {"status": "False", "reason": "TemplateNotFound",
                                    "message": f'SandboxTemplate "{tname}" not found'})
            return
        sb = self._adopt(claim, pool)
        if sb is False:
            return
        if sb is None:
            sb = self.ctx.store.get(ns, meta["name"])
            if sb is not None and not owned(sb, uid):
                self._set_claim(claim, {"status": "False", "reason": "ReconcilerError",
                                        "message": f'Error seen: sandbox "{meta["name"]}" '
                                        "exists and is not owned by this claim"})
                return
            if sb is None:
                sb = self._create_sandbox(ns, {
                    "name": meta["name"],
                    "labels": {CLAIM_UID_LABEL: uid, LAUNCH_LABEL: "cold",
                               TEMPLATE_HASH_LABEL: short_hash(tname)},
                    "ownerReferences": [owner_ref(claim, claim["apiVersion"], "SandboxClaim")],
                }, template)
        c = ready_cond(sb) or {"status": "False", "reason": "SandboxNotReady",
                               "message": "Sandbox is not ready"}
        self._set_claim(claim, {k: c.get(k, "") for k in ("status", "reason", "message")},
                        sb["metadata"]["name"])

    def _adopt(self, claim, pool):
        """A ready Sandbox of the pool, now the claim's (None: none ready; False: a conflict,
        reported on the claim and tried again on the next pass)."""
        puid = pool["metadata"]["uid"]
        ns = claim["metadata"]["namespace"]
        if self.ctx.faults.warm_pool_empty:
            return None
        ready = sorted((o for o in self._sandboxes(lambda o: o["metadata"]["namespace"] == ns
                                                    and owned(o, puid))
                        if is_ready(o) and not o["metadata"].get("deletionTimestamp")),
                       key=lambda o: o["metadata"]["creationTimestamp"])
        if not ready:
            return None
        sb = ready[0]
        if self.ctx.faults.adoption_conflicts > 0:
            self.ctx.faults.adoption_conflicts -= 1
            self._set_claim(claim, {
                "status": "False", "reason": "AdoptionConflict",
                "message": f'failed to adopt sandbox "{sb["metadata"]["name"]}" (conflicting '
                "concurrent write); the next pass retries from a converged view"})
            self.poke()
            return False
        labels = sb["metadata"].setdefault("labels", {})
        labels.pop(POOL_LABEL, None)
        labels[LAUNCH_LABEL] = "warm"
        labels[CLAIM_UID_LABEL] = claim["metadata"]["uid"]
        sb["metadata"]["ownerReferences"] = [owner_ref(claim, claim["apiVersion"],
                                                       "SandboxClaim")]
        sb["metadata"].setdefault("annotations", {})[POD_NAME_ANNOTATION] = \
            sb["metadata"]["name"]
        sb["metadata"].pop("resourceVersion", None)
        self.poke()                      # the pool makes another
        return self.ctx.store.update(sb, check_rv=False)

    def _delete_claim(self, claim):
        st = self.store("sandboxclaims")
        meta = claim["metadata"]
        if meta.get("finalizers"):
            st.mark_deleting(meta["namespace"], meta["name"])
            return
        try:
            gone = st.delete(meta["namespace"], meta["name"])
        except KeyError:
            return
        self._gc(gone)
