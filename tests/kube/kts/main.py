"""kube-test-server: command line, startup (certificates, TLS, kubeconfig), shutdown, and the
-ctl client for the /_test control endpoints."""
import argparse
import asyncio
import base64
import json
import logging
import os
import re
import shutil
import signal
import ssl
import sys
import tempfile
import urllib.error
import urllib.request

import yaml
from aiohttp import web

from . import admission, api, controller, extensions, faults, generic, schema, store, volumes
from .backend import BackendError, PodBackend, SbxBackend, SubprocessBackend
from .certs import Authority

PROG = "kube-test-server"
USER = "kube-test-user"
DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
# /_test answers read by -ctl are small; anything bigger is not ours.
CTL_ANSWER_MAX = 64 * 1024 * 1024
CTL_TIMEOUT = 30
# The longest request line and header field: Go's API server takes 1 MB of headers, and exec
# commands travel in the URL, so aiohttp's 8 KiB default is far too small.
REQUEST_LINE_MAX = 1024 * 1024


def go_duration(text):
    """Seconds in a Go duration string ('200ms', '1m30s', '0')."""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in DURATION_RE.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}")
    return total


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="A Kubernetes API server for tests: agents.x-k8s.io Sandboxes, "
        "their pods and WebSocket exec, on 127.0.0.1 over HTTPS.")
    def add(name, **kw):
        p.add_argument("-" + name, "--" + name, **kw)
    add("kubeconfig", required=True, metavar="FILE",
        help="write a kubeconfig for the server here once it is ready (with -ctl: read it)")
    add("ready-delay", type=go_duration, default=0.2, metavar="D",
        help="time from Sandbox creation to Ready=True (Go duration, default 200ms)")
    add("token", default=None, metavar="T", help="bearer token (default: random)")
    add("auth", choices=("token", "cert"), default="token",
        help="credential in the written kubeconfig (both are always accepted)")
    add("namespace", default="default", help="namespace of the kubeconfig's context")
    add("exec-mode", choices=("sbx", "pod", "subprocess"), default="sbx",
        help="sbx: pods are local-backend sandboxes (sbx-create/sbx-exec/sbx-delete); "
        "pod (root only): commands run on the host as the pod's users, with its emptyDir "
        "volumes mounted; subprocess: commands run unisolated on the host")
    add("versions", default="v1beta1,v1alpha1",
        help="comma-separated served versions of agents.x-k8s.io (first is preferred)")
    add("serviceaccount", default=None, metavar="DIR",
        help="also write DIR/token, DIR/ca.crt and DIR/namespace, as a pod's service account "
        "directory (for in-cluster configuration)")
    add("legacy-discovery", action="store_true",
        help="answer /api and /apis only in the legacy form, never aggregated (apidiscovery v2)")
    add("port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    add("crd", default=None, metavar="FILE", help="Sandbox CRD (default: $SBX_SANDBOX_CRD, else "
        "third_party/agent-sandbox/agents.x-k8s.io_sandboxes.yaml in this checkout)")
    add("v", action="store_true", help="log every request on stderr")
    add("ctl", nargs="+", metavar="ARG", help="talk to a running server: faults [JSON] | reset "
        "| requests | clear-requests | expire [NS/]NAME | close-watches")
    return p.parse_args(argv)


class StartError(Exception):
    """The server cannot start (exit 111)."""


class Context:
    """What the handlers share."""

    def __init__(self, args, crd, backend, tokens):
        self.crd = crd
        self.versions = [v for v in args.versions.split(",") if v]
        unknown = [v for v in self.versions if v not in crd.versions]
        if unknown or not self.versions:
            raise SystemExit(f"{PROG}: -versions: the CRD serves {', '.join(crd.versions)}")
        self.store = store.Store()
        self.faults = faults.Faults()
        self.backend = backend
        self.controller = controller.Controller(self.store, backend, self.faults, args.ready_delay)
        # Every custom kind served: (group, plural) -> its CRD, store and controller.
        self.crd_kinds = {(crd.group, crd.plural): extensions.Kind(crd, self.store,
                                                                   self.controller)}
        self.extensions = None
        self.tokens = tokens
        self.user = USER
        self.aggregated_discovery = not args.legacy_discovery
        self.address = ""
        self.watch_responses = set()
        self.exec_sessions = set()
        self.orphans = set()


def kubeconfig_doc(url, ca_pem, ns, user_entry):
    return {"apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": PROG, "cluster": {
                "server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
            "users": [{"name": USER, "user": user_entry}],
            "contexts": [{"name": PROG, "context": {"cluster": PROG, "user": USER,
                                                    "namespace": ns}}],
            "current-context": PROG}


def write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.rename(tmp, path)


async def serve(args, repo_top):
    path = args.crd or schema.crd_path(repo_top)
    try:
        crd = schema.CRD(path)
    except OSError as e:
        raise StartError(f"cannot read the Sandbox CRD {path}: {e.strerror}") from None
    workdir = tempfile.mkdtemp(prefix="kube-test-server.")
    try:
        auth = Authority(workdir, USER)
        state = os.path.join(workdir, "state")
        os.mkdir(state, 0o700)
        if args.exec_mode == "sbx":
            backend = SbxBackend(repo_top, state)
        elif args.exec_mode == "pod":
            try:
                backend = PodBackend(workdir, [os.environ.get("SBX_BIN"),
                                               os.path.join(repo_top, "bin")])
            except BackendError as e:
                raise StartError(str(e)) from None
        else:
            backend = SubprocessBackend(workdir)
        token = args.token or api.random_token()
        ctx = Context(args, crd, backend, [token])
        try:
            ctx.extensions = extensions.Extensions(ctx, repo_top)
        except OSError as e:
            raise StartError(f"cannot read the extension CRDs in "
                             f"{extensions.crd_dir(repo_top)}: {e.strerror}") from None
        for plural, kind in ctx.extensions.kinds.items():
            ctx.crd_kinds[(extensions.GROUP, plural)] = kind
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(auth.path("server.crt"), auth.path("server.key"))
        tls.load_verify_locations(auth.path("ca.crt"))
        tls.verify_mode = ssl.CERT_OPTIONAL
        app = web.Application(middlewares=api.make_middlewares(ctx), client_max_size=api.BODY_MAX)
        app.add_routes(generic.routes_for(ctx))   # first: it extends discovery
        app.add_routes(api.routes_for(ctx))
        runner = web.AppRunner(app, handle_signals=False, access_log=None,
                               max_line_size=REQUEST_LINE_MAX, max_field_size=REQUEST_LINE_MAX)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port, ssl_context=tls, shutdown_timeout=1.0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]   # noqa: SLF001 (aiohttp has no API)
        ctx.address = f"127.0.0.1:{port}"
        url = f"https://{ctx.address}"
        ctx.controller.admit = lambda ns, name, spec: admission.admit_pod(ctx, ns, name,
                                                                          spec)[0]
        ctx.controller.collect = lambda uid: generic.owned_by(ctx, uid)
        ctx.controller.claims = volumes.Claims(ctx, os.path.join(workdir, "claims"))
        ctx.controller.start()
        ctx.extensions.start()
        user = {"token": token} if args.auth == "token" else {
            "client-certificate-data": base64.b64encode(auth.client_cert_pem).decode(),
            "client-key-data": base64.b64encode(auth.client_key_pem).decode()}
        if args.serviceaccount:
            os.makedirs(args.serviceaccount, exist_ok=True)
            for name, text in (("token", token), ("ca.crt", auth.ca_pem.decode()),
                               ("namespace", args.namespace)):
                write_atomic(os.path.join(args.serviceaccount, name), text)
        write_atomic(args.kubeconfig, yaml.safe_dump(kubeconfig_doc(url, auth.ca_pem,
                                                                    args.namespace, user)))
        print(json.dumps({"server": url, "kubeconfig": args.kubeconfig, "pid": os.getpid(),
                          "exec_mode": backend.mode, "state_home": state}), flush=True)
        logging.getLogger("kts").info("serving %s, kubeconfig %s", url, args.kubeconfig)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        for resp in list(ctx.watch_responses):
            try:
                await resp.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
        await runner.cleanup()
        await ctx.controller.shutdown()
        for t in list(ctx.orphans):
            t.cancel()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        try:
            if os.path.exists(args.kubeconfig):
                os.unlink(args.kubeconfig)
        except OSError:
            pass


def ctl(args):
    """-ctl: one request to /_test on the server the kubeconfig names; prints its JSON."""
    try:
        with open(args.kubeconfig, encoding="utf-8") as f:
            kc = yaml.safe_load(f)
        cluster = kc["clusters"][0]["cluster"]
        user = kc["users"][0]["user"]
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError) as e:
        print(f"{PROG}: -ctl: cannot read the kubeconfig {args.kubeconfig}: {e}", file=sys.stderr)
        return 111
    tls = ssl.create_default_context(cadata=base64.b64decode(
        cluster["certificate-authority-data"]).decode())
    headers = {"Content-Type": "application/json"}
    if "token" in user:
        headers["Authorization"] = "Bearer " + user["token"]
    else:
        d = tempfile.mkdtemp(prefix="kts-ctl.")
        try:
            for k, fn in (("client-certificate-data", "c.crt"), ("client-key-data", "c.key")):
                with open(os.path.join(d, fn), "wb") as out:
                    out.write(base64.b64decode(user[k]))
            tls.load_cert_chain(os.path.join(d, "c.crt"), os.path.join(d, "c.key"))
        finally:
            shutil.rmtree(d, ignore_errors=True)
    verb, rest = args.ctl[0], args.ctl[1:]
    if verb == "faults":
        method, path, body = ("POST", "faults", rest[0]) if rest else ("GET", "faults", None)
    elif verb == "reset":
        method, path, body = "DELETE", "faults", None
    elif verb == "requests":
        method, path, body = "GET", "requests", None
    elif verb == "clear-requests":
        method, path, body = "DELETE", "requests", None
    elif verb == "close-watches":
        method, path, body = "POST", "close-watches", None
    elif verb == "expire" and len(rest) == 1:
        ns, _, name = rest[0].rpartition("/")
        method, path, body = "POST", "expire", json.dumps({"namespace": ns or "default",
                                                           "name": name})
    else:
        print(f"{PROG}: -ctl: unknown command {' '.join(args.ctl)!r}", file=sys.stderr)
        return 100
    req = urllib.request.Request(cluster["server"] + api.TEST_PREFIX + path, method=method,
                                 data=body.encode() if body else None, headers=headers)
    try:
        with urllib.request.urlopen(req, context=tls, timeout=CTL_TIMEOUT) as resp:
            data = json.loads(resp.read(CTL_ANSWER_MAX))
    except urllib.error.HTTPError as e:
        msg = e.read(CTL_ANSWER_MAX).decode(errors="replace")
        try:
            msg = json.loads(msg).get("message", msg)
        except ValueError:
            pass
        print(f"{PROG}: -ctl {verb}: {e.code}: {msg}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"{PROG}: -ctl {verb}: {e}", file=sys.stderr)
        return 111
    if verb == "requests":
        for r in data["requests"]:
            print(json.dumps(r))
    else:
        print(json.dumps(data))
    return 0


def main(argv, repo_top):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.v else logging.WARNING, stream=sys.stderr,
                        format=f"{PROG}: %(message)s")
    if args.ctl:
        return ctl(args)
    if args.v:
        logging.getLogger("aiohttp.access").setLevel(logging.INFO)
    try:
        asyncio.run(serve(args, repo_top))
    except (StartError, OSError, yaml.YAMLError, KeyError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 111
    return 0
