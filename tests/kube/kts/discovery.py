"""Discovery documents: /version, /api, /apis and their groups, namespaces, OpenAPI."""
import hashlib


from .status import ApiError, json_response

SERVER_VERSION = {"major": "1", "minor": "35", "gitVersion": "v1.35.0-kube-test-server",
                  "gitCommit": "0000000000000000000000000000000000000000",
                  "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                  "goVersion": "go1.25.0", "compiler": "gc", "platform": "linux/amd64"}


def _hash(s):
    return hashlib.sha256(s.encode()).hexdigest()[:12]


async def version(_ctx, _r):
    return json_response(SERVER_VERSION)


SANDBOX_VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
CORE_RESOURCES = [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["create", "get", "list"], "shortNames": ["po"], "categories": ["all"]},
    {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions",
     "verbs": ["create", "get"]},
]
# Aggregated discovery (one request for all groups), in the client's order of preference.
AGGREGATED = {"v2": "apidiscovery.k8s.io/v2", "v2beta1": "apidiscovery.k8s.io/v2beta1"}


def _aggregated_version(ctx, r):
    """'v2' or 'v2beta1' when the client asks for aggregated discovery and it is on."""
    if not ctx.aggregated_discovery:
        return None
    for media in r.headers.get("Accept", "").split(","):
        params = dict(p.strip().split("=", 1) for p in media.split(";")[1:] if "=" in p)
        if params.get("g") == "apidiscovery.k8s.io" and \
                params.get("as") == "APIGroupDiscoveryList" and params.get("v") in AGGREGATED:
            return params["v"]
    return None


def _aggregated(version, items):
    return json_response({"kind": "APIGroupDiscoveryList", "apiVersion": AGGREGATED[version],
                          "metadata": {}, "items": items},
                         content_type=f"application/json;g=apidiscovery.k8s.io;v={version};"
                         "as=APIGroupDiscoveryList")


def _to_aggregated(group, version, resources):
    """Legacy APIResource entries to an APIVersionDiscovery (subresources folded in)."""
    out = []
    for res in resources:
        if "/" in res["name"]:
            continue
        d = {"resource": res["name"], "responseKind": {"group": group, "version": version,
                                                     "kind": res["kind"]},
             "scope": "Namespaced" if res["namespaced"] else "Cluster",
             "singularResource": res["singularName"], "verbs": res["verbs"]}
        for k in ("shortNames", "categories"):
            if res.get(k):
                d[k] = res[k]
        subs = [{"subresource": x["name"].split("/", 1)[1],
                 "responseKind": {"group": x.get("group", group),
                                  "version": x.get("version", version), "kind": x["kind"]},
                 "verbs": x["verbs"]}
                for x in resources if x["name"].startswith(res["name"] + "/")]
        if subs:
            d["subresources"] = subs
        out.append(d)
    return {"version": version, "resources": out, "freshness": "Current"}


async def core_versions(ctx, r):
    agg = _aggregated_version(ctx, r)
    if agg:
        return _aggregated(agg, [{"metadata": {"creationTimestamp": None},
                                  "versions": [_to_aggregated("", "v1", CORE_RESOURCES)]}])
    return json_response({"kind": "APIVersions", "versions": ["v1"],
                          "serverAddressByClientCIDRs": [
                              {"clientCIDR": "0.0.0.0/0", "serverAddress": ctx.address}]})


async def core_v1(_ctx, _r):
    return json_response({"kind": "APIResourceList", "groupVersion": "v1",
                          "resources": CORE_RESOURCES})


def _crd_groups(ctx):
    """group -> the CRDs served in it (agents.x-k8s.io, extensions.agents.x-k8s.io)."""
    out = {}
    for kind in ctx.crd_kinds.values():
        out.setdefault(kind.crd.group, []).append(kind.crd)
    return out


def _versions_of(ctx, group):
    return [v for v in ctx.versions if any(v in c.versions for c in _crd_groups(ctx)[group])]


def _group_doc(ctx, group):
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in _versions_of(ctx, group)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def _crd_resources(ctx, group, version):
    out = []
    for crd in _crd_groups(ctx)[group]:
        if version not in crd.versions:
            continue
        names = crd.names
        out += [{"name": crd.plural, "singularName": names.get("singular", ""),
                 "namespaced": True, "kind": crd.kind, "verbs": SANDBOX_VERBS,
                 "shortNames": names.get("shortNames", []),
                 "storageVersionHash": _hash(f"{crd.group}/{crd.storage}/{crd.plural}")},
                {"name": f"{crd.plural}/status", "singularName": "", "namespaced": True,
                 "kind": crd.kind, "verbs": ["get", "patch", "update"]}]
        if (crd.versions[version].get("subresources") or {}).get("scale"):
            out.append({"name": f"{crd.plural}/scale", "singularName": "", "namespaced": True,
                        "group": "autoscaling", "version": "v1", "kind": "Scale",
                        "verbs": ["get", "patch", "update"]})
    return out


async def groups(ctx, r):
    agg = _aggregated_version(ctx, r)
    if agg:
        items = []
        for g in _crd_groups(ctx):
            versions = [_to_aggregated(g, v, _crd_resources(ctx, g, v))
                        for v in _versions_of(ctx, g)]
            items.append({"metadata": {"name": g, "creationTimestamp": None},
                          "versions": versions})
        return _aggregated(agg, items)
    return json_response({"kind": "APIGroupList", "apiVersion": "v1",
                          "groups": [_group_doc(ctx, g) for g in _crd_groups(ctx)]})


async def group(ctx, r):
    if r.match_info["group"] not in _crd_groups(ctx):
        raise ApiError(404, "the server could not find the requested resource")
    return json_response(dict(_group_doc(ctx, r.match_info["group"]), kind="APIGroup",
                              apiVersion="v1"))


async def group_version(ctx, r):
    g, v = r.match_info["group"], r.match_info["version"]
    if g not in _crd_groups(ctx) or v not in _versions_of(ctx, g):
        raise ApiError(404, "the server could not find the requested resource")
    return json_response({"kind": "APIResourceList", "apiVersion": "v1",
                          "groupVersion": f"{g}/{v}",
                          "resources": _crd_resources(ctx, g, v)})


async def namespace(_ctx, r):
    ns = r.match_info["ns"]
    return json_response({"kind": "Namespace", "apiVersion": "v1",
                          "metadata": {"name": ns, "uid": "ns-" + _hash(ns)},
                          "status": {"phase": "Active"}})


async def openapi_v2(_ctx, _r):
    raise ApiError(404, "the server could not find the requested resource")


def _gv_paths(ctx):
    """'apis/GROUP/VERSION' -> (group, version) for every served custom group-version."""
    return {f"apis/{g}/{v}": (g, v) for g in _crd_groups(ctx) for v in _versions_of(ctx, g)}


async def openapi_v3_root(ctx, _r):
    """The index kubectl reads to find each group-version's document."""
    paths = {p: {"serverRelativeURL": f"/openapi/v3/{p}?hash=" + _hash(g + v).upper()}
             for p, (g, v) in _gv_paths(ctx).items()}
    return json_response({"paths": paths})


def _schema_name(crd, version):
    return ".".join(reversed(crd.group.split("."))) + f".{version}.{crd.kind}"


def _operation(crd, version, action, verb, params):
    ref = {"$ref": f"#/components/schemas/{_schema_name(crd, version)}"}
    return {"operationId": f"{verb}{crd.kind}", "tags": [f"{crd.group}_{version}"],
            "parameters": [{"name": p, "in": "query", "schema": {"type": "string",
                                                                  "uniqueItems": True}}
                           for p in params],
            "responses": {"200": {"description": "OK",
                                  "content": {"application/json": {"schema": ref}}}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": crd.group, "version": version,
                                                "kind": crd.kind}}


async def openapi_v3(ctx, r):
    """A group-version's OpenAPI v3 document: each kind's paths (with the query parameters
    kubectl checks for, notably fieldValidation) and its CRD's schema."""
    gv = _gv_paths(ctx).get(r.match_info["rest"])
    if gv is None:
        raise ApiError(404, "the server could not find the requested resource")
    g, version = gv
    write = ["dryRun", "fieldManager", "fieldValidation"]
    paths, schemas = {}, {}
    for crd in _crd_groups(ctx)[g]:
        if version not in crd.versions:
            continue
        base = f"/apis/{crd.group}/{version}/namespaces/{{namespace}}/{crd.plural}"
        paths[base] = {"get": _operation(crd, version, "list", "list", ["labelSelector", "watch"]),
                       "post": _operation(crd, version, "post", "create", write)}
        paths[base + "/{name}"] = {
            "get": _operation(crd, version, "get", "read", []),
            "put": _operation(crd, version, "put", "replace", write),
            "patch": _operation(crd, version, "patch", "patch", write + ["force"]),
            "delete": _operation(crd, version, "delete", "delete", ["dryRun"])}
        schema = dict(crd.schema(version))
        schema["x-kubernetes-group-version-kind"] = [{"group": crd.group, "version": version,
                                                      "kind": crd.kind}]
        schemas[_schema_name(crd, version)] = schema
    return json_response({"openapi": "3.0.0",
                          "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                          "paths": paths, "components": {"schemas": schemas}})
