"""The HTTP tap's and the HTTP mock's resource guards (trio): the accept loop with
its connection limit (503 answers beyond it, or the tap's eviction hook), and
rate-limited one-line notices on stderr with counts for an exit summary.

    limit = Limit(notices, max_connections=256, option="--max-connections")
    await accept_loop(listener, handle, nursery, limit, evict=None)

A tap under a flood (thousands of idle connections, an upstream that is down
while a client retries in a loop) must not fill the terminal: each condition
(``key``) prints at most one line per ``interval`` seconds, and the next line
for it says how many were not printed in between. Every occurrence is
counted; :meth:`Notices.counts` feeds the one-line summary at exit.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

CHUNK = 64 * 1024


class Notices:
    """``say(line)`` prints one line (``mcptap: `` is the caller's); ``clock``
    returns seconds (monotonic); ``interval``: seconds between two lines of
    the same key."""

    def __init__(self, say: Callable[[str], None], interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.say = say
        self.interval = interval
        self.clock = clock
        self._counts: dict[str, int] = {}
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def note(self, key: str, line: str) -> None:
        """Count one occurrence of ``key``; print ``line`` unless a line for
        ``key`` was printed less than ``interval`` seconds ago."""
        self._counts[key] = self._counts.get(key, 0) + 1
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return
        held = self._held.pop(key, 0)
        self._last[key] = now
        self.say(line + (f" (and {held} more like it since the last such line)" if held else ""))

    def counts(self) -> dict[str, int]:
        """Occurrences per key so far."""
        return dict(self._counts)


def default_max_connections() -> int:
    """Client connections served at once when not configured: each may hold
    an upstream connection too, so half the file descriptors left after a
    reserve of 64 (for the capture, TLS, stdio, 503 answers), between 8 and 1024."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(8, min(1024, (soft - 64) // 2))


ACCEPT_CAPACITY = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
        b"Connection: close\r\nContent-Length: 48\r\n\r\nmcptap: too many connections; try again shortly\n")


class Refuser:
    """Answer 503 over the connection limit and close, without reading the
    request. At most ``at_once`` answers linger (up to ``linger`` s each,
    draining so the close does not reset the answer away); beyond that a
    connection is closed at once, so a flood cannot spend the file
    descriptors the limit keeps for served clients."""

    def __init__(self, at_once: int = 8, linger: float = 1.0) -> None:
        self.at_once = at_once
        self.linger = linger
        self.busy = 0

    async def refuse(self, stream: trio.SocketStream) -> None:
        if self.busy >= self.at_once:
            await trio.aclose_forcefully(stream)
            return
        self.busy += 1
        try:
            with trio.move_on_after(self.linger):
                await stream.send_all(BUSY)
                await stream.send_eof()
                while await stream.receive_some(CHUNK):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            self.busy -= 1
            await trio.aclose_forcefully(stream)


@dataclass(slots=True)
class Limit:
    """Open connections (``open``) against ``max_connections``; ``notices``
    prints the rate-limited lines and counts them; ``option``: the command-line
    option that sets the limit, named in those lines (None: ``at most N``)."""

    notices: Notices
    max_connections: int = field(default_factory=default_max_connections)
    open: int = 0
    refuser: Refuser = field(default_factory=Refuser)
    option: str | None = None

    @classmethod
    def saying(cls, say: Callable[[str], None], max_connections: int | None = None) -> Limit:
        """A limit whose notices go to ``say(line)``; ``max_connections`` None: from the file descriptor limit."""
        limit = cls(Notices(say))
        if max_connections is not None:
            limit.max_connections = max_connections
        return limit

    def _open_line(self) -> str:
        cap = f"{self.option} {self.max_connections}" if self.option else f"at most {self.max_connections}"
        return f"{self.open} client connections open ({cap})"


async def accept_loop(listener: trio.SocketListener, handle: Callable[[trio.SocketStream], Awaitable[None]],
                      nursery: trio.Nursery, limit: Limit, evict: Callable[[], bool] | None = None) -> None:
    """Accept forever, starting ``handle(stream)`` in ``nursery`` for each
    connection while fewer than ``limit.max_connections`` are open (counted in
    ``limit.open`` until ``handle`` returns). At the limit, ``evict()`` (when
    given) may close an open connection to make room (True) or not (False);
    without room the new connection is answered 503. Out of file descriptors:
    one rate-limited line and a 0.1 s pause (never a traceback)."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in ACCEPT_CAPACITY:
                raise
            lower = f", or lower {limit.option}" if limit.option else ""
            limit.notices.note("accept", f"cannot accept a connection: {exc.strerror or exc} (raise the file descriptor limit{lower}); retrying")
            await trio.sleep(0.1)
            continue
        if limit.open >= limit.max_connections:
            if evict is not None and evict():
                limit.notices.note("evict", f"{limit._open_line()}: closing the longest idle one for a new client")
            else:
                limit.notices.note("full", f"{limit._open_line()}: answering 503 to new ones")
                nursery.start_soon(limit.refuser.refuse, stream)
                continue
        limit.open += 1
        nursery.start_soon(_counted, handle, stream, limit)


async def _counted(handle: Callable[[trio.SocketStream], Awaitable[None]], stream: trio.SocketStream, limit: Limit) -> None:
    try:
        await handle(stream)
    finally:
        limit.open -= 1


def note_timeout(notices: Notices, state: str, seconds: float) -> None:
    """The notice for a client connection the tap timed out (``state``: idle or request)."""
    if state == "idle":
        notices.note("idle", f"closed a client connection idle for {seconds:g} s (--idle-timeout)")
    else:
        notices.note("request", f"a client did not send its request whole within {seconds:g} s: answered 408 (--request-timeout)")


_SUMMARY = (("502", "answered 502 (upstream failed)"), ("full", "connection(s) refused with 503 (limit reached)"),
            ("evict", "idle connection(s) closed for new clients (limit reached)"), ("idle", "idle connection(s) closed"),
            ("request", "slow request(s) answered 408"), ("accept", "accept failure(s) (file descriptor limit)"))


def summary_line(conns: int, exchanges: int, counts: dict[str, int]) -> str:
    """``N exchange(s) on M client connection(s); …`` with what the tap did itself."""
    bits = [f"{exchanges} exchange(s) on {conns} client connection(s)"]
    bits += [f"{counts[key]} {text}" for key, text in _SUMMARY if counts.get(key)]
    return "; ".join(bits)
