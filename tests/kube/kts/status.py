"""metav1.Status error answers, shaped as the API server shapes them."""
import json

from aiohttp import web


def dumps(doc):
    """JSON as the API server writes it: compact."""
    return json.dumps(doc, separators=(",", ":"))


def json_response(doc, status=200, headers=None, content_type="application/json"):
    return web.json_response(doc, status=status, headers=headers, dumps=dumps,
                             content_type=content_type)

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
           413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
           429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
           504: "Timeout"}


class Resource:
    def __init__(self, group, plural, kind, namespaced=True):
        self.group, self.plural, self.kind, self.namespaced = group, plural, kind, namespaced


PODS = Resource("", "pods", "Pod")


def status_doc(code, message, reason=None, details=None):
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason or REASONS.get(code, "Unknown")}
    if details is not None:
        doc["details"] = details
    doc["code"] = code
    return doc


class ApiError(Exception):
    """Raised by handlers; the middleware turns it into a Status response."""

    def __init__(self, code, message, reason=None, details=None, headers=None):
        super().__init__(message)
        self.doc = status_doc(code, message, reason, details)
        self.code = code
        self.headers = headers or {}

    def response(self):
        return json_response(self.doc, status=self.code, headers=self.headers)


def resource_id(res):
    """'sandboxes.agents.x-k8s.io' or 'pods' (core group)."""
    return f"{res.plural}.{res.group}" if res.group else res.plural


def details(res, name):
    d = {"group": res.group, "kind": res.plural} if res.group else {"kind": res.plural}
    if name:
        d = {"name": name, **d}
    return d


def not_found(res, name):
    return ApiError(404, f'{resource_id(res)} "{name}" not found', details=details(res, name))


def already_exists(res, name):
    return ApiError(409, f'{resource_id(res)} "{name}" already exists', "AlreadyExists",
                    details(res, name))


def conflict(res, name):
    return ApiError(409, f'Operation cannot be fulfilled on {resource_id(res)} "{name}": the '
                    "object has been modified; please apply your changes to the latest version "
                    "and try again", details=details(res, name))


def invalid(res, kind, name, errors):
    texts = [e.text() for e in errors]
    msg = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    d = details(res, name)
    d["kind"] = kind
    d["causes"] = [e.cause() for e in errors]
    return ApiError(422, f'{kind}.{res.group} "{name}" is invalid: {msg}', details=d)


def forbidden(res, user, verb, name, ns):
    what = f'{resource_id(res)} "{name}"' if name else resource_id(res)
    where = f' in the namespace "{ns}"' if ns else " at the cluster scope"
    return ApiError(403, f'{what} is forbidden: User "{user}" cannot {verb} resource '
                    f'"{res.plural}" in API group "{res.group}"{where}',
                    details=details(res, name))
