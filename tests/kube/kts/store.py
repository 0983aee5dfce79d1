"""Objects in memory with resourceVersions, and watch fan-out with a bounded event history."""
import asyncio
import collections
import copy
import datetime
import uuid

# Events kept for watches that resume from an older resourceVersion; older ones get 410 Gone.
HISTORY_MAX = 2000
# Events a slow watcher may have queued before it is cut off (a real server does the same).
WATCH_QUEUE_MAX = 1000


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Conflict(Exception):
    pass


class Exists(Exception):
    pass


class Gone(Exception):
    pass


class Watcher:
    def __init__(self, match):
        self.match = match
        self.queue = asyncio.Queue()
        self.overflowed = False


class Store:
    """Objects keyed by (namespace, name). Stored and returned as dicts; callers get copies."""

    def __init__(self):
        self.rv = 0
        self.objects = {}
        self.history = collections.deque(maxlen=HISTORY_MAX)
        self.watchers = set()

    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _emit(self, kind, obj):
        ev = (int(obj["metadata"]["resourceVersion"]), kind, copy.deepcopy(obj))
        self.history.append(ev)
        for w in list(self.watchers):
            if w.match(ev[2]):
                if w.queue.qsize() >= WATCH_QUEUE_MAX:
                    w.overflowed = True
                    self.watchers.discard(w)
                    w.queue.put_nowait(None)
                else:
                    w.queue.put_nowait((kind, ev[2]))

    def get(self, ns, name):
        o = self.objects.get((ns, name))
        return copy.deepcopy(o) if o else None

    def list(self, match):
        return [copy.deepcopy(o) for k, o in sorted(self.objects.items()) if match(o)]

    def create(self, obj):
        m = obj["metadata"]
        key = (m["namespace"], m["name"])
        if key in self.objects:
            raise Exists()
        m["uid"] = str(uuid.uuid4())
        m["creationTimestamp"] = now_rfc3339()
        m["generation"] = 1
        m["resourceVersion"] = self._next_rv()
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            m.pop(k, None)
        self.objects[key] = copy.deepcopy(obj)
        self._emit("ADDED", obj)
        return copy.deepcopy(obj)

    def update(self, obj, check_rv=True):
        """Replaces the object; a resourceVersion that is set must match the stored one."""
        m = obj["metadata"]
        key = (m["namespace"], m["name"])
        old = self.objects.get(key)
        if old is None:
            raise KeyError(key)
        want = m.get("resourceVersion")
        if check_rv and want and want != old["metadata"]["resourceVersion"]:
            raise Conflict()
        for k in ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                  "deletionGracePeriodSeconds"):
            if k in old["metadata"]:
                m[k] = old["metadata"][k]
            else:
                m.pop(k, None)
        if obj.get("spec") != old.get("spec"):
            m["generation"] = old["metadata"].get("generation", 1) + 1
        if obj == old:
            return copy.deepcopy(old)      # no-op updates keep the resourceVersion
        m["resourceVersion"] = self._next_rv()
        self.objects[key] = copy.deepcopy(obj)
        self._emit("MODIFIED", obj)
        return copy.deepcopy(obj)

    def mark_deleting(self, ns, name):
        """A delete of an object with finalizers: deletionTimestamp set, the object kept."""
        o = self.objects[(ns, name)]
        o["metadata"]["deletionTimestamp"] = now_rfc3339()
        o["metadata"]["deletionGracePeriodSeconds"] = 0
        o["metadata"]["resourceVersion"] = self._next_rv()
        self._emit("MODIFIED", o)
        return copy.deepcopy(o)

    def delete(self, ns, name):
        old = self.objects.pop((ns, name), None)
        if old is None:
            raise KeyError((ns, name))
        old["metadata"]["resourceVersion"] = self._next_rv()
        self._emit("DELETED", old)
        return copy.deepcopy(old)

    def watch(self, match, since):
        """A Watcher fed with events after resourceVersion `since` (None: current objects as
        ADDED first). Raises Gone when `since` is older than the history kept."""
        w = Watcher(match)
        if since is None:
            for o in self.list(match):
                w.queue.put_nowait(("ADDED", o))
        elif since < self.rv:
            oldest = self.history[0][0] if self.history else self.rv + 1
            if since < oldest - 1:
                raise Gone(since)
            for rv, kind, o in self.history:
                if rv > since and match(o):
                    w.queue.put_nowait((kind, copy.deepcopy(o)))
        self.watchers.add(w)
        return w

    def close_watches(self):
        """Ends every watch (its stream sees the end of the queue); returns how many."""
        n = len(self.watchers)
        for w in list(self.watchers):
            w.queue.put_nowait(None)
        self.watchers.clear()
        return n

    def unwatch(self, w):
        self.watchers.discard(w)
