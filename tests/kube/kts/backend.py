"""Where a Sandbox's pod really runs: a local-backend sandbox (sbx-create/sbx-exec/sbx-delete),
or, for developing the server alone, plain subprocesses in a per-sandbox directory."""
import asyncio
import hashlib
import os
import re
import shutil
import socket

LOCAL_NAME_RE = re.compile(r"^[a-z0-9]{1,40}$")
# sbx tool output kept for error messages; more is noise.
TOOL_OUTPUT_MAX = 4096


def local_name(name):
    """Kubernetes names allow '-' and '.', local sandbox names do not: map those to a digest."""
    if LOCAL_NAME_RE.match(name):
        return name
    return "k" + hashlib.sha256(name.encode()).hexdigest()[:39]


class BackendError(Exception):
    pass


# The helper in a sandbox's network namespace: one new TCP socket handed back (SCM_RIGHTS) per
# byte asked, until its socket closes. It never connects: the server does, from outside.
NETNS_HELPER = """
import socket
s = socket.socket(fileno=0)
while s.recv(1):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    socket.send_fds(s, [b"k"], [t.fileno()])
    t.close()
"""
# The helper answers at once; longer means it is gone.
HELPER_WAIT = 5.0


async def connect_host(port):
    """A connection to 127.0.0.1:port of the host (modes without a network namespace)."""
    return await asyncio.open_connection("127.0.0.1", port)


def children(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children", encoding="ascii") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def go_seconds(seconds):
    return f"{max(1, int(seconds))}s"


class SbxBackend:
    """Local-backend sandboxes through the sbx tools: $SBX_BIN, else this checkout's bin/,
    else PATH. They live in a state root of the server's own (XDG_STATE_HOME=STATE), never
    among the caller's local sandboxes: deleting Sandbox demo must not touch sandbox demo; and
    with a HOME of the server's own, so the caller's session backups (HOME/.local/sandboxed-tools)
    are not the backing sandboxes' own: making the sandbox behind Sandbox demo must not mark
    session demo's restore as owed."""

    mode = "sbx"

    def __init__(self, repo_top, state_home):
        self.dirs = [d for d in (os.environ.get("SBX_BIN"), os.path.join(repo_top, "bin")) if d]
        self.state_home = state_home
        # The tools must act on the local backend whatever the caller's environment says
        # (a client under test may run with SANDBOX_BACKEND=kubernetes pointing at us).
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SANDBOX_")}
        self.env["XDG_STATE_HOME"] = state_home
        self.env["HOME"] = os.path.join(state_home, "home")
        os.makedirs(self.env["HOME"], mode=0o700, exist_ok=True)
        self.helpers = {}       # (ns, name): (socket, process, lock) of its netns helper

    def tool(self, name):
        for d in self.dirs:
            p = os.path.join(d, name)
            if os.access(p, os.X_OK):
                return p
        p = shutil.which(name)
        if not p:
            raise BackendError(f"{name} not found in {' or '.join(self.dirs)} nor on PATH "
                               "(run make, or set SBX_BIN)")
        return p

    async def _run(self, *argv, stdin=None, stdout=None):
        with open(stdin or os.devnull, "rb") as inp:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=inp, stdout=stdout or asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self.env)
            out, err = await proc.communicate()
        if proc.returncode != 0:
            raise BackendError(f"{os.path.basename(argv[0])} exited {proc.returncode}: "
                               f"{err[:TOOL_OUTPUT_MAX].decode(errors='replace').strip()}")
        return out

    async def create(self, ns, name, homedir, ttl_s, spec=None):
        argv = [self.tool("sbx-create"), "-backend", "local", "-namespace", ns,
                "-image", "host", "-ttl", go_seconds(ttl_s)]
        if homedir:
            argv += ["-homedir", homedir]
        await self._run(*argv, local_name(name))

    async def touch(self, ns, name, ttl_s):
        await self._run(self.tool("sbx-touch"), "-backend", "local", "-namespace", ns,
                        "-ttl", go_seconds(ttl_s),
                        local_name(name))

    async def delete(self, ns, name):
        self.drop_helper(ns, name)
        await self._run(self.tool("sbx-delete"), "-backend", "local", "-namespace", ns,
                        local_name(name))

    # A claim's data is a tar of the directory mounted from it (sbx-cp's stream).
    async def save_volume(self, ns, name, path, data):
        """Keeps directory path of the sandbox in the claim's data directory."""
        tmp = os.path.join(data, "volume.tar.tmp")
        with open(tmp, "wb") as out:
            await self._run(self.tool("sbx-cp"), "-backend", "local", "-namespace", ns,
                            f"{local_name(name)}:{path.rstrip('/')}/.", "-", stdout=out)
        os.rename(tmp, os.path.join(data, "volume.tar"))

    async def load_volume(self, ns, name, path, data):
        """Puts what save_volume kept back at path (nothing when the claim is new)."""
        tar = os.path.join(data, "volume.tar")
        if os.path.exists(tar):
            await self._run(self.tool("sbx-cp"), "-backend", "local", "-namespace", ns, "-",
                            f"{local_name(name)}:{path}", stdin=tar)

    def _sandbox_pid(self, ns, name):
        """A process of the sandbox (bubblewrap's child), found from its supervisor."""
        d = os.path.join(self.state_home, "sbx", ns, local_name(name))
        try:
            with open(os.path.join(d, "supervisor.pid"), encoding="ascii") as f:
                sup = int(f.read().strip())
            own = os.stat(f"/proc/{sup}/ns/net").st_ino
        except (OSError, ValueError):
            raise ConnectionRefusedError(111, "the pod's sandbox is not running") from None
        for kid in children(sup):
            for grand in children(kid):
                try:
                    if os.stat(f"/proc/{grand}/ns/net").st_ino != own:
                        return grand
                except OSError:
                    pass
        raise ConnectionRefusedError(111, "the pod's sandbox is not running")

    async def _netns_socket(self, ns, name):
        """A TCP socket of the sandbox's network namespace, from its helper (started on first
        use, entering the namespaces from outside as sbx-port does)."""
        h = self.helpers.get((ns, name))
        if h is None or h[1].returncode is not None:
            pid = self._sandbox_pid(ns, name)
            mine, theirs = socket.socketpair()
            proc = await asyncio.create_subprocess_exec(
                "nsenter", "--target", str(pid), "--user", "--net", "--preserve-credentials",
                "--", "/usr/bin/python3", "-c", NETNS_HELPER, stdin=theirs,
                stdout=asyncio.subprocess.DEVNULL, env=self.env)
            theirs.close()
            mine.settimeout(HELPER_WAIT)
            h = self.helpers[(ns, name)] = (mine, proc, asyncio.Lock())
        async with h[2]:
            def ask():
                h[0].sendall(b"s")
                _, fds, _, _ = socket.recv_fds(h[0], 1, 1)
                return fds
            try:
                fds = await asyncio.get_running_loop().run_in_executor(None, ask)
            except OSError:
                fds = []
        if not fds:
            raise ConnectionRefusedError(111, "the pod's network namespace cannot be entered")
        return socket.socket(fileno=fds[0])

    async def connect(self, ns, name, port):
        """(reader, writer) of a connection to 127.0.0.1:port in the sandbox."""
        sock = await self._netns_socket(ns, name)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        except OSError:
            sock.close()
            raise
        return await asyncio.open_connection(sock=sock)

    def drop_helper(self, ns, name):
        h = self.helpers.pop((ns, name), None)
        if h:
            h[0].close()
            if h[1].returncode is None:
                h[1].kill()

    def exec_spec(self, ns, name, homedir, command, workdir=None):
        """(argv, env, cwd) for running `command` in the sandbox with raw streams, in the
        container's workingDir as a kubelet starts an exec."""
        wd = ["-workdir", workdir] if workdir else []
        return ([self.tool("sbx-exec"), "-backend", "local", "-raw", "-namespace", ns] + wd +
                [local_name(name), "--"] + list(command), self.env, None)


class SubprocessBackend:
    """No isolation at all: commands run on the host with HOME set to a per-sandbox directory."""

    mode = "subprocess"

    async def connect(self, ns, name, port):
        return await connect_host(port)

    def __init__(self, root):
        self.root = root

    def _home(self, ns, name):
        return os.path.join(self.root, "sandboxes", ns, local_name(name), "home")

    async def create(self, ns, name, homedir, ttl_s, spec=None):
        os.makedirs(self._home(ns, name), exist_ok=True)

    async def touch(self, ns, name, ttl_s):
        if not os.path.isdir(self._home(ns, name)):
            raise BackendError("sandbox does not exist")

    async def delete(self, ns, name):
        shutil.rmtree(os.path.dirname(self._home(ns, name)), ignore_errors=True)

    # Only the home is a directory of its own here: a claim mounted there is kept as a copy.
    async def save_volume(self, ns, name, path, data):
        src = os.path.join(data, "volume")
        shutil.rmtree(src, ignore_errors=True)
        if os.path.isdir(self._home(ns, name)):
            shutil.copytree(self._home(ns, name), src, symlinks=True)

    async def load_volume(self, ns, name, path, data):
        src = os.path.join(data, "volume")
        if os.path.isdir(src):
            shutil.copytree(src, self._home(ns, name), symlinks=True, dirs_exist_ok=True)

    def exec_spec(self, ns, name, homedir, command, workdir=None):
        home = self._home(ns, name)
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return list(command), env, home


class PodBackend:
    """A pod as the kubelet runs it, as far as its identity and files go (root only, for
    tests): commands run on the host as the pod's runAsUser/runAsGroup with fsGroup as their
    supplementary group, no capabilities and no_new_privs (allowPrivilegeEscalation: false),
    in a mount namespace of their own where the pod's emptyDir volumes, directories owned by
    root and group fsGroup with mode 2777 as the kubelet makes them, are mounted at their
    mountPaths; they start in the container's workingDir with HOME and PATH from the pod. No
    other isolation: the host's pid and network namespaces, its root filesystem (read-only to
    a non-root uid but for its sticky directories). Each process carries KTS_POD=<uid> so that
    deleting the pod kills what it left running."""

    mode = "pod"

    async def connect(self, ns, name, port):
        return await connect_host(port)
    # The tool directories (the tree's bin/) are bound under a tmpfs on /mnt first, so a
    # volume mounted over their host path (a clone under /tmp, the pod's /tmp emptyDir) does
    # not hide them; PATH names them there.
    SCRIPT = ('set -e; r=$1; wd=$2; u=$3; g=$4; gs=$5; shift 5; i=0\n'
              'while [ "$1" != -- ]; do [ $i = 0 ] && mount -t tmpfs -o mode=755 kts /mnt\n'
              '  mkdir /mnt/kts-tools$i; mount --bind "$1" /mnt/kts-tools$i; i=$((i + 1)); shift\n'
              'done; shift\n'
              'while [ "$1" != -- ]; do src=$1 dst=$2; shift 2\n'
              '  if [ ! -d "$dst" ]; then p=$(dirname "$dst"); [ -d "$p" ] || exit 125;\n'
              '    mount -t tmpfs -o mode=755 kts "$p"; mkdir -p "$dst"; fi\n'
              '  mount --bind "$src" "$dst"; done; shift\n'
              'cd "$wd"\n'
              'if [ "$u" = 0 ]; then exec setpriv --reuid 0 --regid "$g" --groups "$gs" '
              '--no-new-privs --bounding-set "$KTS_CAPS" --inh-caps "$KTS_CAPS" -- "$@"; fi\n'
              'exec setpriv --reuid "$u" --regid "$g" --groups "$gs" --no-new-privs '
              '--inh-caps=-all --bounding-set=-all -- "$@"\n')

    def __init__(self, root, tool_dirs):
        if os.geteuid() != 0:
            raise BackendError("-exec-mode pod runs commands as the pods' users: it needs root")
        self.root = root
        self.tool_dirs = [d for d in tool_dirs if d and os.path.isdir(d)]
        self.pods = {}

    def _dir(self, ns, name):
        return os.path.join(self.root, "pods", ns, local_name(name))

    async def create(self, ns, name, homedir, ttl_s, spec=None):
        spec = spec or {}
        psc = spec.get("securityContext") or {}
        c = (spec.get("containers") or [{}])[0]
        csc = c.get("securityContext") or {}
        uid = csc.get("runAsUser", psc.get("runAsUser", 0))
        gid = csc.get("runAsGroup", psc.get("runAsGroup", 0))
        fs_group = psc.get("fsGroup")
        groups = [g for g in [gid, fs_group] + list(psc.get("supplementalGroups") or [])
                  if g is not None]
        d = self._dir(ns, name)
        os.makedirs(d, mode=0o755, exist_ok=True)
        os.chmod(os.path.dirname(d), 0o755)
        mounts = []
        vols = {v.get("name"): v for v in spec.get("volumes") or []
                if "emptyDir" in v or "persistentVolumeClaim" in v}
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                raise BackendError(f"volume {m.get('name')!r}: only emptyDir and "
                                   "persistentVolumeClaim volumes are served")
            claim = (vols[m["name"]].get("persistentVolumeClaim") or {}).get("claimName")
            # A claim's directory outlives the pod (save_volume and load_volume have nothing
            # to do); an emptyDir's goes with it.
            src = os.path.join(self.root, "claims", ns, claim) if claim else \
                os.path.join(d, "volumes", m["name"])
            os.makedirs(src, exist_ok=True)
            os.chown(src, 0, fs_group if fs_group is not None else 0)
            os.chmod(src, 0o2777 if fs_group is not None else 0o777)
            mounts += [src, m["mountPath"]]
        env = {"PATH": ":".join(["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                 "/sbin", "/bin"] +
                                [f"/mnt/kts-tools{i}" for i in range(len(self.tool_dirs))]),
               "HOSTNAME": name, "KTS_POD": d}
        for e in c.get("env") or []:
            if "value" in e:
                env[e["name"]] = e["value"]
        caps = csc.get("capabilities") or {}
        drop = caps.get("drop") or []
        env["KTS_CAPS"] = ",".join((["-all"] if "ALL" in drop else [f"-{x.lower()}" for x in drop])
                                   + [f"+{x.lower()}" for x in caps.get("add") or []]) or "+all"
        self.pods[(ns, name)] = {"uid": uid, "gid": gid, "groups": groups, "mounts": mounts,
                                 "env": env, "workdir": c.get("workingDir") or "/"}

    async def touch(self, ns, name, ttl_s):
        if (ns, name) not in self.pods:
            raise BackendError("pod does not exist")

    async def delete(self, ns, name):
        p = self.pods.pop((ns, name), None)
        d = self._dir(ns, name)
        if p:
            for pid in [x for x in os.listdir("/proc") if x.isdigit()]:
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if f"KTS_POD={d}".encode() in f.read().split(b"\0"):
                            os.kill(int(pid), 9)
                except OSError:
                    pass
        shutil.rmtree(d, ignore_errors=True)

    async def save_volume(self, ns, name, path, data):
        pass

    async def load_volume(self, ns, name, path, data):
        pass

    def exec_spec(self, ns, name, homedir, command, workdir=None):
        p = self.pods.get((ns, name))
        if p is None:
            return ["false"], {}, None
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", self.SCRIPT,
                "sh", self.root, workdir or p["workdir"], str(p["uid"]), str(p["gid"]),
                ",".join(str(g) for g in p["groups"]) or str(p["gid"])] + self.tool_dirs + \
            ["--"] + p["mounts"] + ["--"] + list(command)
        return argv, dict(p["env"]), None
