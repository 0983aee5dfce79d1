"""Fault knobs set through POST /_test/faults, and the request log behind GET /_test/requests."""
import collections
import math
import re
import time

# Requests remembered for GET /_test/requests; enough for any one test.
REQUEST_LOG_MAX = 2000
# Request bodies kept in the log (the rest is cut): tests assert on small JSON documents.
LOGGED_BODY_MAX = 64 * 1024

KNOBS = {
    # name: (type, default, meaning)
    "conflict_updates": (int, 0, "the next N PUT/PATCH of a Sandbox answer 409 Conflict"),
    "fail_requests": (int, 0, "the next N API requests (matching fail_match) answer fail_status"),
    "fail_status": (int, 500, "the HTTP status of injected failures"),
    "fail_match": (str, "", "regular expression on 'METHOD /path?query'; empty matches all"),
    "exec_drop_after_bytes": (int, -1, "the next exec stream is cut after K output bytes"),
    "exec_drop_after_stdin_bytes": (int, -1, "the next exec stream is cut after K stdin bytes"),
    "portforward_drop_after_bytes": (int, -1, "the next portforward stream is cut after K bytes "
                                     "to the client"),
    "ready_delay": (float, -1.0, "seconds to Ready for Sandboxes created from now; -1: default"),
    "never_ready": (bool, False, "Sandboxes created from now never become Ready"),
    "container_waiting": (list, [], "[REASON, MESSAGE]: pods made from now stay Pending, their "
                          "container waiting with that reason (e.g. ErrImagePull), never Ready"),
    "container_waiting_for": (float, -1.0, "seconds the container_waiting state lasts, then the "
                              "pod starts (a registry that came back); -1: for ever"),
    "pvc_pending": (list, [], "[REASON, MESSAGE]: claims made from now stay Pending with a "
                    "Warning Event of that reason (e.g. ProvisioningFailed)"),
    "warm_pool_empty": (bool, False, "SandboxWarmPools keep no Sandboxes and offer none: "
                        "claims cold-create from the pool's template"),
    "adoption_conflicts": (int, 0, "the next N adoptions of a pool's Sandbox by a claim fail "
                           "(claim Ready=False AdoptionConflict; tried again on the next pass)"),
    "claim_reconciler_error": (str, "", "while set, claims not yet bound get Ready=False "
                               "ReconcilerError 'Error seen: MESSAGE' and no Sandbox"),
    "forbid": (list, [], "['VERB RESOURCE', ...] answered 403, e.g. 'update sandboxes'"),
    "tokens": (list, [], "when not empty, the only bearer tokens the API accepts "
               "(the -token one keeps working for /_test)"),
}

# The bounds of the integer knobs (None: no upper one), checked when a knob is set rather than
# found out when its fault fires: an injected status outside 400-599 is no HTTP response at
# all, a negative count means nothing. A seconds knob is -1 (its default) or finite and >= 0.
INT_BOUNDS = {
    "conflict_updates": (0, None),
    "fail_requests": (0, None),
    "fail_status": (400, 599),
    "exec_drop_after_bytes": (-1, None),
    "exec_drop_after_stdin_bytes": (-1, None),
    "portforward_drop_after_bytes": (-1, None),
}


def check_value(k, v):
    """Raises ValueError naming knob k when v (of the knob's type) is out of its range."""
    t = KNOBS[k][0]
    if t is float and not (v == -1 or (math.isfinite(v) and v >= 0)):
        raise ValueError(f"knob {k!r} wants seconds (a finite number, at least 0) or -1")
    if k in INT_BOUNDS:
        lo, hi = INT_BOUNDS[k]
        if v < lo or (hi is not None and v > hi):
            raise ValueError(f"knob {k!r} wants {lo} to {hi}" if hi is not None else
                             f"knob {k!r} wants at least {lo}")
    if k == "fail_match":
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"knob 'fail_match' is not a regular expression: {e}") from None


class Faults:
    def __init__(self):
        self.reset()
        self.requests = collections.deque(maxlen=REQUEST_LOG_MAX)
        self.seq = 0

    def reset(self):
        for k, (_, default, _) in KNOBS.items():
            setattr(self, k, list(default) if isinstance(default, list) else default)

    def as_dict(self):
        return {k: getattr(self, k) for k in KNOBS}

    def set(self, doc):
        """Applies a JSON object of knobs; raises ValueError naming a bad key or value."""
        if not isinstance(doc, dict):
            raise ValueError("expected a JSON object of knobs")
        for k, v in doc.items():
            if k not in KNOBS:
                raise ValueError(f"unknown knob {k!r} (known: {', '.join(KNOBS)})")
            t = KNOBS[k][0]
            if t is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, t) or (t is int and isinstance(v, bool)):
                raise ValueError(f"knob {k!r} wants a {t.__name__}")
            check_value(k, v)
            if k == "forbid" and not all(isinstance(x, str) and len(x.split()) == 2 for x in v):
                raise ValueError("knob 'forbid' wants strings 'VERB RESOURCE'")
            if k == "container_waiting" and (len(v) not in (0, 2) or
                                             not all(isinstance(x, str) and x for x in v)):
                raise ValueError("knob 'container_waiting' wants [REASON, MESSAGE]")
            if k == "pvc_pending" and (len(v) not in (0, 2) or
                                       not all(isinstance(x, str) and x for x in v)):
                raise ValueError("knob 'pvc_pending' wants [REASON, MESSAGE]")
            if k == "tokens" and not all(isinstance(x, str) and x for x in v):
                raise ValueError("knob 'tokens' wants non-empty strings")
        for k, v in doc.items():
            setattr(self, k, float(v) if KNOBS[k][0] is float else v)

    def take_failure(self, method, path_qs):
        """True when this request must fail with fail_status (consumes one)."""
        if self.fail_requests <= 0:
            return False
        if self.fail_match and not re.search(self.fail_match, f"{method} {path_qs}"):
            return False
        self.fail_requests -= 1
        return True

    def take_conflict(self):
        if self.conflict_updates <= 0:
            return False
        self.conflict_updates -= 1
        return True

    def take_exec_drop(self):
        """(output, stdin) byte counts after which the next exec is cut; -1: never."""
        out, self.exec_drop_after_bytes = self.exec_drop_after_bytes, -1
        inp, self.exec_drop_after_stdin_bytes = self.exec_drop_after_stdin_bytes, -1
        return out, inp

    def take_portforward_drop(self):
        """Bytes to the client after which the next portforward is cut; -1: never."""
        out, self.portforward_drop_after_bytes = self.portforward_drop_after_bytes, -1
        return out

    def forbidden(self, verb, resource):
        return f"{verb} {resource}" in self.forbid

    def log(self, method, path, query, headers, body, status):
        self.seq += 1
        entry = {"seq": self.seq, "time": time.time(), "method": method, "path": path,
                 "query": query, "status": status,
                 "headers": {k: v for k, v in headers.items() if k.lower() != "authorization"},
                 "body": body[:LOGGED_BODY_MAX].decode("utf-8", "replace") if body else ""}
        self.requests.append(entry)
        return entry
