"""Where a Sandbox's pod really runs: a local-backend sandbox (sbx-create/sbx-exec/sbx-delete),
or, for developing the server alone, plain subprocesses in a per-sandbox directory."""
import asyncio
import hashlib
import os
import re
import shutil

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


def go_seconds(seconds):
    return f"{max(1, int(seconds))}s"


class SbxBackend:
    """Local-backend sandboxes through the sbx tools: $SBX_BIN, else this checkout's bin/,
    else PATH. They live in a state root of the server's own (XDG_STATE_HOME=STATE), never
    among the caller's local sandboxes: deleting Sandbox demo must not touch sandbox demo."""

    mode = "sbx"

    def __init__(self, repo_top, state_home):
        self.dirs = [d for d in (os.environ.get("SBX_BIN"), os.path.join(repo_top, "bin")) if d]
        self.state_home = state_home
        # The tools must act on the local backend whatever the caller's environment says
        # (a client under test may run with SANDBOX_BACKEND=kubernetes pointing at us).
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SANDBOX_")}
        self.env["XDG_STATE_HOME"] = state_home

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

    async def _run(self, *argv):
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self.env)
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise BackendError(f"{os.path.basename(argv[0])} exited {proc.returncode}: "
                               f"{err[:TOOL_OUTPUT_MAX].decode(errors='replace').strip()}")
        return out

    async def create(self, ns, name, homedir, ttl_s):
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
        await self._run(self.tool("sbx-delete"), "-backend", "local", "-namespace", ns,
                        local_name(name))

    def exec_spec(self, ns, name, homedir, command, workdir=None):
        """(argv, env, cwd) for running `command` in the sandbox with raw streams, in the
        container's workingDir as a kubelet starts an exec."""
        wd = ["-workdir", workdir] if workdir else []
        return ([self.tool("sbx-exec"), "-backend", "local", "-raw", "-namespace", ns] + wd +
                [local_name(name), "--"] + list(command), self.env, None)


class SubprocessBackend:
    """No isolation at all: commands run on the host with HOME set to a per-sandbox directory."""

    mode = "subprocess"

    def __init__(self, root):
        self.root = root

    def _home(self, ns, name):
        return os.path.join(self.root, "sandboxes", ns, local_name(name), "home")

    async def create(self, ns, name, homedir, ttl_s):
        os.makedirs(self._home(ns, name), exist_ok=True)

    async def touch(self, ns, name, ttl_s):
        if not os.path.isdir(self._home(ns, name)):
            raise BackendError("sandbox does not exist")

    async def delete(self, ns, name):
        shutil.rmtree(os.path.dirname(self._home(ns, name)), ignore_errors=True)

    def exec_spec(self, ns, name, homedir, command, workdir=None):
        home = self._home(ns, name)
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return list(command), env, home
