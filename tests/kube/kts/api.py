"""The HTTP side: authentication, fault injection, request log, discovery, Sandbox CRUD and
watch, pods, and the /_test control endpoints. Exec lives in execws.py."""
import asyncio
import copy
import json
import logging
import secrets
import string

import yaml
from aiohttp import web

from . import admission, discovery, execws, portfwd, tables
from .patch import PatchError, apply_patch, json_patch, merge_patch
from .schema import FieldError
from .selectors import SelectorError, matcher
from .status import (PODS, ApiError, Resource, already_exists, conflict, dumps, forbidden,
                     invalid, json_response, not_found)
from .store import Conflict, Exists, Gone, now_rfc3339

# Request bodies are capped like the API server's (3 MiB); larger ones get 413.
BODY_MAX = 3 * 1024 * 1024
# A watch lasts at most this long (client-go reconnects), like the server's default timeout.
WATCH_TIMEOUT_MAX = 1800
TEST_PREFIX = "/_test/"
# -v logs at most this much of each URL (exec commands travel in it).
LOGGED_PATH_MAX = 300

log = logging.getLogger("kts.api")


def routes_for(ctx):
    return [
        web.get("/version", lambda r: discovery.version(ctx, r)),
        web.get("/api", lambda r: discovery.core_versions(ctx, r)),
        web.get("/api/v1", lambda r: discovery.core_v1(ctx, r)),
        web.get("/apis", lambda r: discovery.groups(ctx, r)),
        web.get("/apis/{group}", lambda r: discovery.group(ctx, r)),
        web.get("/apis/{group}/{version}", lambda r: discovery.group_version(ctx, r)),
        web.get("/openapi/v2", lambda r: discovery.openapi_v2(ctx, r)),
        web.get("/openapi/v3", lambda r: discovery.openapi_v3_root(ctx, r)),
        web.get("/openapi/v3/{rest:.*}", lambda r: discovery.openapi_v3(ctx, r)),
        web.get("/healthz", ok), web.get("/readyz", ok), web.get("/livez", ok),
        web.route("*", "/apis/{group}/{version}/namespaces/{ns}/{plural}",
                  lambda r: Sandboxes(ctx, r).collection()),
        web.route("*", "/apis/{group}/{version}/{plural}",
                  lambda r: Sandboxes(ctx, r).collection()),
        web.route("*", "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}",
                  lambda r: Sandboxes(ctx, r).item()),
        web.route("*", "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}/status",
                  lambda r: Sandboxes(ctx, r).status()),
        web.route("*", "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}/scale",
                  lambda r: Sandboxes(ctx, r).scale()),
        web.get("/api/v1/namespaces/{ns}/pods", lambda r: Pods(ctx, r).list()),
        web.post("/api/v1/namespaces/{ns}/pods", lambda r: Pods(ctx, r).create()),
        web.get("/api/v1/pods", lambda r: Pods(ctx, r).list()),
        web.get("/api/v1/namespaces/{ns}/pods/{name}", lambda r: Pods(ctx, r).get()),
        web.route("*", "/api/v1/namespaces/{ns}/pods/{name}/exec",
                  lambda r: execws.handle(ctx, r)),
        web.route("*", "/api/v1/namespaces/{ns}/pods/{name}/portforward",
                  lambda r: portfwd.handle(ctx, r)),
        web.get(TEST_PREFIX + "faults", lambda r: get_faults(ctx, r)),
        web.post(TEST_PREFIX + "faults", lambda r: set_faults(ctx, r)),
        web.delete(TEST_PREFIX + "faults", lambda r: reset_faults(ctx, r)),
        web.get(TEST_PREFIX + "requests", lambda r: get_requests(ctx, r)),
        web.delete(TEST_PREFIX + "requests", lambda r: clear_requests(ctx, r)),
        web.post(TEST_PREFIX + "expire", lambda r: expire(ctx, r)),
        web.post(TEST_PREFIX + "close-watches", lambda r: close_watches(ctx, r)),
    ]


async def ok(_request):
    return web.Response(text="ok")


def make_middlewares(ctx):
    @web.middleware
    async def errors(request, handler):
        try:
            return await handler(request)
        except ApiError as e:
            return e.response()
        except web.HTTPNotFound:
            return ApiError(404, "the server could not find the requested resource").response()
        except web.HTTPMethodNotAllowed:
            return ApiError(405, "the server does not allow this method on the requested "
                            "resource").response()
        except web.HTTPRequestEntityTooLarge:
            return ApiError(413, f"Request entity too large: limit is {BODY_MAX}").response()

    @web.middleware
    async def record(request, handler):
        if request.path.startswith(TEST_PREFIX):
            return await handler(request)
        body = b""
        too_large = False
        if request.can_read_body:
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                too_large = True
        query = {k: request.query.getall(k) for k in request.query.keys()}
        entry = ctx.faults.log(request.method, request.path, query, request.headers, body, None)
        resp = None
        try:
            if too_large:
                resp = ApiError(413, f"Request entity too large: limit is {BODY_MAX}").response()
            else:
                resp = await handler(request)
            return resp
        finally:
            # Streams (watch, exec) record their status once started: they may end by
            # cancellation when the client goes away.
            entry["status"] = resp.status if resp is not None else request.get("kts_status")
            log.info("%s %s %s", request.method, request.path_qs[:LOGGED_PATH_MAX],
                     entry["status"])

    @web.middleware
    async def auth(request, handler):
        if not authenticated(ctx, request):
            return ApiError(401, "Unauthorized").response()
        return await handler(request)

    @web.middleware
    async def faults(request, handler):
        if not request.path.startswith(TEST_PREFIX) and \
                ctx.faults.take_failure(request.method, request.path_qs):
            code = ctx.faults.fail_status
            headers = {"Retry-After": "1"} if code in (429, 503) else {}
            msg = "Internal error occurred: injected fault" if code == 500 else "injected fault"
            return ApiError(code, msg, headers=headers).response()
        return await handler(request)

    return [record, errors, auth, faults]


def authenticated(ctx, request):
    """A valid bearer token (the -token one, or the 'tokens' knob's for the API while it is
    set), or a client certificate signed by the server's CA (checked by TLS)."""
    tokens = ctx.tokens
    if ctx.faults.tokens and not request.path.startswith(TEST_PREFIX):
        tokens = ctx.faults.tokens
    scheme, _, cred = request.headers.get("Authorization", "").partition(" ")
    cred = cred.strip().encode()
    if scheme.lower() == "bearer" and any(secrets.compare_digest(cred, t.encode()) for t in tokens):
        return True
    ssl_obj = request.transport.get_extra_info("ssl_object") if request.transport else None
    return bool(ssl_obj and ssl_obj.getpeercert())


def _qbool(request, key):
    return request.query.get(key, "").lower() in ("1", "true")


async def read_json(request, what="object"):
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, f"Request entity too large: limit is {BODY_MAX}") from None
    ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
    try:
        if ctype.endswith("yaml"):
            doc = yaml.safe_load(body.decode("utf-8"))
        else:
            doc = json.loads(body.decode("utf-8"))
    except (ValueError, yaml.YAMLError) as e:
        raise ApiError(400, f"the body of the request could not be decoded as {what}: {e}") \
            from None
    return doc


class Sandboxes:
    """Handlers for the custom resources (one instance per request): agents.x-k8s.io
    sandboxes, and the extension kinds (kts/extensions.py), each with its own CRD, store and
    controller (ctx.crd_kinds)."""

    def __init__(self, ctx, request):
        self.ctx, self.r = ctx, request
        mi = request.match_info
        kind = ctx.crd_kinds.get((mi["group"], mi["plural"]))
        if kind is None or mi["version"] not in ctx.versions or \
                mi["version"] not in kind.crd.versions:
            raise ApiError(404, "the server could not find the requested resource")
        # This kind's CRD, objects and controller (Sandboxes, or an extension kind).
        self.crd, self.store, self.controller = kind.crd, kind.store, kind.controller
        crd = self.crd
        self.version = mi["version"]
        self.api_version = f"{crd.group}/{self.version}"
        self.ns = mi.get("ns")
        self.name = mi.get("name")
        self.res = Resource(crd.group, crd.plural, crd.kind)

    # Authorization (the 'forbid' knob) and verbs.
    def _authorize(self, verb):
        if self.ctx.faults.forbidden(verb, self.res.plural):
            raise forbidden(self.res, self.ctx.user, verb, self.name, self.ns)

    def _out(self, obj):
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = self.api_version
        return obj

    def _respond(self, obj, code=200):
        if tables.wants_table(self.r.headers.get("Accept")):
            return json_response(self._table([obj]), status=code)
        return json_response(self._out(obj), status=code)

    def _table(self, objs):
        return tables.table([self._out(o) for o in objs], self.crd.columns(self.version),
                            str(self.store.rv), self.r.query.get("includeObject", "Metadata"))

    def _warn_unknown(self, unknown, headers):
        mode = self.r.query.get("fieldValidation", "Warn")
        if not unknown or mode == "Ignore":
            return
        if mode == "Strict":
            fields = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise ApiError(400, f'{self.res.kind} in version "{self.version}" cannot be handled '
                           f"as a {self.res.kind}: strict decoding error: {fields}")
        headers["Warning"] = ", ".join(f'299 - "unknown field \\"{u}\\""' for u in unknown)

    def _check(self, obj, headers):
        if not isinstance(obj, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        if obj.get("apiVersion") not in (None, self.api_version):
            raise ApiError(400, f"the API version in the data ({obj.get('apiVersion')}) does not "
                           f"match the expected API version ({self.api_version})")
        if obj.get("kind") not in (None, self.res.kind):
            raise ApiError(400, f"the kind in the data ({obj.get('kind')}) does not match the "
                           f"expected kind ({self.res.kind})")
        obj["apiVersion"], obj["kind"] = self.api_version, self.res.kind
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if meta.get("namespace") not in (None, "", self.ns):
            raise ApiError(400, "the namespace of the provided object does not match the "
                           "namespace sent on the request")
        meta["namespace"] = self.ns
        errors, unknown = self.crd.validate(obj, self.version)
        if errors:
            raise invalid(self.res, self.res.kind, meta.get("name") or "", errors)
        self._warn_unknown(unknown, headers)

    # Collection: list, watch, create, deletecollection.
    async def collection(self):
        m = self.r.method
        if m == "GET":
            if _qbool(self.r, "watch"):
                self._authorize("watch")
                return await self._watch()
            self._authorize("list")
            return self._list()
        if self.ns is None:
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if m == "POST":
            self._authorize("create")
            return await self._create()
        if m == "DELETE":
            self._authorize("deletecollection")
            for o in self.store.list(self._match()):
                self._delete_obj(o)
            return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Success"})
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def _match(self):
        try:
            sel = matcher(self.r.query.get("labelSelector"), self.r.query.get("fieldSelector"))
        except SelectorError as e:
            raise ApiError(400, str(e)) from None
        ns = self.ns
        return lambda o: (ns is None or o["metadata"]["namespace"] == ns) and sel(o)

    def _list(self):
        items = self.store.list(self._match())
        if tables.wants_table(self.r.headers.get("Accept")):
            return json_response(self._table(items))
        return json_response({"apiVersion": self.api_version, "kind": self.res.kind + "List",
                              "metadata": {"resourceVersion": str(self.store.rv)},
                              "items": [self._out(o) for o in items]})

    async def _watch(self):
        rv = self.r.query.get("resourceVersion")
        initial = _qbool(self.r, "sendInitialEvents")
        if initial and self.r.query.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiError(422, "resourceVersionMatch: Forbidden: sendInitialEvents requires "
                           "setting resourceVersionMatch to NotOlderThan", "Invalid")
        try:
            since = int(rv) if rv not in (None, "", "0") else None
        except ValueError:
            raise ApiError(400, f"invalid resourceVersion {rv!r}") from None
        if initial:
            since = None        # the current state first, then a bookmark marking its end
        try:
            timeout = min(int(self.r.query.get("timeoutSeconds", WATCH_TIMEOUT_MAX)),
                          WATCH_TIMEOUT_MAX)
        except ValueError:
            raise ApiError(400, "invalid timeoutSeconds") from None
        try:
            w = self.store.watch(self._match(), since)
        except Gone:
            raise ApiError(410, f"too old resource version: {rv} ({self.store.rv})",
                           "Expired") from None
        table = tables.wants_table(self.r.headers.get("Accept"))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        self.ctx.watch_responses.add(resp)
        try:
            await resp.prepare(self.r)
            self.r["kts_status"] = 200
            if initial:
                await self._send_initial(w, resp, table)
            deadline = asyncio.get_running_loop().time() + timeout
            while True:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                try:
                    ev = await asyncio.wait_for(w.queue.get(), left)
                except asyncio.TimeoutError:
                    break
                if ev is None:      # overflowed or closed by the server
                    break
                kind, obj = ev
                out = self._table([obj]) if table else self._out(obj)
                await resp.write(dumps({"type": kind, "object": out}).encode() + b"\n")
            await resp.write_eof()
        except ConnectionResetError:
            pass
        finally:
            self.store.unwatch(w)
            self.ctx.watch_responses.discard(resp)
        return resp

    async def _send_initial(self, w, resp, table):
        """The ADDED events queued for the current objects, then the initial-events-end
        BOOKMARK that WatchList clients (kubectl wait) require."""
        while not w.queue.empty():
            ev = w.queue.get_nowait()
            if ev is None:
                return
            kind, obj = ev
            out = self._table([obj]) if table else self._out(obj)
            await resp.write(dumps({"type": kind, "object": out}).encode() + b"\n")
        mark = {"kind": self.res.kind, "apiVersion": self.api_version,
                "metadata": {"resourceVersion": str(self.store.rv),
                             "annotations": {"k8s.io/initial-events-end": "true"}}}
        await resp.write(dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n")

    async def _create(self):
        obj = await read_json(self.r)
        headers = {}
        if isinstance(obj, dict):
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None
            if meta is not None and not meta.get("name") and meta.get("generateName"):
                alphabet = "bcdfghjklmnpqrstvwxz2456789"
                meta["name"] = meta["generateName"] + "".join(
                    secrets.choice(alphabet) for _ in range(5))
        self._check(obj, headers)
        obj.pop("status", None)          # status is a subresource: ignored on create
        name = obj["metadata"]["name"]
        if "All" in self.r.query.getall("dryRun", []):
            if self.store.get(self.ns, name):
                raise already_exists(self.res, name)
            return json_response(self._out(obj), status=201, headers=headers)
        if obj["metadata"].get("resourceVersion"):
            raise ApiError(400, "resourceVersion should not be set on objects to be created")
        obj["metadata"].pop("uid", None)
        try:
            created = self.store.create(obj)
        except Exists:
            raise already_exists(self.res, name) from None
        self.controller.created(created)
        resp = self._respond(created, 201)
        resp.headers.update(headers)
        return resp

    # One object: get, replace, patch, delete.
    async def item(self):
        m = self.r.method
        if m == "GET":
            self._authorize("get")
            return self._respond(self._get())
        if m == "PUT":
            self._authorize("update")
            return await self._replace(await read_json(self.r), status_only=False)
        if m == "PATCH":
            self._authorize("patch")
            return await self._patch(status_only=False)
        if m == "DELETE":
            self._authorize("delete")
            return await self._delete()
        raise ApiError(405, "the server does not allow this method on the requested resource")

    async def status(self):
        m = self.r.method
        if m == "GET":
            self._authorize("get")
            return self._respond(self._get())
        if m == "PUT":
            self._authorize("update")
            return await self._replace(await read_json(self.r), status_only=True)
        if m == "PATCH":
            self._authorize("patch")
            return await self._patch(status_only=True)
        raise ApiError(405, "the server does not allow this method on the requested resource")

    async def scale(self):
        """The scale subresource (autoscaling/v1 Scale) of a kind whose CRD has one
        (SandboxWarmPool: spec.replicas), as kubectl scale reads and patches it."""
        sub = (self.crd.versions[self.version].get("subresources") or {}).get("scale")
        if sub is None:
            raise ApiError(404, "the server could not find the requested resource")
        m = self.r.method
        self._authorize("get" if m == "GET" else "update" if m == "PUT" else "patch")
        live = self._get()
        doc = scale_doc(live, sub)
        if m == "GET":
            return json_response(doc)
        if m not in ("PUT", "PATCH"):
            raise ApiError(405, "the server does not allow this method on the requested "
                           "resource")
        body = await read_json(self.r, "a Scale")
        ctype = self.r.headers.get("Content-Type", "").split(";")[0].strip()
        try:
            if m == "PUT":
                new = body
            elif ctype == "application/json-patch+json":
                new = json_patch(doc, body)
            else:
                new = merge_patch(doc, body if isinstance(body, dict) else {})
        except PatchError as e:
            raise ApiError(422, f"the server rejected our request due to an error in our "
                           f"request: {e}", "Invalid") from None
        replicas = ((new or {}).get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(422, f"Scale.autoscaling \"{self.name}\" is invalid: spec.replicas: "
                           "Invalid value: must be greater than or equal to 0", "Invalid")
        obj = copy.deepcopy(live)
        set_path(obj, sub["specReplicasPath"], replicas)
        resp = await self._replace(obj, status_only=False, live=live)
        return json_response(scale_doc(json.loads(resp.body), sub))

    def _get(self):
        o = self.store.get(self.ns, self.name)
        if o is None:
            raise not_found(self.res, self.name)
        return o

    async def _replace(self, obj, status_only, live=None):
        live = live or self._get()
        headers = {}
        if not isinstance(obj, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("name") not in (None, self.name):
            raise ApiError(400, f'the name of the object ({meta.get("name")}) does not match the '
                           f"name on the URL ({self.name})")
        if not (isinstance(meta, dict) and meta.get("resourceVersion")):
            # Custom resources allow no unconditional update.
            raise invalid(self.res, self.res.kind, self.name, [FieldError(
                "metadata.resourceVersion", "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update")])
        if self.ctx.faults.take_conflict():
            raise conflict(self.res, self.name)
        if status_only:
            new = copy.deepcopy(live)
            new["status"] = obj.get("status")
            if meta and meta.get("resourceVersion"):
                new["metadata"]["resourceVersion"] = meta["resourceVersion"]
            errors, _ = self.crd.validate(new, self.version, status_only=True)
            if errors:
                raise invalid(self.res, self.res.kind, self.name, errors)
        else:
            obj.setdefault("metadata", {})["name"] = self.name
            self._check(obj, headers)
            errors = self.crd.transition_errors(live, obj, self.version)
            if errors:
                raise invalid(self.res, self.res.kind, self.name, errors)
            new = obj
            new["status"] = live.get("status")
            if new["status"] is None:
                new.pop("status")
        if "All" in self.r.query.getall("dryRun", []):
            return json_response(self._out(new), headers=headers)
        try:
            updated = self.store.update(new)
        except Conflict:
            raise conflict(self.res, self.name) from None
        except KeyError:
            raise not_found(self.res, self.name) from None
        if updated["metadata"].get("deletionTimestamp") and \
                not updated["metadata"].get("finalizers"):
            updated = self._delete_obj(updated)      # its last finalizer removed
        else:
            self.controller.updated(updated)
        resp = self._respond(updated)
        resp.headers.update(headers)
        return resp

    async def _patch(self, status_only):
        ctype = self.r.headers.get("Content-Type", "").split(";")[0].strip()
        if ctype not in ("application/merge-patch+json", "application/json-patch+json",
                         "application/apply-patch+yaml", "application/apply-patch+cbor"):
            raise ApiError(415, "the body of the request was in an unknown format - accepted "
                           "media types include: application/json-patch+json, "
                           "application/merge-patch+json, application/apply-patch+yaml")
        patch = await read_json(self.r, "a patch")
        live = self.store.get(self.ns, self.name)
        if ctype == "application/apply-patch+yaml":
            if not self.r.query.get("fieldManager"):
                raise ApiError(400, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: "
                               "Required value: is required for apply patch")
            if live is None:
                if status_only:
                    raise not_found(self.res, self.name)
                if not isinstance(patch, dict):
                    raise ApiError(400, "an apply patch is an object")
                patch.setdefault("metadata", {})["name"] = self.name
                return await self._create_from(patch)
            new = apply_patch(live, patch)
        else:
            if live is None:
                raise not_found(self.res, self.name)
            try:
                if ctype == "application/merge-patch+json":
                    if not isinstance(patch, dict):
                        raise PatchError("a merge patch is an object")
                    new = merge_patch(live, patch)
                else:
                    new = json_patch(live, patch)
            except PatchError as e:
                raise ApiError(422, f"the server rejected our request due to an error in our "
                               f"request: {e}", "Invalid") from None
        if isinstance(new, dict):
            want = (new.get("metadata") or {}).get("resourceVersion")
            if want and want != live["metadata"]["resourceVersion"]:
                raise conflict(self.res, self.name)
            new.setdefault("metadata", {})["resourceVersion"] = live["metadata"]["resourceVersion"]
        return await self._replace(new, status_only, live)

    async def _create_from(self, obj):
        headers = {}
        self._check(obj, headers)
        obj.pop("status", None)
        try:
            created = self.store.create(obj)
        except Exists:
            raise already_exists(self.res, self.name) from None
        self.controller.created(created)
        resp = self._respond(created, 201)
        resp.headers.update(headers)
        return resp

    async def _delete(self):
        live = self._get()
        opts = {}
        if self.r.can_read_body:
            body = await self.r.read()
            if body.strip():
                try:
                    opts = json.loads(body)
                except ValueError:
                    raise ApiError(400, "the body of the request was not valid DeleteOptions") \
                        from None
        pre = (opts or {}).get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != live["metadata"]["uid"]:
            raise ApiError(409, f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                           f"object meta: {live['metadata']['uid']}", "Conflict")
        live_rv = live["metadata"]["resourceVersion"]
        if pre.get("resourceVersion") and pre["resourceVersion"] != live_rv:
            raise ApiError(409, f"Precondition failed: ResourceVersion in precondition: "
                           f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                           f"{live['metadata']['resourceVersion']}", "Conflict")
        if "All" in self.r.query.getall("dryRun", []):
            return json_response(self._out(live))
        gone = self._delete_obj(live)
        return json_response(self._out(gone))

    def _delete_obj(self, obj):
        """Deletes obj, or, while it has finalizers, marks it (deletionTimestamp) and keeps
        it until an update removes the last one, as the API server does."""
        if obj["metadata"].get("finalizers"):
            if obj["metadata"].get("deletionTimestamp"):
                return obj
            return self.store.mark_deleting(obj["metadata"]["namespace"],
                                            obj["metadata"]["name"])
        gone = self.store.delete(obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.controller.deleted(gone)
        return gone


def get_path(obj, path):
    """The value at a CRD jsonPath such as .spec.replicas (None when absent)."""
    for part in path.lstrip(".").split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def set_path(obj, path, value):
    parts = path.lstrip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def scale_doc(obj, sub):
    """An object's autoscaling/v1 Scale, from its CRD's scale subresource paths."""
    meta = obj["metadata"]
    status = {"replicas": get_path(obj, sub["statusReplicasPath"]) or 0}
    if sub.get("labelSelectorPath") and get_path(obj, sub["labelSelectorPath"]):
        status["selector"] = get_path(obj, sub["labelSelectorPath"])
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                              "creationTimestamp") if k in meta},
            "spec": {"replicas": get_path(obj, sub["specReplicasPath"]) or 0},
            "status": status}


def pod_doc(ctx, sandbox, pod):
    """The Pod the controller made for a Sandbox, as the API shows it."""
    meta = sandbox["metadata"]
    tspec = copy.deepcopy(pod.template.get("spec") or {})
    running = pod.phase == "Running"
    cstatuses = []
    for c in tspec.get("containers") or []:
        cs = {"name": c.get("name"), "image": c.get("image", ""), "imageID": "",
              "ready": running, "started": running, "restartCount": 0}
        if running:
            cs["state"] = {"running": {"startedAt": pod.started}}
        elif pod.failure:
            cs["state"] = {"waiting": {"reason": pod.failure[0], "message": pod.failure[1]}}
        else:
            cs["state"] = {"waiting": {"reason": "ContainerCreating"}}
        cstatuses.append(cs)
    ready = "True" if running else "False"
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": pod.uid + "-pod",
                     "resourceVersion": meta["resourceVersion"], "creationTimestamp": pod.created,
                     "labels": pod.labels,
                     "ownerReferences": [{"apiVersion": sandbox["apiVersion"], "kind": "Sandbox",
                                          "name": meta["name"], "uid": meta["uid"],
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": tspec,
        "status": {"phase": pod.phase, "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
                   **({"reason": pod.failure[0], "message": pod.failure[1]} if pod.failure
                      else {}),
                   "podIPs": [{"ip": "127.0.0.1"}], "startTime": pod.created,
                   "conditions": pod_conditions(pod, ready),
                   "containerStatuses": cstatuses},
    }


# The scheduler's words for a pod whose claims are not bound.
UNBOUND_MESSAGE = ("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                   "preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
                   "scheduling.")


def pod_conditions(pod, ready):
    if pod.unbound:
        return [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": UNBOUND_MESSAGE, "lastTransitionTime": pod.created}]
    return [{"type": t, "status": ready, "lastTransitionTime": pod.created}
            for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]


POD_COLUMNS = [
    {"name": "Ready", "type": "string", "jsonPath": ".kts.ready"},
    {"name": "Status", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Restarts", "type": "string", "jsonPath": ".kts.restarts"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


class Pods:
    def __init__(self, ctx, request):
        self.ctx, self.r = ctx, request
        self.ns = request.match_info.get("ns")
        self.name = request.match_info.get("name")

    def _pods(self, match):
        out = []
        for s in self.ctx.store.list(match):
            p = self.ctx.controller.pod(s["metadata"]["namespace"], s["metadata"]["name"])
            if p is not None:
                out.append(pod_doc(self.ctx, s, p))
        return out

    def _authorize(self, verb):
        if self.ctx.faults.forbidden(verb, "pods"):
            raise forbidden(PODS, self.ctx.user, verb, self.name, self.ns)

    def _table(self, pods):
        rows = []
        for p in pods:
            n = len(p["status"]["containerStatuses"])
            r = sum(1 for c in p["status"]["containerStatuses"] if c["ready"])
            rows.append(dict(p, kts={"ready": f"{r}/{n}", "restarts": "0"}))
        t = tables.table(rows, POD_COLUMNS, str(self.ctx.store.rv),
                         self.r.query.get("includeObject", "Metadata"))
        for row in t["rows"]:
            if "object" in row and row["object"].get("kind") == "Pod":
                row["object"].pop("kts", None)
        return t

    async def get(self):
        self._authorize("get")
        s = self.ctx.store.get(self.ns, self.name)
        p = self.ctx.controller.pod(self.ns, self.name) if s else None
        if p is None:
            raise not_found(PODS, self.name)
        doc = pod_doc(self.ctx, s, p)
        if tables.wants_table(self.r.headers.get("Accept")):
            return json_response(self._table([doc]))
        return json_response(doc)

    async def create(self):
        """A pod posted directly goes through admission (RuntimeClass, Pod Security) as on a
        real server; one that passes is only accepted as a dry run: this server runs the
        pods of Sandboxes, no others."""
        self._authorize("create")
        obj = await read_json(self.r)
        if not isinstance(obj, dict) or obj.get("kind") != "Pod" or obj.get("apiVersion") != "v1":
            raise ApiError(400, "the body of the request is not a v1 Pod")
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        if not spec.get("containers"):
            raise invalid(PODS, "Pod", name, [FieldError(
                "spec.containers", "FieldValueRequired", "Required value")])
        refusal, warnings = admission.admit_pod(self.ctx, self.ns, name, spec)
        if refusal:
            raise ApiError(403, refusal, details={"name": name, "kind": "pods"})
        headers = {"Warning": ", ".join(warning(w) for w in warnings)} if warnings else {}
        if "All" not in self.r.query.getall("dryRun", []):
            raise ApiError(405, "kube-test-server runs only the pods of Sandboxes: create a "
                           "Sandbox, or send this pod with dryRun=All")
        meta.update(namespace=self.ns, uid="dry-run", creationTimestamp=now_rfc3339())
        obj["status"] = {"phase": "Pending"}
        return json_response(obj, status=201, headers=headers)

    async def list(self):
        self._authorize("list")
        try:
            sel = matcher(self.r.query.get("labelSelector"), self.r.query.get("fieldSelector"))
        except SelectorError as e:
            raise ApiError(400, str(e)) from None
        ns = self.ns
        pods = [p for p in self._pods(lambda o: ns is None or o["metadata"]["namespace"] == ns)
                if sel(p)]
        if tables.wants_table(self.r.headers.get("Accept")):
            return json_response(self._table(pods))
        return json_response({"kind": "PodList", "apiVersion": "v1",
                              "metadata": {"resourceVersion": str(self.ctx.store.rv)},
                              "items": pods})


# /_test control endpoints.
async def get_faults(ctx, _r):
    return json_response(ctx.faults.as_dict())


async def set_faults(ctx, r):
    try:
        ctx.faults.set(await r.json())
    except ValueError as e:
        return ApiError(400, str(e)).response()
    return json_response(ctx.faults.as_dict())


async def reset_faults(ctx, _r):
    ctx.faults.reset()
    return json_response(ctx.faults.as_dict())


async def get_requests(ctx, _r):
    return json_response({"requests": list(ctx.faults.requests)})


async def clear_requests(ctx, _r):
    ctx.faults.requests.clear()
    return json_response({"requests": []})


async def expire(ctx, r):
    try:
        doc = await r.json()
        key = (doc.get("namespace") or "default", doc["name"])
    except (ValueError, KeyError, AttributeError, TypeError):
        return ApiError(400, 'expected {"namespace": NS, "name": NAME}').response()
    if not ctx.controller.expire(key):
        return ApiError(404, f'sandbox "{key[0]}/{key[1]}" not found').response()
    return json_response({"expired": f"{key[0]}/{key[1]}"})


async def close_watches(ctx, _r):
    """Ends every open watch cleanly (as an API server restart or timeout would)."""
    n = ctx.store.close_watches()
    return json_response({"closed": n})


def random_token():
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))


def warning(text):
    """One Warning header value (RFC 7234: code 299, agent "-", a quoted text)."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
