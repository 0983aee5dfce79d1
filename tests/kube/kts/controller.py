"""The Sandbox controller: a pod per Sandbox, Ready after a delay, expiry at shutdownTime;
the claims of its volumeClaimTemplates; suspension (operatingMode Suspended, or replicas 0 on
v1alpha1): the pod goes, the claims' data stays and comes back when it runs again. Expiry as
the Agent Sandbox controller does it: the pod goes (its claims' data kept), then policy Delete
deletes the Sandbox, Retain keeps it with Ready=False SandboxExpired; a kept one whose
shutdownTime is moved into the future runs again (a new pod, the claims' data back). Like that
controller it has no time after which a kept Sandbox is deleted."""
import asyncio
import datetime
import logging

from . import volumes
from .backend import BackendError
from .store import now_rfc3339

# How often shutdownTimes are checked: expiry is seen within this much of its time.
EXPIRY_TICK = 0.1
# Local sandboxes outlive their Sandbox's shutdownTime by this much, so the controller (not the
# local backend's own reaper) decides what happens at expiry.
LOCAL_TTL_MARGIN = 120.0

log = logging.getLogger("kts.controller")


def parse_time(s):
    try:
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None


def homedir_of(obj):
    """The HOME of the pod template's `sandbox` container (env HOME, else the home mount)."""
    try:
        containers = obj["spec"]["podTemplate"]["spec"]["containers"]
    except (KeyError, TypeError):
        return None
    for c in containers:
        for e in c.get("env") or []:
            if e.get("name") == "HOME" and e.get("value"):
                return e["value"]
        for m in c.get("volumeMounts") or []:
            if m.get("name") == "home":
                return m.get("mountPath")
    return None


def workdir_of(obj):
    """The workingDir of the pod template's first container (where its execs start), or None."""
    try:
        c = obj["spec"]["podTemplate"]["spec"]["containers"][0]
    except (KeyError, TypeError, IndexError):
        return None
    w = c.get("workingDir") if isinstance(c, dict) else None
    return w if isinstance(w, str) and w.startswith("/") else None


class Pod:
    def __init__(self, sandbox):
        self.uid = sandbox["metadata"]["uid"]
        self.created = now_rfc3339()
        self.started = None
        self.phase = "Pending"
        self.creating = False       # sbx-create running: let it finish, then undo
        self.failure = None         # (reason, message) when the pod could not be made
        self.homedir = homedir_of(sandbox)
        self.workdir = workdir_of(sandbox)
        template = sandbox["spec"].get("podTemplate") or {}
        # The pod's spec has a persistentVolumeClaim volume per claim template, as the
        # controller makes it; claim_mounts: [(claim, mountPath)] of the container.
        spec, self.claim_mounts = volumes.pod_volumes(sandbox)
        self.template = dict(template, spec=spec)
        self.labels = dict((self.template.get("metadata") or {}).get("labels") or {})
        self.unbound = []           # claims still Pending: the pod cannot be scheduled


class Controller:
    def __init__(self, store, backend, faults, ready_delay):
        # Hooks set by the server: admit(ns, name, pod_spec) -> a refusal message or None (the
        # API server's admission of the pod the controller would make), collect(uid) deletes
        # the objects a deleted Sandbox owned (the garbage collector).
        self.admit = lambda ns, name, spec: None
        self.collect = lambda uid: 0
        # claims: the Sandboxes' PersistentVolumeClaims (kts/volumes.Claims), set by the server.
        self.claims = None
        self.store = store
        self.backend = backend
        self.faults = faults
        self.ready_delay = ready_delay
        self.pods = {}
        self.tasks = {}
        self.expired = set()
        self.suspended = set()
        self.shutdown_times = {}
        # One local-backend operation at a time per Sandbox, in order: a delete still running
        # when a Sandbox of the same name is created again goes first.
        self.locks = {}

    def start(self):
        self.loop_task = asyncio.create_task(self._expiry_loop())

    # Hooks called by the API after each change of a Sandbox.
    def created(self, obj):
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.shutdown_times[key] = obj["spec"].get("shutdownTime")
        unbound = self.claims.ensure(obj) if self.claims else []
        if volumes.suspended(obj):
            self.suspended.add(key)
            self._set_ready(key, "False", "SandboxSuspended", "Sandbox is suspended")
            self._set_cond(key, "Suspended", "True", "PodTerminated",
                           "Pod has been terminated. Sandbox is suspended")
            return
        self._start_pod(key, obj, unbound)

    def _start_pod(self, key, obj, unbound):
        """Admits and makes the Sandbox's pod (Ready after the delay, unless a claim is
        Pending: then it stays Pending, unschedulable)."""
        refusal = self.admit(key[0], key[1], volumes.pod_volumes(obj)[0])
        if refusal:
            # As the Agent Sandbox controller reports a pod the API server refused.
            self._set_ready(key, "False", "ReconcilerError", "Error seen: " + refusal)
            return
        self.pods[key] = Pod(obj)
        self.pods[key].unbound = unbound
        delay = self.faults.ready_delay if self.faults.ready_delay >= 0 else self.ready_delay
        if unbound:
            pass                    # unschedulable until its claims bind (they never do here)
        elif self.faults.container_waiting:
            self.pods[key].failure = tuple(self.faults.container_waiting)
            if self.faults.container_waiting_for >= 0:
                self.tasks[key] = asyncio.create_task(self._pulled(
                    key, obj["metadata"]["uid"], self.faults.container_waiting_for, delay))
        elif not self.faults.never_ready:
            self.tasks[key] = asyncio.create_task(
                self._make_ready(key, obj["metadata"]["uid"], delay))
        self._set_ready(key, "False", "DependenciesNotReady", "Pod exists with phase: Pending")

    def updated(self, obj):
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if volumes.suspended(obj) and key not in self.suspended and key not in self.expired:
            self._suspend(key)
        elif not volumes.suspended(obj) and key in self.suspended:
            self.suspended.discard(key)
            self._set_cond(key, "Suspended", "False", "NotSuspended", "Sandbox is not suspended")
            if key not in self.expired:
                self._run_again(key, obj)
        st = obj["spec"].get("shutdownTime")
        if st != self.shutdown_times.get(key):
            self.shutdown_times[key] = st
            t = parse_time(st) if st else None
            if key in self.expired and (t is None or t > datetime.datetime.now().timestamp()):
                # no longer expired: reconciled as any Sandbox is, so it runs again (or, asked
                # to be suspended meanwhile, is suspended: it has no pod)
                self.expired.discard(key)
                if volumes.suspended(obj):
                    if key not in self.suspended:
                        self._suspend(key)
                elif key not in self.pods:
                    self._run_again(key, obj)
                return
            self.expired.discard(key)
            pod = self.pods.get(key)
            if pod and pod.phase == "Running":
                asyncio.create_task(self._touch(key, st))

    def _run_again(self, key, obj):
        """A new pod for a Sandbox resumed or no longer expired (its claims as they are)."""
        self._start_pod(key, obj, self.claims.ensure(obj) if self.claims else [])

    def deleted(self, obj):
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.collect(obj["metadata"].get("uid"))
        self._remove_pod(key)
        if self.claims:
            self.claims.forget(obj)
        self.shutdown_times.pop(key, None)
        self.expired.discard(key)
        self.suspended.discard(key)

    def pod(self, ns, name):
        return self.pods.get((ns, name))

    async def shutdown(self):
        """Deletes every local sandbox made (server exit)."""
        for key in list(self.pods):
            self._remove_pod(key)
        pending = [t for t in self.tasks.values() if not t.done()]
        # sbx-create runs still in flight finish, then see their pod gone and delete it.
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    # Internals.
    def _ttl(self, shutdown_time):
        t = parse_time(shutdown_time) if shutdown_time else None
        left = (t - datetime.datetime.now().timestamp()) if t else 3600.0
        return max(left, 0) + LOCAL_TTL_MARGIN

    async def _pulled(self, key, uid, after, delay):
        """A container waiting (ErrImagePull) that starts after a while, as the kubelet's
        back-off retries a registry that came back."""
        await asyncio.sleep(after)
        pod = self.pods.get(key)
        if pod is None or pod.uid != uid:
            return
        pod.failure = None
        await self._make_ready(key, uid, delay)

    async def _make_ready(self, key, uid, delay):
        await asyncio.sleep(delay)
        pod = self.pods.get(key)
        if pod is None or pod.uid != uid:
            return
        pod.creating = True
        try:
            async with self._lock(key):
                await self.backend.create(key[0], key[1], pod.homedir,
                                          self._ttl(self.shutdown_times.get(key)),
                                          pod.template.get("spec") or {})
                for claim, path in pod.claim_mounts:
                    await self.backend.load_volume(key[0], key[1], path,
                                                   self.claims.data(key[0], claim))
        except BackendError as e:
            # The pod fails as one whose container cannot be made does, with the why in its
            # status; the Sandbox says PodFailed as the Agent Sandbox controller does, plus
            # the why (its own message is only "Pod failed"), so clients fail at once.
            log.warning("sandbox %s/%s: %s", key[0], key[1], e)
            if self.pods.get(key) is pod:
                pod.phase = "Failed"
                pod.failure = ("CreateContainerError", f"kube-test-server cannot back the pod: {e}")
                self._set_ready(key, "False", "PodFailed", f"Pod failed: {pod.failure[1]}")
            return
        finally:
            pod.creating = False
        if self.pods.get(key) is not pod:      # deleted while being created
            await self._delete_local(key)
            return
        pod.phase = "Running"
        pod.started = now_rfc3339()
        self._set_ready(key, "True", "DependenciesReady", "Pod is Ready; Service Exists")

    async def _touch(self, key, shutdown_time):
        try:
            async with self._lock(key):
                await self.backend.touch(key[0], key[1], self._ttl(shutdown_time))
        except BackendError as e:
            log.warning("touch %s/%s: %s", key[0], key[1], e)

    def _lock(self, key):
        return self.locks.setdefault(key, asyncio.Lock())

    async def _delete_local(self, key, save=None):
        """Deletes the local sandbox behind a pod; with save (the pod), its claims' mounts are
        kept in their data first, as a volume outlives its pod."""
        try:
            async with self._lock(key):
                for claim, path in (save.claim_mounts if save else []):
                    await self.backend.save_volume(key[0], key[1], path,
                                                   self.claims.data(key[0], claim))
                await self.backend.delete(*key)
        except BackendError as e:
            log.warning("delete %s/%s: %s", key[0], key[1], e)

    def _suspend(self, key):
        """operatingMode Suspended: the pod goes (its claims' data kept), Ready=False
        SandboxSuspended, Suspended=True PodTerminated once it is gone."""
        self.suspended.add(key)
        pod = self.pods.get(key)
        self._set_ready(key, "False", "SandboxSuspended",
                        "Sandbox is suspending" if pod else "Sandbox is suspended")
        if pod is None:
            self._set_cond(key, "Suspended", "True", "PodTerminated",
                           "Pod has been terminated. Sandbox is suspended")
            return
        self._set_cond(key, "Suspended", "False", "PodTerminating",
                       "Pod is terminating. Sandbox is suspending")
        self._remove_pod(key, save=True)
        gone = self.tasks.get(("delete",) + key) or self.tasks.get(("undo",) + key)

        async def settle():
            if gone:
                await asyncio.gather(gone, return_exceptions=True)
            if key in self.suspended and key not in self.pods:
                self._set_ready(key, "False", "SandboxSuspended", "Sandbox is suspended")
                self._set_cond(key, "Suspended", "True", "PodTerminated",
                               "Pod has been terminated. Sandbox is suspended")
        self.tasks[("suspend",) + key] = asyncio.create_task(settle())

    def _remove_pod(self, key, save=False):
        self.tasks = {k: t for k, t in self.tasks.items() if not t.done()}
        pod = self.pods.pop(key, None)
        t = self.tasks.pop(key, None)
        if pod is None:
            return
        if t and not t.done():
            if pod.creating:
                self.tasks[("undo",) + key] = t      # finishes, sees the pod gone, deletes
            else:
                t.cancel()
        if pod.phase == "Running":
            self.tasks[("delete",) + key] = asyncio.create_task(
                self._delete_local(key, pod if save else None))

    def _set_ready(self, key, status, reason, message):
        self._set_cond(key, "Ready", status, reason, message)

    def _set_cond(self, key, ctype, status, reason, message):
        """Sets condition ctype in place (a new one goes last: Ready stays first)."""
        obj = self.store.get(*key)
        if obj is None:
            return
        st = obj.setdefault("status", {})
        conds = list(st.get("conditions") or [])
        i = next((i for i, c in enumerate(conds) if c.get("type") == ctype), None)
        old = conds[i] if i is not None else None
        ltt = old["lastTransitionTime"] if old and old.get("status") == status else now_rfc3339()
        new = {"type": ctype, "status": status, "reason": reason, "message": message,
               "observedGeneration": obj["metadata"].get("generation", 1),
               "lastTransitionTime": ltt}
        if i is None:
            conds.append(new)
        else:
            conds[i] = new
        st["conditions"] = conds
        st["service"] = key[1]
        st["serviceFQDN"] = f"{key[1]}.{key[0]}.svc.cluster.local"
        obj["metadata"].pop("resourceVersion", None)
        self.store.update(obj, check_rv=False)

    def expire(self, key):
        """Acts on a Sandbox's shutdownTime now (also the 'expire now' knob)."""
        obj = self.store.get(*key)
        if obj is None:
            return False
        self.expired.add(key)
        policy = obj["spec"].get("shutdownPolicy") or "Retain"
        if policy == "Delete":
            self.store.delete(*key)
            self.deleted(obj)
        else:
            # the pod goes as a suspended one does: what its claims hold stays
            self._remove_pod(key, save=True)
            self._set_ready(key, "False", "SandboxExpired", "Sandbox has expired")
        return True

    async def _expiry_loop(self):
        while True:
            await asyncio.sleep(EXPIRY_TICK)
            now = datetime.datetime.now().timestamp()
            for key, st in list(self.shutdown_times.items()):
                t = parse_time(st) if st else None
                if t is not None and t <= now and key not in self.expired:
                    self.expire(key)
