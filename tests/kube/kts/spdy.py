"""pods/portforward as kubectl port-forward speaks it: SPDY/3.1 tunneled over a WebSocket
(subprotocol SPDY/3.1+portforward.k8s.io, kubectl 1.31 and later), into the same connections
as portfwd.py.

The client opens two streams per connection, both named by the headers streamtype (error or
data), port and requestid; each gets a SYN_REPLY. Bytes go in DATA frames both ways, and FIN
half-closes a stream: the client's FIN on a data stream becomes the end of the pod
connection's input. A failed connect is told on the error stream; once the pod's side ends,
both streams are finished. Header blocks are zlib streams (one per direction) primed with
SPDY/3's dictionary. Only what kubectl uses is served; PING is answered."""
import asyncio
import os
import struct
import zlib

from aiohttp import WSMsgType

from .execws import READ_CHUNK

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY = 1, 2, 3, 4, 6, 7
FIN = 1
# A frame longer than this is not one kubectl sends (its data frames are 32 KiB).
FRAME_MAX = 1 << 20
# The header block zlib dictionary of SPDY/3 (draft 3, section 2.6.10.1).
DICTIONARY = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put\x00"
    b"\x00\x00\x06delete\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-ch"
    b"arset\x00\x00\x00\x0faccept-encoding\x00\x00\x00\x0faccept-language\x00\x00\x00\raccep"
    b"t-ranges\x00\x00\x00\x03age\x00\x00\x00\x05allow\x00\x00\x00\rauthorization\x00\x00"
    b"\x00\rcache-control\x00\x00\x00\nconnection\x00\x00\x00\x0ccontent-base\x00\x00\x00"
    b"\x10content-encoding\x00\x00\x00\x10content-language\x00\x00\x00\x0econtent-length\x00"
    b"\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\rcontent-range\x00"
    b"\x00\x00\x0ccontent-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expect"
    b"\x00\x00\x00\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04host\x00\x00\x00\x08if-matc"
    b"h\x00\x00\x00\x11if-modified-since\x00\x00\x00\rif-none-match\x00\x00\x00\x08if-range"
    b"\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\rlast-modified\x00\x00\x00\x08location"
    b"\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00\x00\x12proxy-authenticate"
    b"\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00"
    b"\x00\x00\x0bretry-after\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07trailer"
    b"\x00\x00\x00\x11transfer-encoding\x00\x00\x00\x07upgrade\x00\x00\x00\nuser-agent\x00"
    b"\x00\x00\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warning\x00\x00\x00\x10www-authenti"
    b"cate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00\x00\x06status\x00\x00\x00\x06200"
    b" OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1\x00\x00\x00\x03url\x00\x00\x00\x06p"
    b"ublic\x00\x00\x00\nset-cookie\x00\x00\x00\nkeep-alive\x00\x00\x00\x06origin10010120120"
    b"2205206300302303304305306307402405406407408409410411412413414415416417502504505203 Non"
    b"-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauth"
    b"orized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Servic"
    b"e UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, "
    b"Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml"
    b",application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sd"
    b"chcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)


class Tunnel:
    """One tunneled SPDY session: its frames, its streams and their connections in the pod."""

    def __init__(self, ctx, ws, ns, name, uid):
        self.ctx, self.ws, self.ns, self.name, self.uid = ctx, ws, ns, name, uid
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)
        self.deflate = zlib.compressobj(zdict=DICTIONARY)
        self.buf = b""
        self.pairs = {}         # requestid: {"error": stream id, "data": stream id, ...}
        self.data = {}          # data stream id: the pair it belongs to
        self.tasks = set()
        self.lock = asyncio.Lock()

    async def frame(self, data):
        async with self.lock:
            await self.ws.send_bytes(data)

    async def control(self, ftype, flags, payload):
        await self.frame(struct.pack(">HHI", 0x8003, ftype, (flags << 24) | len(payload)) +
                         payload)

    async def send_data(self, sid, data, fin=False):
        await self.frame(struct.pack(">II", sid, ((FIN if fin else 0) << 24) | len(data)) + data)

    def headers(self, block):
        raw = self.inflate.decompress(block)
        n, = struct.unpack_from(">I", raw)
        out, at = {}, 4
        for _ in range(n):
            k, = struct.unpack_from(">I", raw, at)
            key = raw[at + 4:at + 4 + k].decode()
            at += 4 + k
            v, = struct.unpack_from(">I", raw, at)
            out[key.lower()] = raw[at + 4:at + 4 + v].decode()
            at += 4 + v
        return out

    async def reply(self, sid):
        block = self.deflate.compress(struct.pack(">I", 0)) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        await self.control(SYN_REPLY, 0, struct.pack(">I", sid) + block)

    async def run(self):
        async for msg in self.ws:
            if msg.type != WSMsgType.BINARY:
                continue
            self.buf += msg.data
            while len(self.buf) >= 8:
                length = struct.unpack_from(">I", self.buf, 4)[0] & 0xFFFFFF
                if length > FRAME_MAX:
                    return
                if len(self.buf) < 8 + length:
                    break
                head, body = self.buf[:8], self.buf[8:8 + length]
                self.buf = self.buf[8 + length:]
                await self.on_frame(head, body)
        for p in self.pairs.values():
            if p.get("writer"):
                p["writer"].close()

    async def on_frame(self, head, body):
        first, word = struct.unpack(">II", head)
        flags = word >> 24
        if not first & 0x80000000:          # DATA
            p = self.data.get(first)
            if p is None:
                return
            if body:
                p["pending"].append(body)
            if flags & FIN:
                p["pending"].append(None)
            p["wake"].set()
            return
        ftype = first & 0xFFFF
        if ftype == SYN_STREAM:
            sid = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
            h = self.headers(body[10:])
            await self.reply(sid)
            p = self.pairs.setdefault(h.get("requestid", ""), {"pending": [],
                                                                "wake": asyncio.Event()})
            p[h.get("streamtype", "")] = sid
            p["port"] = int(h.get("port", "0") or 0)
            if h.get("streamtype") == "data":
                self.data[sid] = p
            if "error" in p and "data" in p and "task" not in p:
                p["task"] = t = asyncio.create_task(self.forward(p))
                self.tasks.add(t)
                t.add_done_callback(self.tasks.discard)
        elif ftype == PING:
            await self.control(PING, 0, body)
        elif ftype == RST_STREAM:
            sid = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
            p = self.data.get(sid)
            if p and p.get("writer"):
                p["writer"].close()

    async def forward(self, p):
        port = p["port"]
        try:
            reader, p["writer"] = await self.ctx.backend.connect(self.ns, self.name, port)
        except OSError as e:
            why = os.strerror(e.errno) if e.errno else str(e)
            await self.send_data(p["error"], f"error forwarding port {port} to pod {self.name}, "
                                 f"uid {self.uid}: failed to connect to localhost:{port} "
                                 f"inside the pod: {why}".encode(), fin=True)
            await self.send_data(p["data"], b"", fin=True)
            return
        feeder = asyncio.create_task(self.feed(p))
        try:
            while True:
                chunk = await reader.read(READ_CHUNK)
                if not chunk:
                    break
                await self.send_data(p["data"], chunk)
            await self.send_data(p["data"], b"", fin=True)
            await self.send_data(p["error"], b"", fin=True)
        except (ConnectionResetError, RuntimeError):
            pass
        finally:
            feeder.cancel()
            p["writer"].close()

    async def feed(self, p):
        """The client's bytes on the data stream into the pod; its FIN half-closes."""
        w = p["writer"]
        while True:
            await p["wake"].wait()
            p["wake"].clear()
            while p["pending"]:
                b = p["pending"].pop(0)
                try:
                    if b is None:
                        if w.can_write_eof():
                            w.write_eof()
                        return
                    w.write(b)
                    await w.drain()
                except (BrokenPipeError, ConnectionResetError):
                    return
