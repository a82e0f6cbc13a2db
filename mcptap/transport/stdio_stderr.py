"""The stdio tap's stderr path (trio): server stderr → recorder and a bounded
buffer → host stderr.

A host that stops draining stderr must never block the server (cases/B24):
at most ``STDERR_BUFFER`` bytes wait for the host's stderr; beyond that,
server stderr is still recorded but not shown until the host drains, and
``process.stderr_backpressure`` says so. A host that drains, only slower than
the server writes, sees the same hole: the first bytes shown after it come
after one ``mcptap: N bytes … not shown here`` line, so the cut is visible. Used by ``stdio.StdioTap`` (a mixin:
the tap's state lives there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import trio

from mcptap.protocol.codes import finding
from mcptap.transport.stdio_os import CHUNK
from mcptap.transport.tap_recorder import TapRecorder

STDERR_BUFFER = 1 << 20        # bytes of server stderr held for a slow host stderr
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class _Dropped(Protocol):
    stderr_dropped: int


class StderrRelay:
    """Mixin of ``StdioTap``: the attributes below are the tap's."""

    rec: TapRecorder
    result: _Dropped
    _stderr_read_done: trio.Event
    _err_send: trio.MemorySendChannel[bytes]
    _err_recv: trio.MemoryReceiveChannel[bytes]
    _err_buffered: int
    _err_overflowing: bool
    _rec: Callable[..., None]

    async def _stderr_reader(self, child_err: Any) -> None:
        try:
            while True:
                try:
                    data = await child_err.receive_some(CHUNK)
                except _BROKEN:
                    data = b""
                if not data:
                    if self._err_unshown and not self._host_err_broken:      # the last hole, at the end
                        line = self._unshown_line()
                        try:
                            self._err_send.send_nowait(line)
                            self._err_buffered += len(line)
                        except (trio.ClosedResourceError, trio.WouldBlock):
                            pass
                    return
                self._rec(self.rec.stderr, data)
                self._stderr_out(data)
        finally:
            self._stderr_read_done.set()

    _host_err_broken = False
    _err_unshown = 0                  # bytes dropped since the host's stderr last got a marker line

    def _stderr_out(self, data: bytes) -> None:
        """Queue bytes for the host's stderr; never blocks."""
        if self._host_err_broken:
            return
        if self._err_buffered + len(data) > STDERR_BUFFER:
            self.result.stderr_dropped += len(data)
            self._err_unshown += len(data)
            if not self._err_overflowing:
                self._err_overflowing = True
                self._rec(self.rec.process, "stderr_backpressure", state="dropping", buffered_bytes=self._err_buffered, findings=[finding(
                    "process.stderr_backpressure", f"the host reads mcptap's stderr slower than the server writes it (or not at all): "
                    f"{self._err_buffered} bytes buffered; further server stderr is recorded but not shown until it drains")])
            return
        if self._err_unshown:
            data = self._unshown_line() + data
        try:
            self._err_send.send_nowait(data)
        except (trio.ClosedResourceError, trio.WouldBlock):
            return
        self._err_buffered += len(data)

    def _unshown_line(self) -> bytes:
        """The line that marks a hole in the host's view of stderr (a cut may
        fall inside a line: it starts on a new one)."""
        n, self._err_unshown = self._err_unshown, 0
        return (b"\nmcptap: %d bytes of the server's stderr not shown here (the host read stderr slower than the server "
                b"wrote it); the capture holds them\n" % n)

    async def _stderr_writer(self, host_err: Any) -> None:
        async for data in self._err_recv:
            parts, size = [data], len(data)
            while size < CHUNK:                     # coalesce a flood into fewer writes
                try:
                    more = self._err_recv.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                parts.append(more)
                size += len(more)
            if not self._host_err_broken:
                try:
                    await host_err.send_all(b"".join(parts) if len(parts) > 1 else data)
                except _BROKEN:
                    self._host_err_broken = True
            self._err_buffered -= size
            if self._err_overflowing and self._err_buffered <= STDERR_BUFFER // 2:
                self._err_overflowing = False
                self._rec(self.rec.process, "stderr_backpressure", state="recovered", dropped_bytes=self.result.stderr_dropped)
