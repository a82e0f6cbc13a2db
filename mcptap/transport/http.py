"""The HTTP tap (trio): a reverse proxy in front of one MCP server URL.

    client ──► [client reader] ──► relay.client_data ──► upstream socket (per client conn)
    client ◄── relay.upstream_data ◄── [upstream reader] ◄── upstream socket

All protocol logic is in ``relay/http/`` (h11); this module only executes
its commands: it connects (plain TCP or TLS with the system trust store, or
``cacert``), sends, closes, and afterwards hands the same list to the
``HttpObserver``, which writes the capture. Bytes are written by the task that
read them, before anything is recorded, so a slow client slows the upstream
reader (TCP backpressure) and nothing is buffered beyond one read.

Listening: 127.0.0.1 by default; port 0 picks a free port; a non-loopback
address needs ``allow_remote=True`` (design principle 8). Upstream failures
become a 502 for that request (recorded as ``http.upstream_failed``); the tap
keeps serving. A recorder failure (an mcptap bug) stops recording, never the
relay.
"""

from __future__ import annotations

import collections

# the codec ``socket.getaddrinfo`` encodes a host name with, imported at the first call (the
# listen): imported now, before the recorder process forks, it is not written into pages
# both processes still share (idle tap memory 0.5 MiB less)
import encodings.idna  # noqa: F401
import math
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.relay.http.proxy import HttpRelay
from mcptap.transport.hasher import BackgroundSha
from mcptap.transport.http_config import LOOPBACK_NAMES, HttpTapConfig, bracket, check_config, listen_failed
from mcptap.transport.http_io import CHUNK, ReadAhead, coalesce, next_size, send
from mcptap.transport.limits import Limit, Notices, accept_loop, default_max_connections, note_timeout, summary_line

__all__ = ["CHUNK", "HttpTap", "HttpTapConfig", "check_config"]   # HttpTapConfig lives in http_config.py

_IO_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ssl.SSLError)


@dataclass(slots=True)
class _ConnIO:
    cid: int
    client: trio.abc.Stream
    nursery: trio.Nursery
    client_lock: trio.Lock = field(default_factory=trio.Lock)
    up_lock: trio.Lock = field(default_factory=trio.Lock)
    up: trio.abc.Stream | None = None
    gen: int = 0
    up_failed: bool = False
    closed: bool = False
    #: while the client reader waits: the scope of that wait (a timeout's deadline; eviction
    #: cancels it), what it waits for (relay.client_waiting), since when, the limit applied,
    #: and for an idle wait when it began
    wait: trio.CancelScope | None = None
    state: str = ""
    since: float = 0.0
    limit: float = math.inf
    idle_since: float | None = None
    evicted: bool = False


class FactObserver(Protocol):
    """Takes the relay's facts, batch by batch in relay order (``HttpObserver``)."""

    def handle(self, items: list[Any]) -> None: ...


class HttpTap:
    """One running HTTP tap. ``rec``: the Recorder (or None: relay only);
    ``say``: receives mcptap's own one-line messages (default: ignored).
    ``observer_for``: set it to record elsewhere instead (the CLI's recorder
    process, ``transport/http_recorder.py``): called with the tap's
    ``host:port`` once listening, it returns the FactObserver to use."""

    def __init__(self, cfg: HttpTapConfig, rec: Recorder | None, say: Callable[[str], None] | None = None) -> None:
        self.cfg = cfg
        self.upstream = check_config(cfg)
        self.rec = rec
        if rec is not None:
            for stream in rec.streams.values():
                stream.sha = BackgroundSha()     # a large body's digest is computed beside the relay
        self.say = say or (lambda msg: None)
        self.relay: HttpRelay | None = None
        self.observer: FactObserver | None = None
        self.observer_for: Callable[[str], FactObserver] | None = None
        self.url: str | None = None
        self._conns: dict[int, _ConnIO] = {}
        #: rate-limited stderr lines per condition, counted for the exit summary
        self.notices = Notices(lambda line: self.say(line))
        #: open client connections against --max-connections (transport/limits.accept_loop)
        self.limit = Limit(self.notices, cfg.max_connections or default_max_connections(), option="--max-connections")
        #: facts waiting to be recorded, in relay order (see _run)
        self._obs_queue: collections.deque[list[Any]] = collections.deque()
        self._ssl: ssl.SSLContext | None = None
        if self.upstream.scheme == "https":
            self._ssl = ssl.create_default_context(cafile=cfg.cacert)

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and relay until cancelled. ``task_status.started(url)`` gets
        the URL clients should use (tap origin + the upstream's path)."""
        cfg = self.cfg
        try:
            listeners = await trio.open_tcp_listeners(cfg.listen_port, host=cfg.listen_host)
        except OSError as exc:
            raise listen_failed(cfg.listen_host, cfg.listen_port, exc) from None
        sock = listeners[0].socket
        port = sock.getsockname()[1]
        host = cfg.listen_host if ":" not in cfg.listen_host else f"[{cfg.listen_host}]"
        authority = f"{host}:{port}"
        self.relay = HttpRelay(self.upstream, keep_host=cfg.keep_host, rewrite_endpoint=cfg.rewrite_endpoint,
                                 auth_rewrite=cfg.auth_rewrite, record_secrets=cfg.record_secrets,
                                 listen_authority=authority,
                                 allowed_hosts=None if cfg.allow_remote else LOOPBACK_NAMES | {bracket(cfg.listen_host)})
        if self.observer_for is not None:
            self.observer = self.observer_for(authority)
        elif self.rec is not None:
            self.observer = HttpObserver(self.rec, self.upstream, listen_authority=authority, record_secrets=cfg.record_secrets)
        self.url = f"http://{authority}{self.upstream.path}"
        try:
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(accept_loop, listener, self._handle, nursery, self.limit, self._evict_idle)
                task_status.started(self.url)
        finally:
            # record how the exchanges still open ended (the connections close with the nursery)
            self._observe([it for it in self.relay.shutdown() if not isinstance(it, (r.CloseClient, r.CloseUpstream))])

    # -- recording -----------------------------------------------------------------
    def _observe(self, items: list[Any]) -> None:
        obs = self.observer
        if obs is None or not items:
            return
        try:
            obs.handle(items)
        except Exception as exc:  # noqa: BLE001 - an mcptap bug must not break the relay
            self.observer = None
            if self.rec is not None and self.observer_for is None:      # our HttpObserver, this process's recorder
                self.rec.stopped(repr(exc))     # as the recorder process's: a gap record, the end record's recorder_error
            self.say(f"recording stopped after an internal error: {exc!r} (the relay goes on)")

    # -- accepting (transport/limits.accept_loop: its file-descriptor pause, 503, counting) --
    def _evict_idle(self) -> bool:
        """The accept loop's eviction hook at the connection limit: close the
        connection idle longest (no request in progress), so an idle flood
        cannot keep new clients out; False when none is idle."""
        idle = [c for c in self._conns.values() if c.idle_since is not None and c.wait is not None and not c.evicted]
        if not idle:
            return False
        victim = min(idle, key=lambda c: c.idle_since or 0.0)
        victim.evicted = True
        assert victim.wait is not None
        victim.wait.cancel()
        return True

    def summary(self) -> str:
        """One line for the exit: connections, exchanges and what the tap did itself."""
        conns, exchanges = self.relay.counts() if self.relay is not None else (0, 0)
        return summary_line(conns, exchanges, self.notices.counts())

    # -- one client connection ---------------------------------------------------------
    async def _handle(self, stream: trio.SocketStream) -> None:
        relay = self.relay
        assert relay is not None
        try:
            peer = "{}:{}".format(*stream.socket.getpeername()[:2])
        except OSError:
            peer = None
        cid, items = relay.client_opened(peer)
        self._observe(items)
        try:
            async with trio.open_nursery() as nursery:
                c = _ConnIO(cid, stream, nursery)
                self._conns[cid] = c
                short = False       # the last read was short: wait before reading (http_io.receive)
                size = CHUNK        # bigger after a full read (a large request body: http_io.next_size)
                ahead = ReadAhead(stream)
                while not c.closed:
                    data = None
                    with trio.CancelScope() as c.wait:
                        self._waiting(c)
                        try:
                            data = await ahead.receive(size, short)
                        except _IO_ERRORS:
                            data = b""
                    c.wait = c.idle_since = None
                    if data is None:
                        if c.evicted:
                            await self._run(c, relay.client_timed_out(cid, "idle", trio.current_time() - c.since,
                                                                      "closed by the tap: connection limit reached, this one idle longest"))
                        else:
                            note_timeout(self.notices, c.state, c.limit)
                            await self._run(c, relay.client_timed_out(cid, c.state, c.limit))
                        break
                    await self._run(c, relay.client_data(cid, data))
                    if not data:
                        break
                    ahead.expect(relay.client_body_ahead(cid))
                    short = len(data) < size
                    size = next_size(size, len(data))
                await self._close_upstream(c)
        finally:
            self._conns.pop(cid, None)
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)

    async def _run(self, c: _ConnIO, items: list[Any]) -> None:
        """Execute commands in order, then record; failures feed back into the relay.

        The facts are queued before the writes and recorded after them: a write
        may yield to another task (the upstream reader), which must not record
        a response before the request it answers; draining the queue in order
        keeps the capture causal without delaying forwarding for analysis."""
        relay = self.relay
        assert relay is not None
        for it in items:
            if type(it) is r.ResponseEnded and it.sent_502 and it.how in ("upstream_failed", "bad_response"):
                self.notices.note("502", f"upstream failed: {it.detail}; answered 502")
        self._obs_queue.append(items)
        follow: list[Any] = []
        try:
            i, n = 0, len(items)
            while i < n:
                it = items[i]
                t = type(it)
                i += 1
                if t is r.SendClient:
                    # one send for the consecutive writes of one batch (head + body + end):
                    # a loopback send wakes the peer, so each extra send is latency
                    data, i = coalesce(items, i, it.data, r.SendClient, None, _COMMANDS)
                    if c.closed:
                        continue
                    try:
                        await send(c.client, c.client_lock, data)
                    except _IO_ERRORS:
                        follow += relay.client_data(c.cid, b"")
                elif t is r.SendUpstream:
                    data, i = coalesce(items, i, it.data, r.SendUpstream, it.gen, _COMMANDS)
                    if it.gen != c.gen or c.up is None:
                        continue
                    try:
                        await send(c.up, c.up_lock, data)
                    except _IO_ERRORS as exc:
                        follow += relay.upstream_failed(c.cid, it.gen, f"write failed: {_describe(exc)}")
                elif t is r.OpenUpstream:
                    await self._close_upstream(c)
                    c.gen = it.gen
                    try:
                        c.up = await self._connect(it.upstream)
                    except Exception as exc:  # noqa: BLE001 - every connect failure becomes a 502
                        c.up = None
                        follow += relay.upstream_failed(c.cid, it.gen, _describe(exc))
                    else:
                        c.nursery.start_soon(self._upstream_reader, c, it.gen, c.up)
                elif t is r.CloseUpstream:
                    if it.gen == c.gen:
                        await self._close_upstream(c)
                elif t is r.CloseClient:
                    c.closed = True
                    if it.abort:
                        await trio.aclose_forcefully(c.client)
                    else:
                        with trio.move_on_after(5):
                            async with c.client_lock:
                                await _graceful_close(c.client)
                    await self._close_upstream(c)
        finally:
            # recorded even when cancelled mid-way (tap stopping): the capture must say how exchanges ended
            q = self._obs_queue
            while q:
                self._observe(q.popleft())
        if follow:
            await self._run(c, follow)
        elif c.wait is not None and c.state == "busy" and relay.client_waiting(c.cid) != "busy":
            # the client reader waits with no timeout while a response is in progress;
            # once this task ended the exchange, the idle (or request) timeout applies
            self._waiting(c)

    def _waiting(self, c: _ConnIO) -> None:
        """Set the client reader's wait (``c.wait``, entered) to what the relay
        says the connection waits for: the idle or request timeout from when
        that state began, none while a response is in progress."""
        relay = self.relay
        assert relay is not None and c.wait is not None
        was, state = c.state, relay.client_waiting(c.cid)
        if state != was:
            c.state, c.since = state, trio.current_time()
        c.limit = limit = (self.cfg.idle_timeout if state == "idle" else self.cfg.request_timeout if state == "request"
                           else math.inf)
        deadline = c.since + limit
        if c.wait.deadline != deadline:       # a new scope's is already inf (the busy case): not set again
            c.wait.deadline = deadline
        c.idle_since = c.since if state == "idle" else None

    async def _connect(self, target: r.Upstream | None = None) -> trio.abc.Stream:
        """Connect to the upstream, or to ``target`` (an authorization server the
        upstream's metadata named: ``relay/http/auth.py``)."""
        up = target or self.upstream
        with trio.fail_after(self.cfg.connect_timeout):
            tcp = await trio.open_tcp_stream(up.host, up.port)
            if up.scheme != "https":
                return tcp
            if self._ssl is None:
                self._ssl = ssl.create_default_context(cafile=self.cfg.cacert)
            tls = trio.SSLStream(tcp, self._ssl, server_hostname=up.host, https_compatible=True)
            try:
                await tls.do_handshake()
            except BaseException:
                await trio.aclose_forcefully(tcp)
                raise
            return tls

    async def _upstream_reader(self, c: _ConnIO, gen: int, stream: trio.abc.Stream) -> None:
        relay = self.relay
        assert relay is not None
        size = CHUNK
        short = False       # the last read was short: wait before reading (http_io.receive)
        ahead = ReadAhead(stream)
        while True:
            try:
                data = await ahead.receive(size, short)
                short = len(data) < size
                size = next_size(size, len(data))
            except trio.ClosedResourceError:
                return            # we closed it
            except _IO_ERRORS:
                data = b""        # reset by the upstream: same as a close for the client
            if gen != c.gen:
                return
            await self._run(c, relay.upstream_data(c.cid, gen, data))
            if not data:
                return
            ahead.expect(relay.upstream_body_ahead(c.cid, gen))

    async def _close_upstream(self, c: _ConnIO) -> None:
        up, c.up = c.up, None
        if up is not None:
            await trio.aclose_forcefully(up)


#: commands that end a run of writes to coalesce (facts in between are only recorded)
_COMMANDS = (r.SendClient, r.SendUpstream, r.OpenUpstream, r.CloseUpstream, r.CloseClient)


async def _graceful_close(stream: trio.abc.Stream) -> None:
    try:
        await stream.aclose()
    except _IO_ERRORS:
        pass


def _describe(exc: BaseException) -> str:
    if isinstance(exc, trio.BrokenResourceError) and exc.__cause__ is not None:
        exc = exc.__cause__        # trio wraps TLS handshake failures
    if isinstance(exc, trio.TooSlowError):
        return "timed out"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {exc.verify_message or exc}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    return str(exc) or type(exc).__name__
