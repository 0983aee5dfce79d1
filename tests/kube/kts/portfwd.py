"""pods/portforward over WebSocket (the kubelet's v4 channel protocol), into the Sandbox's
local sandbox.

Port i of ?ports= gets channel 2i for its data and 2i+1 for errors. The server begins each
channel with the port, 2 bytes little-endian; what the client sends carries no prefix. A
failed connect in the pod is told as text on the error channel, then the WebSocket closes.
Once the pod's side ends, the WebSocket closes; once the client closes it, so does the
connection in the pod (v4 has no half-close). Each WebSocket carries one connection per port,
as kubectl and client-go use it."""
import asyncio
import base64
import os
import struct

from aiohttp import web

from . import spdy
from .execws import MSG_MAX, READ_CHUNK, cut_transport, frame_bytes
from .status import PODS, ApiError, not_found

V4 = "v4.channel.k8s.io"
V4_B64 = "v4.base64.channel.k8s.io"
# Ports one request may ask for (kubectl asks for one per WebSocket).
PORTS_MAX = 16


def _ports(ctx, request, need_ports):
    ns, name = request.match_info["ns"], request.match_info["name"]
    if ctx.faults.forbidden("create", "pods/portforward"):
        raise ApiError(403, f'pods "{name}" is forbidden: User "{ctx.user}" cannot create '
                       f'resource "pods/portforward" in API group "" in the namespace "{ns}"',
                       details={"name": name, "kind": "pods"})
    sandbox = ctx.store.get(ns, name)
    pod = ctx.controller.pod(ns, name) if sandbox else None
    if pod is None:
        raise not_found(PODS, name)
    ports = []
    for item in ",".join(request.query.getall("ports", [])).split(","):
        if not item:
            continue
        if not item.isdigit() or not 0 < int(item) < 65536 or len(ports) == PORTS_MAX:
            raise ApiError(400, f"invalid port {item!r}")
        ports.append(int(item))
    if not ports and need_ports:
        raise ApiError(400, "at least 1 port must be specified")
    if pod.phase != "Running":
        raise ApiError(400, f"pod {name} is not running")
    return ns, name, pod, ports


class Stream:
    """One port of one WebSocket: the connection in the pod and the bytes both ways."""

    def __init__(self, sess, index, port):
        self.s, self.i, self.port = sess, index, port
        self.writer = None

    async def open(self, ns, name, uid):
        try:
            reader, self.writer = await self.s.ctx.backend.connect(ns, name, self.port)
        except OSError as e:
            why = os.strerror(e.errno) if e.errno else str(e)
            await self.s.send(2 * self.i + 1,
                              f"error forwarding port {self.port} to pod {name}, uid {uid}: "
                              f"failed to connect to localhost:{self.port} inside the pod: "
                              f"{why}".encode())
            return None
        return reader

    async def pump(self, reader):
        """The pod's bytes to the client until the pod's side ends."""
        while True:
            chunk = await reader.read(READ_CHUNK)
            if not chunk:
                return
            await self.s.send(2 * self.i, chunk)
            if self.s.gone:
                return


class Session:
    def __init__(self, ctx, request, ws, drop_after):
        self.ctx, self.r, self.ws = ctx, request, ws
        self.b64 = ws.ws_protocol == V4_B64
        self.drop_after = drop_after
        self.sent = 0
        self.gone = False

    async def send(self, channel, data):
        if self.gone:
            return
        cut = False
        if self.drop_after >= 0 and channel % 2 == 0:
            room = self.drop_after - self.sent
            if len(data) >= room:
                data, cut = data[:max(room, 0)], True
        try:
            if data or not cut:
                if self.b64:
                    await self.ws.send_str(str(channel) + base64.b64encode(data).decode())
                else:
                    await self.ws.send_bytes(bytes([channel]) + data)
            self.sent += len(data) if channel % 2 == 0 else 0
        except (ConnectionResetError, RuntimeError):
            self.gone = True
        if cut:
            await self.cut()

    async def cut(self):
        """The drop knob: the connection ends with no close frame, as when it is lost."""
        self.gone = True
        await cut_transport(self.r)

    async def feed(self, streams):
        """Client frames to the connections in the pod until the client closes."""
        async for msg in self.ws:
            data = frame_bytes(msg, self.b64)
            if data is None or data[0] % 2 or data[0] // 2 >= len(streams):
                continue
            w = streams[data[0] // 2].writer
            if w and not w.is_closing():
                try:
                    w.write(data[1:])
                    await w.drain()
                except (BrokenPipeError, ConnectionResetError):
                    pass


async def handle(ctx, request):
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    # kubectl's SPDY tunnel names its ports in each stream's headers, not in the query.
    ns, name, pod, ports = _ports(ctx, request, spdy.PROTOCOL not in offered)
    ws = web.WebSocketResponse(protocols=(V4, V4_B64, spdy.PROTOCOL), max_msg_size=MSG_MAX,
                               compress=False, autoping=True)
    if not ws.can_prepare(request).ok:
        # SPDY (POST with Upgrade: SPDY/3.1) is not served: clients use WebSocket.
        raise ApiError(400, "Upgrade request required", "BadRequest")
    await ws.prepare(request)
    request["kts_status"] = 101
    if ws.ws_protocol == spdy.PROTOCOL:
        await spdy.Tunnel(ctx, ws, ns, name, pod.uid).run()
        return ws
    sess = Session(ctx, request, ws, ctx.faults.take_portforward_drop())
    streams = [Stream(sess, i, p) for i, p in enumerate(ports)]
    for s in streams:   # each channel begins with its port
        for ch in (2 * s.i, 2 * s.i + 1):
            await sess.send(ch, struct.pack("<H", s.port))
    readers = [await s.open(ns, name, pod.uid) for s in streams]
    feeder = asyncio.create_task(sess.feed(streams))
    pumps = [asyncio.create_task(s.pump(r)) for s, r in zip(streams, readers) if r]
    try:
        if pumps:
            done, _ = await asyncio.wait(pumps + [feeder], return_when=asyncio.FIRST_COMPLETED)
            if feeder not in done:
                await asyncio.gather(*pumps)
    finally:
        feeder.cancel()
        for p in pumps:
            p.cancel()
        for s in streams:
            if s.writer:
                s.writer.close()
    if not sess.gone:
        await ws.close()
    return ws
