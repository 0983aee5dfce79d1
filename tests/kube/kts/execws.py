"""pods/exec over WebSocket (the Kubernetes channel protocols), running the command for real in
the Sandbox's local sandbox.

Frames carry one channel byte then data: 0 stdin, 1 stdout, 2 stderr, 3 status (a
metav1.Status JSON document), 4 resize; v5 adds 255 'close', [255, 0] half-closing stdin.
The base64 variant sends text frames: an ASCII channel digit then base64 data."""
import asyncio
import base64
import os
import shlex
import signal

from aiohttp import WSMsgType, web

from .status import PODS, ApiError, dumps, not_found

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_B64 = "v4.base64.channel.k8s.io"
PROTOCOLS = (V5, V4, V4_B64)
STDIN, STDOUT, STDERR, STATUS, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
# Output is read and sent in chunks of this size (the WebSocket message size towards clients).
READ_CHUNK = 64 * 1024
# Largest message a client may send (stdin chunks are far smaller; this bounds memory).
MSG_MAX = 16 * 1024 * 1024
# Before a drop knob cuts the connection, wait up to DRAIN_TRIES * DRAIN_PAUSE for the bytes
# already sent to leave.
DRAIN_TRIES, DRAIN_PAUSE = 100, 0.01


def frame_bytes(msg, b64):
    """A client's message as bytes (channel first), or None to skip it. Like the API server,
    the frame type does not matter, only the protocol does (the Python client sends text
    frames for str data)."""
    if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
        return None
    data = msg.data.encode() if msg.type == WSMsgType.TEXT else msg.data
    if b64:
        try:
            data = bytes([data[0] - ord("0")]) + base64.b64decode(data[1:], validate=True)
        except (ValueError, IndexError):
            return None
    return data or None


async def cut_transport(request):
    """A connection lost: no close frame. What was sent before goes out first (abort discards
    the transport's buffer)."""
    t = request.transport
    for _ in range(DRAIN_TRIES):
        if t is None or t.get_write_buffer_size() == 0:
            break
        await asyncio.sleep(DRAIN_PAUSE)
    if t:
        t.abort()


class Session:
    """One exec: the WebSocket, the process and the byte counting for the drop knob."""

    def __init__(self, request, ws, proc, drop_after):
        self.r, self.ws, self.proc = request, ws, proc
        self.b64 = ws.ws_protocol == V4_B64
        self.v5 = ws.ws_protocol == V5
        self.drop_after, self.drop_after_stdin = drop_after
        self.sent = 0
        self.received = 0
        self.dropped = False
        self.gone = False       # the client went away

    async def send(self, channel, data):
        if self.gone:
            return
        if self.drop_after >= 0 and channel in (STDOUT, STDERR):
            room = self.drop_after - self.sent
            if len(data) >= room:
                data = data[:max(room, 0)]
                self.dropped = True
        try:
            if data or not self.dropped:
                if self.b64:
                    await self.ws.send_str(str(channel) + base64.b64encode(data).decode())
                else:
                    await self.ws.send_bytes(bytes([channel]) + data)
            self.sent += len(data) if channel in (STDOUT, STDERR) else 0
            if self.dropped:
                await self.cut()
        except (ConnectionResetError, RuntimeError):
            self.gone = True

    async def cut(self):
        """The drop knobs: no close frame, no status, as when a connection is lost. What was
        sent before goes out first (abort discards the transport's buffer)."""
        self.dropped = self.gone = True
        await cut_transport(self.r)

    async def pump(self, stream, channel):
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                return
            await self.send(channel, chunk)   # once the client is gone, output is discarded

    async def feed(self):
        """Client frames to the process's stdin until the client closes."""
        stdin = self.proc.stdin
        async for msg in self.ws:
            data = frame_bytes(msg, self.b64)
            if data is None:
                continue
            ch, payload = data[0], data[1:]
            if ch == STDIN and self.drop_after_stdin >= 0:
                room = self.drop_after_stdin - self.received
                if len(payload) >= room:
                    payload = payload[:max(room, 0)]
                    self.dropped = True
                self.received += len(payload)
            if ch == STDIN and stdin and not stdin.is_closing():
                try:
                    stdin.write(payload)
                    await stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    stdin = None
            elif ch == CLOSE and self.v5 and payload[:1] == bytes([STDIN]) and stdin:
                stdin.close()
                stdin = None
            if self.dropped:
                await self.cut()
                break
        self.gone = True
        if stdin and not stdin.is_closing():
            stdin.close()


def exit_status(command, code):
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(shlex.quote(c) for c in command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def _validate(ctx, request):
    ns, name = request.match_info["ns"], request.match_info["name"]
    q = request.query
    if ctx.faults.forbidden("create", "pods/exec") or ctx.faults.forbidden("get", "pods/exec"):
        raise ApiError(403, f'pods "{name}" is forbidden: User "{ctx.user}" cannot create '
                       f'resource "pods/exec" in API group "" in the namespace "{ns}"',
                       details={"name": name, "kind": "pods"})
    sandbox = ctx.store.get(ns, name)
    pod = ctx.controller.pod(ns, name) if sandbox else None
    if pod is None:
        raise not_found(PODS, name)
    containers = [c.get("name") for c in (pod.template.get("spec") or {}).get("containers") or []]
    container = q.get("container") or (containers[0] if len(containers) == 1 else None)
    if container is None:
        raise ApiError(400, f"a container name must be specified for pod {name}, choose one of: "
                       f"[{' '.join(containers)}]")
    if container not in containers:
        raise ApiError(400, f"container {container} is not valid for pod {name}")
    command = q.getall("command", [])
    if not command:
        raise ApiError(400, "you must specify at least 1 command")
    if pod.phase != "Running":
        raise ApiError(400, f'unable to upgrade connection: container not found ("{container}")')
    flags = {k: q.get(k, "").lower() in ("1", "true") for k in ("stdin", "stdout", "stderr", "tty")}
    if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
        raise ApiError(400, "you must specify at least 1 of stdin, stdout, stderr")
    return ns, name, pod, command, flags


async def handle(ctx, request):
    ns, name, pod, command, flags = _validate(ctx, request)
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=MSG_MAX, compress=False,
                               autoping=True)
    ready = ws.can_prepare(request)
    if not ready.ok:
        # An SPDY client (POST with Upgrade: SPDY/3.1): not served, so clients use WebSocket.
        raise ApiError(400, "Upgrade request required", "BadRequest")
    await ws.prepare(request)
    request["kts_status"] = 101
    if ws.ws_protocol is None:
        await ws.close(code=1002, message=b"no supported subprotocol offered")
        return ws
    argv, env, cwd = ctx.backend.exec_spec(ns, name, pod.homedir, command, pod.workdir)
    pipe = asyncio.subprocess.PIPE
    null = asyncio.subprocess.DEVNULL
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=pipe if flags["stdin"] else null,
            stdout=pipe if flags["stdout"] else null,
            stderr=pipe if flags["stderr"] else null, env=env, cwd=cwd, start_new_session=True)
    except OSError as e:
        doc = {"metadata": {}, "status": "Failure", "reason": "InternalError",
               "message": f"failed to start the command: {e}"}
        await ws.send_bytes(bytes([STATUS]) + dumps(doc).encode())
        await ws.close()
        return ws
    s = Session(request, ws, proc, ctx.faults.take_exec_drop())
    ctx.exec_sessions.add(s)
    feeder = asyncio.create_task(s.feed())
    pumps = [asyncio.create_task(s.pump(st, ch))
             for st, ch in ((proc.stdout, STDOUT), (proc.stderr, STDERR)) if st]
    try:
        await asyncio.gather(*pumps)
        code = await proc.wait()
        if code < 0:
            code = 128 - code
        if not s.gone:
            doc = exit_status(command, code)
            await s.send(STATUS, dumps(doc).encode())
            await ws.close()
    except asyncio.CancelledError:
        _kill(proc)
        raise
    finally:
        feeder.cancel()
        ctx.exec_sessions.discard(s)
        if proc.returncode is None:
            ctx.orphans.add(asyncio.create_task(_reap(proc)))
    return ws


def _kill(proc):
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


async def _reap(proc):
    """A command whose client went away runs on (as in a real pod) until it ends."""
    await proc.wait()
