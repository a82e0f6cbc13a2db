#!/usr/bin/env python3
"""HTTP tap overhead, each figure against a direct connection in the same run.

    .venv/bin/python scripts/bench_http.py [--requests 2000] [--events 300] [--big-mib 64]
                                           [--sessions 500] [--sdk-requests 300] [--skip ...]

Peers: a minimal upstream (raw sockets, one thread per connection, answers by
byte slicing: never the bottleneck) in its own process, and a raw-socket
client in this process. The tap is a real ``python -m mcptap.cli.record_http``
subprocess recording to a temporary capture. Measured (issue 13 targets):

* ``rt``: keep-alive JSON POST round trips, blocks alternating direct / tap
  on one persistent connection each; p50/p99 and the latency the tap adds
  (target: added p50 <= 200 us); beside it the ``floor proxy``
  (``FLOOR_PROXY``: trio and h11 forwarding, nothing else), the least a
  relay on mcptap's stack adds on this machine, and the ``threaded floor``
  (``THREADED_FLOOR``: blocking sockets and h11, a thread per connection),
  the least CPython adds without trio, ``THREADED_CORE`` (mcptap's relay core
  on threads, a sketch) and, with httptools installed, ``C_PARSER_FLOOR``
  (threads, a C parser for framing, bytes forwarded as read); CPU per round
  trip of each, and the relay process's CPU as a ratio of theirs;
* ``sse``: delay from the upstream writing an SSE event (it stamps the
  monotonic clock into the event) to the client receiving it, direct and
  through the tap, alternating streams (target: added p50 <= 100 us);
* ``big``: one SSE event of ``--big-mib`` MiB (one chunk, written in 1 MiB
  pieces): wall time request -> last byte, direct and through a fresh tap
  (target <= 2x), and that tap's peak RSS (VmHWM; target <= 2x the event);
* ``mem``: a fresh tap's memory idle after start, after the round trips, and
  with ``--sessions`` concurrent sessions (a POST each, then an open SSE GET
  stream; target <= 64 MiB; idle <= 40 MiB): the distinct resident pages of
  the relay and recorder processes (``memstat.resident_union``, root only),
  with RSS summed, per process, and PSS beside it;
* ``sdk``: round trips (``tools/call`` echo, SSE-framed answers) against the
  official SDK's Streamable HTTP server (tests/e2e/sdk_server.py), direct and
  through the tap: the realistic figure.

``--steady-client`` fixes glibc's heap trim and mmap thresholds in this
process (the raw-socket client; the tap, upstream and relays are other
processes, untouched). The client's ``bytes``/``bytearray`` pieces otherwise
move glibc's dynamic thresholds so that, depending on the rhythm the bytes
arrive in, the heap top is trimmed and refilled: a 64 MiB event through the
tap cost the client 14-24k minor faults and 47-68 ms of CPU against 0.4-3k
faults and 20-27 ms direct or through the plain relay (same run); with the
thresholds fixed, 0-65 faults and 17-22 ms in every column (perfbig6).

``--baseline DIR`` adds the tap of another checkout (e.g. ``git archive REV
mcptap | tar -x -C DIR``) as column ``base``, measured in the same run,
interleaved with the others: before/after figures under the same load.

With a recorder process (``transport/http_recorder.py``: the CLI records
beside the relay), CPU and memory are also shown per process: ``relay``,
``recorder`` and, as the two share pages after fork, their PSS.

The machine may be shared: numbers are printed (with the load), never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from memstat import resident_union

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HAVE_HTTPTOOLS = importlib.util.find_spec("httptools") is not None      # C_PARSER_FLOOR's parser (optional)
MIB = 1 << 20

UPSTREAM = r'''
import socket, sys, threading, time
BLOCK = b"x" * (1 << 20)

def head(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")

def serve(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = conn.makefile("rb", buffering=65536)
    try:
        while True:
            line = f.readline()
            if not line:
                return
            method, target, _ = line.split(b" ", 2)
            length = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, v = h.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(v)
            body = f.read(length) if length else b""
            q = dict(kv.split(b"=") for kv in target.partition(b"?")[2].split(b"&") if b"=" in kv)
            if method == b"POST":
                i = body.find(b'"id":') + 5
                rid = body[i:body.find(b",", i)]
                out = (b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"type":"text","text":"'
                       + BLOCK[:200] + b'"}]}}')
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(out), out))
            elif target.startswith(b"/sse"):
                head(conn)
                gap = float(q[b"gap"])
                for i in range(int(q[b"n"])):
                    ev = (b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":'
                          b'{"level":"info","data":{"t":%d,"i":%d}}}\n\n' % (time.monotonic_ns(), i))
                    conn.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                    time.sleep(gap)
                conn.sendall(b"0\r\n\r\n")
            elif target.startswith(b"/big"):
                size = int(q[b"bytes"])
                pre = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
                post = b'"}}\n\n'
                fill = size - len(pre) - len(post)
                head(conn)
                conn.sendall(b"%x\r\n%s" % (size, pre))
                while fill > 0:
                    conn.sendall(BLOCK[:fill])
                    fill -= len(BLOCK)
                conn.sendall(post + b"\r\n0\r\n\r\n")
            elif target.startswith(b"/hold"):
                head(conn)
                ev = b"id: 0\ndata: \n\n"
                conn.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                while conn.recv(65536):
                    pass
                return
    except OSError:
        return
    finally:
        conn.close()

srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


#: a plain TCP byte relay (no HTTP, no recording), the floor of one more hop: argv
#: upstream port, mode "copy" (a thread per direction, blocking recv/sendall of up to
#: 256 KiB) or "splice" (Linux: socket -> pipe -> socket in the kernel, no copy through
#: user space); prints its port
PLAIN_RELAY = r'''
import os, socket, sys, threading
up_port, mode = int(sys.argv[1]), sys.argv[2]

def copy(src, dst):
    try:
        while d := src.recv(1 << 18):
            dst.sendall(d)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

def splice(src, dst):
    r, w = os.pipe()
    try:
        import fcntl
        fcntl.fcntl(w, 1031, 1 << 20)
    except OSError:
        pass
    try:
        while n := os.splice(src.fileno(), w, 1 << 20):
            while n:
                n -= os.splice(r, dst.fileno(), n)
    except OSError:
        pass
    finally:
        os.close(r); os.close(w)
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

def serve(c):
    u = socket.create_connection(("127.0.0.1", up_port))
    for s in (c, u):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fn = splice if mode == "splice" else copy
    threading.Thread(target=fn, args=(c, u), daemon=True).start()
    fn(u, c)

srv = socket.create_server(("127.0.0.1", 0), backlog=64)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


#: the floor of the tap's own stack: a minimal reverse proxy on trio and h11 (what mcptap's
#: HTTP relay is built on) with no analysis, recording or endpoint rewriting: per client
#: connection one upstream connection; the events each read brings are forwarded with one
#: send (mcptap coalesces the same way), so SSE events stream as they come. argv: upstream
#: port; prints its port
FLOOR_PROXY = r'''
import sys, trio, h11
UP = int(sys.argv[1])

async def batch(conn, stream):
    out = []
    while True:
        e = conn.next_event()
        if e is h11.NEED_DATA:
            if out:
                return out
            conn.receive_data(await stream.receive_some(1 << 16))
            continue
        out.append(e)
        if type(e) in (h11.EndOfMessage, h11.ConnectionClosed):
            return out

async def forward(src, src_stream, dst, dst_stream):
    """One message from src to dst; False when src closed first."""
    while True:
        evs = await batch(src, src_stream)
        if type(evs[-1]) is h11.ConnectionClosed:
            return False
        await dst_stream.send_all(b"".join(dst.send(e) for e in evs))
        if type(evs[-1]) is h11.EndOfMessage:
            return True

async def handle(client):
    up = await trio.open_tcp_stream("127.0.0.1", UP)
    srv, cli = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    try:
        while await forward(srv, client, cli, up) and await forward(cli, up, srv, client):
            srv.start_next_cycle()
            cli.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
        return
    finally:
        await up.aclose()

async def main():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(handle, listeners)

trio.run(main)
'''


#: the floor of CPython with h11 but without trio: a thread per client connection, blocking
#: recv/sendall, otherwise as ``FLOOR_PROXY`` (one upstream connection per client connection,
#: one send per read's events). Tells whether the round-trip target is reachable in CPython
#: on this machine at all, and what trio's scheduling costs beside it. argv: upstream port;
#: prints its port
THREADED_FLOOR = r'''
import socket, sys, threading, h11
UP = int(sys.argv[1])

def batch(conn, sock):
    out = []
    while True:
        e = conn.next_event()
        if e is h11.NEED_DATA:
            if out:
                return out
            conn.receive_data(sock.recv(1 << 16))
            continue
        out.append(e)
        if type(e) in (h11.EndOfMessage, h11.ConnectionClosed):
            return out

def forward(src, ssock, dst, dsock):
    while True:
        evs = batch(src, ssock)
        if type(evs[-1]) is h11.ConnectionClosed:
            return False
        dsock.sendall(b"".join(dst.send(e) for e in evs))
        if type(evs[-1]) is h11.EndOfMessage:
            return True

def handle(client):
    up = socket.create_connection(("127.0.0.1", UP))
    for s in (client, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    srv, cli = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    try:
        while forward(srv, client, cli, up) and forward(cli, up, srv, client):
            srv.start_next_cycle()
            cli.start_next_cycle()
    except (OSError, h11.ProtocolError):
        return
    finally:
        up.close()
        client.close()

srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
'''




#: what a C parser would leave: as ``THREADED_FLOOR`` but framing found by ``httptools``
#: (llhttp) and the bytes forwarded as read, never re-serialised (a fast path would
#: forward unchanged heads this way). Optional: its rows are left out without httptools.
#: argv: upstream port; prints its port
C_PARSER_FLOOR = r"""
import socket, sys, threading, httptools
UP = int(sys.argv[1])

class Done:
    def __init__(self):
        self.done = False
    def on_message_complete(self):
        self.done = True

def forward(parser, state, src, dst):
    # one message from src to dst, each read sent on as it came; False when src closed first
    state.done = False
    while not state.done:
        data = src.recv(1 << 16)
        if not data:
            return False
        parser.feed_data(data)
        dst.sendall(data)
    return True

def handle(client):
    up = socket.create_connection(("127.0.0.1", UP))
    for s in (client, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    q, a = Done(), Done()
    req, resp = httptools.HttpRequestParser(q), httptools.HttpResponseParser(a)
    try:
        while forward(req, q, client, up) and forward(resp, a, up, client):
            pass
    except (OSError, httptools.HttpParserError):
        return
    finally:
        up.close()
        client.close()

srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""

#: a sketch of a threaded transport for mcptap's own relay core, measured, not shipped: blocking
#: sockets, a thread per client connection and one per upstream connection, driving the tap's
#: sans-IO ``HttpRelay`` (under one lock: it is not thread-safe) and executing its commands
#: as ``transport/http.py`` does (consecutive writes joined: ``http_io.coalesce``); each batch
#: encoded (``fact_codec``) and written to a pipe a ``cat`` process drains, in relay order, after
#: its writes. No timeouts, eviction, TLS or recorder process: what the forward path alone
#: would cost on threads. argv: upstream port; run with the checkout on PYTHONPATH; prints its port
THREADED_CORE = r"""
import collections, os, select, socket, subprocess, sys, threading
from mcptap.relay.http import events as r
from mcptap.relay.http.proxy import HttpRelay
from mcptap.transport import fact_codec as fc
from mcptap.transport.http_config import LOOPBACK_NAMES
from mcptap.transport.http_io import coalesce

UP = r.Upstream.parse("http://127.0.0.1:%s/mcp" % sys.argv[1])
POLL = sys.argv[2:] == ["poll"]
CMDS = (r.SendClient, r.SendUpstream, r.OpenUpstream, r.CloseUpstream, r.CloseClient)
lock = threading.Lock()
queue = collections.deque()
sink = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
SINK = sink.stdin.fileno()

class Conn:
    def __init__(self, cid, client):
        self.cid, self.client, self.up, self.gen, self.closed = cid, client, None, 0, False

def call(fn, *args):
    with lock:
        items = fn(*args)
        queue.append(items)
    return items

def record():
    with lock:
        while queue:
            enc = fc.encode(queue.popleft())
            if enc is not None:
                os.writev(SINK, fc.frame(fc.BATCH, 0, enc[0], enc[1]))

def run(c, items):
    follow = []
    i, n = 0, len(items)
    while i < n:
        it = items[i]
        t = type(it)
        i += 1
        try:
            if t is r.SendClient:
                data, i = coalesce(items, i, it.data, r.SendClient, None, CMDS)
                if not c.closed:
                    c.client.sendmsg(data if type(data) is list else [data])
            elif t is r.SendUpstream:
                data, i = coalesce(items, i, it.data, r.SendUpstream, it.gen, CMDS)
                if it.gen == c.gen and c.up is not None:
                    c.up.sendmsg(data if type(data) is list else [data])
            elif t is r.OpenUpstream:
                if c.up is not None:
                    c.up.shutdown(socket.SHUT_RDWR)
                c.gen = it.gen
                c.up = socket.create_connection((UP.host, UP.port))
                c.up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if not POLL:
                    threading.Thread(target=upstream_reader, args=(c, it.gen, c.up), daemon=True).start()
            elif t is r.CloseUpstream and it.gen == c.gen and c.up is not None:
                c.up.shutdown(socket.SHUT_RDWR)
                c.up = None
            elif t is r.CloseClient:
                c.closed = True
                c.client.shutdown(socket.SHUT_RDWR)
        except OSError:
            follow += call(relay.client_data, c.cid, b"")
    record()
    if follow:
        run(c, follow)

def polled(c):
    # one thread per client connection for both directions: poll() on the client and the
    # current upstream socket, so a round trip never hands the GIL to another thread
    p = select.poll()
    p.register(c.client, select.POLLIN)
    up = None
    while not c.closed:
        if c.up is not up:
            if up is not None:
                try:
                    p.unregister(up)
                except (KeyError, ValueError):
                    pass
            up = c.up
            if up is not None:
                p.register(up, select.POLLIN)
        for fd, _ in p.poll():
            if fd == c.client.fileno():
                try:
                    data = c.client.recv(1 << 16)
                except OSError:
                    data = b""
                run(c, call(relay.client_data, c.cid, data))
                if not data:
                    return
            elif up is not None and fd == up.fileno():
                gen = c.gen
                try:
                    data = up.recv(1 << 16)
                except OSError:
                    data = b""
                run(c, call(relay.upstream_data, c.cid, gen, data))
                if not data:
                    p.unregister(up)
                    up = c.up = None if c.up is up else c.up

def upstream_reader(c, gen, sock):
    while True:
        try:
            data = sock.recv(1 << 16)
        except OSError:
            data = b""
        if gen != c.gen:
            return
        run(c, call(relay.upstream_data, c.cid, gen, data))
        if not data:
            return

def handle(client):
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    cid, items = relay.client_opened("127.0.0.1:1")
    c = Conn(cid, client)
    try:
        if POLL:
            polled(c)
            return
        while not c.closed:
            try:
                data = client.recv(1 << 16)
            except OSError:
                data = b""
            run(c, call(relay.client_data, cid, data))
            if not data:
                break
    finally:
        if c.up is not None:
            c.up.close()
        client.close()

srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
port = srv.getsockname()[1]
relay = HttpRelay(UP, listen_authority="127.0.0.1:%d" % port, allowed_hosts=LOOPBACK_NAMES)
print(port, flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""

# -- a raw HTTP/1.1 client ------------------------------------------------------------
class Conn:
    def __init__(self, port: int) -> None:
        self.port = port
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self) -> None:
        self.s.close()

    def _fill(self) -> None:
        d = self.s.recv(1 << 18)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def request(self, method: str, target: str, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        h = {"Host": f"127.0.0.1:{self.port}", "Accept": "application/json, text/event-stream", **(headers or {})}
        if body or method == "POST":
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(len(body))
        lines = "".join(f"{k}: {v}\r\n" for k, v in h.items())
        self.s.sendall(f"{method} {target} HTTP/1.1\r\n{lines}\r\n".encode() + body)

    def head(self) -> tuple[int, dict[str, str]]:
        while (i := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        lines = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
        del self.buf[:i + 4]
        hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        return int(lines[0].split()[1]), hdrs

    def body_parts(self, hdrs: dict[str, str]) -> Iterator[bytes]:
        """The body's pieces as they arrive (Content-Length or chunked)."""
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(self.buf) < n:
                self._fill()
            out = bytes(self.buf[:n])
            del self.buf[:n]
            yield out
            return
        while True:
            while (i := self.buf.find(b"\r\n")) < 0:
                self._fill()
            size = int(bytes(self.buf[:i]).split(b";")[0], 16)
            del self.buf[:i + 2]
            if size == 0:
                while (i := self.buf.find(b"\r\n")) < 0:
                    self._fill()
                del self.buf[:i + 2]
                return
            while size:
                if not self.buf:
                    self._fill()
                piece = bytes(self.buf[:size])
                del self.buf[:len(piece)]
                size -= len(piece)
                yield piece
            while len(self.buf) < 2:
                self._fill()
            del self.buf[:2]

    def body(self, hdrs: dict[str, str]) -> bytes:
        return b"".join(self.body_parts(hdrs))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def proc_cpu(pid: int) -> float:
    """CPU time (user + system, s) of process ``pid`` so far. Raises OSError when it is gone."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# -- peers ------------------------------------------------------------------------------
class Upstream:
    def __init__(self) -> None:
        self.p = subprocess.Popen([PY, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        self.port = int(self.p.stdout.readline())

    def stop(self) -> None:
        self.p.kill()
        self.p.wait()


class PlainRelay:
    """``PLAIN_RELAY`` (or ``FLOOR_PROXY``, mode "floor", ``THREADED_FLOOR``, mode
    "threaded", or ``THREADED_CORE``, mode "core") in a process of its own, in front of the upstream."""

    def __init__(self, upstream_port: int, mode: str) -> None:
        floors = {"floor": FLOOR_PROXY, "threaded": THREADED_FLOOR, "core": THREADED_CORE, "poll": THREADED_CORE,
                  "cparser": C_PARSER_FLOOR}
        argv = ["-c", floors[mode], str(upstream_port)] if mode in floors else ["-c", PLAIN_RELAY, str(upstream_port), mode]
        argv += ["poll"] if mode == "poll" else []
        # THREADED_CORE imports this checkout's mcptap
        self.p = subprocess.Popen([PY, *argv], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)} if mode in ("core", "poll") else None)
        assert self.p.stdout is not None
        self.port = int(self.p.stdout.readline())

    def cpu(self) -> float:
        """CPU time (user + system) of the process so far (s)."""
        return proc_cpu(self.p.pid)

    def stop(self) -> None:
        self.p.kill()
        self.p.wait()


class PeakSampler:
    """The peak RSS summed of a tap's processes while traffic goes on, sampled
    every ``every`` s on a thread (``/proc/PID/status``) until ``stop()``
    (MiB). Less the pages the processes still share at the end, an upper
    bound of their peak distinct resident pages (copy-on-write only unshares)."""

    def __init__(self, tap: Tap, every: float = 0.02) -> None:
        self.tap, self.every, self.peak = tap, every, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.peak = max(self.peak, self.tap.rss())
            except OSError:
                pass
            if self._done.wait(self.every):
                return

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return self.peak


class Tap:
    """``python -m mcptap.cli.record_http`` run from checkout ``root`` (its ``mcptap`` package is imported)."""

    def __init__(self, upstream_port: int, root: Path = ROOT, path: str = "/mcp") -> None:
        self.cap = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        self.p = subprocess.Popen([PY, "-m", "mcptap.cli.record_http", "--upstream", f"http://127.0.0.1:{upstream_port}{path}",
                                   "-q", "-o", self.cap], stderr=subprocess.PIPE, text=True, cwd=root)
        assert self.p.stderr is not None
        line = self.p.stderr.readline()
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])

    def pids(self) -> list[int]:
        """The tap's processes: the relay and its recorder process, if any."""
        try:
            with open(f"/proc/{self.p.pid}/task/{self.p.pid}/children") as f:
                return [self.p.pid] + [int(x) for x in f.read().split()]
        except OSError:
            return [self.p.pid]

    def rss(self) -> float:
        """Resident set of all the tap's processes (MiB)."""
        return sum(proc_kib(p, "VmRSS") for p in self.pids()) / 1024

    def peak_split(self) -> tuple[float, float]:
        """Peak resident set (VmHWM, MiB) of the relay process and of its recorder process."""
        pids = self.pids()
        return proc_kib(pids[0], "VmHWM") / 1024, sum(proc_kib(p, "VmHWM") for p in pids[1:]) / 1024

    def peak(self) -> float:
        """Peak resident set (VmHWM) of all the tap's processes, summed (MiB): an upper bound."""
        return sum(proc_kib(p, "VmHWM") for p in self.pids()) / 1024

    def cpu(self) -> float:
        """CPU time (user + system) of all the tap's processes so far (s)."""
        return sum(self.cpu_split())

    def cpu_split(self) -> tuple[float, float]:
        """CPU time (s) of the relay process and of its recorder process (0 without one)."""
        out = [0.0, 0.0]
        for i, pid in enumerate(self.pids()):
            try:
                out[min(i, 1)] += proc_cpu(pid)
            except OSError:
                continue
        return out[0], out[1]

    def rss_split(self) -> tuple[float, float, float, float | None]:
        """(relay RSS, recorder RSS, PSS of both, distinct resident pages of both)
        in MiB: after fork the two share pages, which RSS counts in each, PSS
        divides between all their sharers and the union counts once
        (``memstat.resident_union``; None when page frames are hidden)."""
        pids = self.pids()
        pss = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    pss += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
            except (OSError, StopIteration):
                pass
        rec = sum(proc_kib(p, "VmRSS") for p in pids[1:])
        return proc_kib(pids[0], "VmRSS") / 1024, rec / 1024, pss / 1024, resident_union(pids)

    def settle(self, window: float = 0.2) -> float:
        """Wait until the tap's CPU time stops growing for ``window`` s
        (analysis and recording done; /proc's 10 ms ticks); returns how long
        that took (s)."""
        t0 = time.perf_counter()
        last = -1.0
        while True:
            cpu = self.cpu()
            if cpu == last:
                return time.perf_counter() - t0 - window
            last = cpu
            time.sleep(window)

    def stop(self) -> int:
        # SIGTERM, not SIGINT: a bench started with & from a script runs with SIGINT ignored, which
        # the tap inherits and keeps (signal_latch.handled), so a SIGINT would wait here for ever
        self.p.send_signal(15)
        self.p.wait()
        size = os.path.getsize(self.cap)
        os.unlink(self.cap)
        return size


# -- measurements -------------------------------------------------------------------------
def round_trips(conn: Conn, n: int, start: int, target: str = "/mcp", headers: dict[str, str] | None = None,
                method: str = "tools/call") -> list[float]:
    out = []
    for i in range(start, start + n):
        body = (b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"name":"echo","arguments":{"text":"hi"}}}'
                % (i, method.encode()))
        t0 = time.perf_counter()
        conn.request("POST", target, body, headers)
        _, h = conn.head()
        data = conn.body(h)
        out.append(time.perf_counter() - t0)
        assert b'"id":%d' % i in data, data[:200]
    return out


def sse_delays(port: int, n: int, gap: float) -> list[float]:
    c = Conn(port)
    c.request("GET", f"/sse?n={n}&gap={gap}")
    _, h = c.head()
    out, buf = [], b""
    for piece in c.body_parts(h):
        now = time.monotonic_ns()
        buf += piece
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            t = int(ev.split(b'"t":')[1].split(b",")[0])
            out.append((now - t) / 1e9)
    c.close()
    return out[5:]                   # the first events include the connection set-up


#: the measuring client's own cost per ``big_event``: (CPU s, minor page faults), appended in order
CLIENT_COST: list[tuple[float, int]] = []


def big_event(port: int, size: int) -> float:
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    c = Conn(port)
    t0 = time.perf_counter()
    c.request("GET", f"/big?bytes={size}")
    _, h = c.head()
    got = sum(len(p) for p in c.body_parts(h))
    dt = time.perf_counter() - t0
    c.close()
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    CLIENT_COST.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt))
    assert got == size, (got, size)
    return dt


def sessions(port: int, n: int) -> list[Conn]:
    held = []
    for k in range(n):
        c = Conn(port)
        round_trips(c, 1, k, headers={"Connection": "close"}, method="initialize")
        c.close()
        g = Conn(port)
        g.request("GET", "/hold", headers={"Mcp-Session-Id": f"s-{k}"})
        held.append(g)
    for g in held:
        st, h = g.head()
        assert st == 200, st
        parts = g.body_parts(h)
        next(parts)                  # the priming event: the stream is open end to end
    return held


# -- report -----------------------------------------------------------------------------
#: (metric, direct or None, {tap label: value}, "added" | "ratio" | "" (absolute), target, note)
ROWS: list[tuple[str, float | None, dict[str, float], str, str, str]] = []
LABELS: dict[str, Path] = {"tap": ROOT}


#: the floors beside the taps: (label, bench_http mode, note)
FLOORS = (("floor proxy", "floor", "(trio + h11, nothing else: FLOOR_PROXY)"),
          ("threaded floor", "threaded", "(blocking sockets + h11, a thread per conn: THREADED_FLOOR)"),
          ("threaded relay core", "core", "(mcptap's HttpRelay + fact encoding on threads: THREADED_CORE)"),
          ("  one thread, poll()", "poll", "(THREADED_CORE, both directions in the client's thread)"),
          ("C parser floor", "cparser", "(threads, httptools framing, bytes forwarded as read: C_PARSER_FLOOR)"))


def run_rt(up: Upstream, taps: dict[str, Tap], args: argparse.Namespace, floors: dict[str, PlainRelay]) -> None:
    running = [f for f in FLOORS if f[1] in floors]
    conns = {"direct": Conn(up.port), **{m: Conn(f.port) for m, f in floors.items()}, **{k: Conn(t.port) for k, t in taps.items()}}
    for c in conns.values():
        round_trips(c, 50, 0)
    lat: dict[str, list[float]] = {k: [] for k in conns}
    cpu = dict.fromkeys(taps, 0.0)
    split = {k: [0.0, 0.0] for k in taps}
    floor_cpu = dict.fromkeys(floors, 0.0)
    block = 100
    for k in range(max(1, args.requests // block)):
        for name, c in conns.items():
            # a tap records a block's exchanges after it (batched): let every tap
            # finish that first, or it runs during the next configuration's block
            for t in taps.values():
                t.settle(0.02)
            c0 = taps[name].cpu_split() if name in taps else (floors[name].cpu() if name in floors else 0.0, 0.0)
            lat[name] += round_trips(c, block, 1000 + k * block)
            if name in floors:
                floor_cpu[name] += floors[name].cpu() - c0[0]
            if name in taps:
                taps[name].settle(0.02)
                c1 = taps[name].cpu_split()
                split[name][0] += c1[0] - c0[0]
                split[name][1] += c1[1] - c0[1]
                cpu[name] += sum(c1) - sum(c0)
    for c in conns.values():
        c.close()
    for p in (50, 99):
        ROWS.append((f"round trip p{p} (us)", pct(lat["direct"], p) * 1e6, {k: pct(lat[k], p) * 1e6 for k in taps}, "added",
                     "added p50 <= 200" if p == 50 else "", ""))
        for label, m, note in running:
            ROWS.append((f"  {label} p{p} (us)", pct(lat["direct"], p) * 1e6, {"tap": pct(lat[m], p) * 1e6}, "added", "", note))
    ROWS.append(("tap CPU per round trip (us)", None, {k: cpu[k] / len(lat[k]) * 1e6 for k in taps}, "", "", "(user + system)"))
    for label, m, _ in running:
        ROWS.append((f"  {label} CPU per round trip (us)", None, {"tap": floor_cpu[m] / len(lat[m]) * 1e6}, "", "", ""))
    ROWS.append(("  relay process (us)", None, {k: split[k][0] / len(lat[k]) * 1e6 for k in taps}, "", "", ""))
    ROWS.append(("  recorder process (us)", None, {k: split[k][1] / len(lat[k]) * 1e6 for k in taps}, "", "", "(read once the"
                 " recorder caught up)"))
    relay = {k: split[k][0] / len(lat[k]) for k in taps}
    for label, m, _ in running:
        f = floor_cpu[m] / len(lat[m])
        if f > 0:
            ROWS.append((f"  relay process CPU / {label} CPU", None, {k: v / f for k, v in relay.items()}, "", "", "(x)"))


def run_sse(up: Upstream, taps: dict[str, Tap], args: argparse.Namespace, floors: dict[str, PlainRelay]) -> None:
    running = [f for f in FLOORS if f[1] in floors]
    delays: dict[str, list[float]] = {"direct": [], **{m: [] for m in floors}, **{k: [] for k in taps}}
    for _ in range(2):
        delays["direct"] += sse_delays(up.port, args.events // 2, 0.002)
        for m, f in floors.items():
            delays[m] += sse_delays(f.port, args.events // 2, 0.002)
        for k, t in taps.items():
            delays[k] += sse_delays(t.port, args.events // 2, 0.002)
    for p in (50, 99):
        ROWS.append((f"SSE event delay p{p} (us)", pct(delays["direct"], p) * 1e6, {k: pct(delays[k], p) * 1e6 for k in taps},
                     "added", "added p50 <= 100" if p == 50 else "", ""))
        for label, m, note in running:
            ROWS.append((f"  {label} p{p} (us)", pct(delays["direct"], p) * 1e6, {"tap": pct(delays[m], p) * 1e6}, "added", "",
                         note))


def run_big(up: Upstream, args: argparse.Namespace) -> None:
    size = args.big_mib * MIB
    direct: list[float] = []
    took: dict[str, list[float]] = {k: [] for k in LABELS}
    peaks: dict[str, list[float]] = {k: [] for k in LABELS}
    settled: dict[str, list[float]] = {k: [] for k in LABELS}
    split: dict[str, list[tuple[float, float]]] = {k: [] for k in LABELS}
    cpus: dict[str, list[tuple[float, float]]] = {k: [] for k in LABELS}
    modes = ["copy"] + (["splice"] if hasattr(os, "splice") else [])
    plain = {m: PlainRelay(up.port, m) for m in modes}
    floor: dict[str, list[float]] = {m: [] for m in modes}
    floor_cpu: dict[str, list[float]] = {m: [] for m in modes}
    client: dict[str, list[tuple[float, int]]] = {k: [] for k in ["direct", *LABELS]}
    for _ in range(2):
        direct.append(big_event(up.port, size))
        client["direct"].append(CLIENT_COST[-1])
        for m, relay in plain.items():
            c0 = relay.cpu()
            floor[m].append(big_event(relay.port, size))
            time.sleep(0.05)            # its last writes done (/proc's 10 ms ticks)
            floor_cpu[m].append(relay.cpu() - c0)
        for k, root in LABELS.items():
            tap = Tap(up.port, root)
            c0 = tap.cpu_split()
            took[k].append(big_event(tap.port, size))
            client[k].append(CLIENT_COST[-1])
            settled[k].append(tap.settle())
            c1 = tap.cpu_split()
            cpus[k].append((c1[0] - c0[0], c1[1] - c0[1]))
            peaks[k].append(tap.peak())
            split[k].append(tap.peak_split())
            tap.stop()
    for relay in plain.values():
        relay.stop()
    ROWS.append((f"{args.big_mib} MiB SSE event (ms)", min(direct) * 1e3, {k: min(v) * 1e3 for k, v in took.items()}, "ratio",
                 "<= 2x", ""))
    what = {"copy": "plain threaded byte relay", "splice": "zero-copy splice relay"}
    for m, v in floor.items():
        ROWS.append((f"  through a {what[m]} (ms)", min(direct) * 1e3, {"tap": min(v) * 1e3}, "ratio", "",
                     "(no HTTP, no recording: the floor of one more hop)"))
    ROWS.append((f"{args.big_mib} MiB SSE event: tap peak RSS (MiB)", float(args.big_mib), {k: max(v) for k, v in peaks.items()},
                 "ratio", "<= 2x the event", "(direct column: the event)"))
    ROWS.append(("  relay process peak RSS (MiB)", None, {k: max(x[0] for x in v) for k, v in split.items()}, "", "", ""))
    ROWS.append(("  recorder process peak RSS (MiB)", None, {k: max(x[1] for x in v) for k, v in split.items()}, "", "", ""))
    copy_cpu = min(floor_cpu["copy"]) * 1e3 or None      # None: under one tick (no ratio)
    ROWS.append(("  relay process CPU (ms)", copy_cpu, {k: min(x[0] for x in v) * 1e3 for k, v in cpus.items()}, "ratio", "",
                 "(min of runs; direct column: the plain threaded byte relay's)"))
    ROWS.append(("  recorder process CPU (ms)", None, {k: min(x[1] for x in v) * 1e3 for k, v in cpus.items()}, "", "", ""))
    ROWS.append(("  measuring client CPU (ms)", min(x[0] for x in client["direct"]) * 1e3,
                 {k: min(x[0] for x in client[k]) * 1e3 for k in LABELS}, "ratio", "",
                 "(min of runs; its pieces' fresh pages: --steady-client)"))
    ROWS.append(("  measuring client minor faults", float(max(x[1] for x in client["direct"])),
                 {k: float(max(x[1] for x in client[k])) for k in LABELS}, "", "", "(max of runs)"))
    ROWS.append(("  analysis done after the last byte (ms)", None, {k: max(v) * 1e3 for k, v in settled.items()}, "", "", ""))


def run_mem(up: Upstream, args: argparse.Namespace) -> None:
    rss: dict[str, float] = {}
    split: dict[str, tuple[float, float, float, float | None]] = {}
    for k, root in LABELS.items():
        tap = Tap(up.port, root)
        held = sessions(tap.port, args.sessions)
        rss[k] = tap.rss()
        split[k] = tap.rss_split()
        for c in held:
            c.close()
        tap.stop()
    _memory_rows(f"{args.sessions} sessions, open SSE streams", "<= 64", rss, split)


def _memory_rows(what: str, target: str, rss: dict[str, float], split: dict[str, tuple[float, float, float, float | None]]) -> None:
    """The memory the tap holds (distinct resident pages of its processes, the
    figure the target is about) and, beside it, RSS summed (counts the pages
    the processes share after the fork twice), per process, and PSS."""
    union = {k: v[3] for k, v in split.items() if v[3] is not None}
    if union:
        ROWS.append((f"{what}: tap memory (MiB)", None, union, "", target, "(distinct resident pages of its processes)"))
    ROWS.append((f"{what}: RSS summed (MiB)", None, rss, "", "" if union else target, "(pages shared after fork counted twice)"))
    ROWS.append(("  relay process RSS (MiB)", None, {k: v[0] for k, v in split.items()}, "", "", ""))
    ROWS.append(("  recorder process RSS (MiB)", None, {k: v[1] for k, v in split.items()}, "", "", ""))
    ROWS.append(("  PSS of both (MiB)", None, {k: v[2] for k, v in split.items()}, "", "", "(a page divided among all its sharers)"))


def run_sdk(args: argparse.Namespace) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen([PY, str(ROOT / "tests/e2e/sdk_server.py"), str(port), "streamable-http"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    taps: dict[str, Tap] = {}
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        taps = {k: Tap(port, root) for k, root in LABELS.items()}
        conns = {}
        for name, p in {"direct": port, **{k: t.port for k, t in taps.items()}}.items():
            c = Conn(p)
            init = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}')
            c.request("POST", "/mcp", init)
            _, h = c.head()
            c.body(h)
            hdr = {"Mcp-Session-Id": h["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
            c.request("POST", "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', hdr)
            _, h2 = c.head()
            c.body(h2)
            round_trips(c, 20, 1, headers=hdr)
            conns[name] = (c, hdr)
        lat: dict[str, list[float]] = {k: [] for k in conns}
        block = 50
        for k in range(max(1, args.sdk_requests // block)):
            for name, (c, hdr) in conns.items():
                lat[name] += round_trips(c, block, 100 + k * block, headers=hdr)
        for c, _ in conns.values():
            c.close()
        for p in (50, 99):
            ROWS.append((f"SDK server round trip p{p} (us)", pct(lat["direct"], p) * 1e6, {k: pct(lat[k], p) * 1e6 for k in taps},
                         "added", "", ""))
    finally:
        for t in taps.values():
            t.stop()
        srv.kill()
        srv.wait()


def report() -> None:
    head = f"{'metric':<50}{'direct':>9}" + "".join(f"{k:>10}{'':>10}" for k in LABELS)
    print(head + "  target")
    for name, d, vals, mode, target, note in ROWS:
        line = f"{name:<50}{'' if d is None else f'{d:.1f}':>9}"
        for k in LABELS:
            v = vals.get(k)
            if v is None:
                line += f"{'':>20}"
                continue
            extra = "" if d is None or not mode else f"{v / d:.2f}x" if mode == "ratio" else f"{v - d:+.1f}"
            line += f"{v:>10.1f}{extra:>10}"
        print(f"{line}  {target} {note}".rstrip())


def steady_client() -> None:
    """Fixed glibc heap thresholds for this process (module docstring: ``--steady-client``)."""
    import ctypes
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        print("--steady-client: no glibc here, thresholds left as they are", file=sys.stderr)
        return
    # mallopt's M_TRIM_THRESHOLD (-1) and M_MMAP_THRESHOLD (-3); setting either ends glibc's
    # dynamic adjustment of both: the client's pieces never go back to the system mid-event
    if not (libc.mallopt(-1, 1 << 30) and libc.mallopt(-3, 32 << 20)):
        print("--steady-client: mallopt refused", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--big-mib", type=int, default=64)
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--sdk-requests", type=int, default=300)
    ap.add_argument("--skip", action="append", default=[], choices=["rt", "sse", "big", "mem", "sdk"])
    ap.add_argument("--baseline", metavar="DIR", type=Path, default=None,
                    help="also measure the tap of another checkout (its mcptap/ package), in the same run, as column 'base'")
    ap.add_argument("--steady-client", action="store_true",
                    help="fix glibc's trim and mmap thresholds in the measuring client (module docstring)")
    args = ap.parse_args()
    if args.steady_client:
        steady_client()
    if args.baseline is not None:
        LABELS["base"] = args.baseline.resolve()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))       # the tap inherits it
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", file=sys.stderr)
    up = Upstream()
    try:
        taps = {k: Tap(up.port, root) for k, root in LABELS.items()}
        idle = {k: t.rss() for k, t in taps.items()}
        idle_split = {k: t.rss_split() for k, t in taps.items()}
        floors = {m: PlainRelay(up.port, m) for _, m, _ in FLOORS if m != "cparser" or HAVE_HTTPTOOLS}
        samplers = {k: PeakSampler(t) for k, t in taps.items()}
        try:
            if "rt" not in args.skip:
                run_rt(up, taps, args, floors)
            if "sse" not in args.skip:
                run_sse(up, taps, args, floors)
        finally:
            for f in floors.values():
                f.stop()
        peak_rss = {k: s.stop() for k, s in samplers.items()}
        after = {k: t.rss() for k, t in taps.items()}
        after_split = {k: t.rss_split() for k, t in taps.items()}
        sizes = {k: t.stop() / 1024 for k, t in taps.items()}
        _memory_rows("idle", "<= 40", idle, idle_split)
        _memory_rows("after the above", "<= 40", after, after_split)
        peak_union = {k: peak_rss[k] - (after[k] - v[3]) for k, v in after_split.items() if v[3] is not None}
        if peak_union:
            ROWS.append(("during the above: peak tap memory (MiB)", None, peak_union, "", "<= 40",
                         "(upper bound: peak RSS summed, every 20 ms, less the pages shared at the end)"))
        ROWS.append(("capture size (KiB)", None, sizes, "", "", ""))
        if "big" not in args.skip:
            run_big(up, args)
        if "mem" not in args.skip:
            run_mem(up, args)
        if "sdk" not in args.skip:
            run_sdk(args)
    finally:
        up.stop()
    report()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
