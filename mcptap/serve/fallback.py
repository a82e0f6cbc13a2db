"""The real server behind the mock (trio, level 4): ``mcptap serve CAP --extend -- CMD``.

    fb = Fallback(argv, to_client)             # to_client(line: bytes) queues a line for the client
    await fb.forward(nursery, value, handshake) # starts CMD on first use
    fb.owns(value)                             # a client answer to one of CMD's own requests?
    fb.concerns(value)                         # a client notification about what CMD has (a cancel)?
    fb.signal(signum)                          # a host's signal to its process group
    await fb.aclose()

The server is started when the capture first cannot answer a request. It is
given the live client's handshake first (its ``initialize``, under an id of
mcptap's own whose answer is swallowed, and ``notifications/initialized``;
nothing in the 2026-07-28 era, where each request carries its own ``_meta``),
then each request the capture could not answer, and the client's answers to
the requests the server itself makes. Every line the server writes (other
than the handshake answer) goes to the client unchanged. Its stderr is
passed to mcptap's stderr, and given to ``on_stderr`` (bytes), its start and
end to ``on_process(event, **fields)`` (``spawn``: pid, argv; ``exit``: code or
signal), so the mock's own capture (the episode ``--extend`` merges) keeps them.

A real server that exits (or closes its stdout) with forwarded requests unanswered
answers none of them: each is given up (``on_lost(live id)``, the caller answers it with
an error; counted in ``lost``), and a request that comes later is not sent to it
(SpawnError). An answer that comes after all (a descendant holding stdout) is not passed on.

A client notification about a request the real server has (``notifications/cancelled``
naming a forwarded request, ``notifications/progress`` with a token of one of the
server's own requests) goes to the server: it is the one working on it. A cancelled
request is not waited for at the end (a server answers none, MCP basic/utilities/cancellation).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import trio

from mcptap.capture.dumps import dumps
from mcptap.errors import SpawnError
from mcptap.protocol.framing import NewlineFramer
from mcptap.serve.wire import hkey
from mcptap.transport.stdio_os import drain, quiet_close, spawn, wait_exit

INIT_ID = "mcptap-extend-initialize"
CHUNK = 64 * 1024
#: seconds after the server exited that its stdout may still bring answers (then they are given up)
EXITED_GRACE = 2.0


class Fallback:
    """See module docstring. ``timeout``: seconds to wait for the handshake answer."""

    def __init__(self, argv: Sequence[str], to_client: Callable[[bytes], None], timeout: float = 30.0,
                 on_stderr: Callable[[bytes], None] | None = None, on_process: Callable[..., None] | None = None,
                 on_lost: Callable[[Any], None] | None = None) -> None:
        self.argv = list(argv)
        self.to_client = to_client
        self.on_stderr = on_stderr
        self.on_process = on_process
        self.on_lost = on_lost
        self.timeout = timeout
        self.forwarded = 0                          # requests sent to the real server
        self.answered = 0                           # of those, answered by it (a response with their id)
        self.errors = 0                             # of those answers, JSON-RPC errors
        self.lost = 0                               # of those, never answered: the server exited first
        self._popen: subprocess.Popen[bytes] | None = None
        self._stdin: trio.lowlevel.FdStream | None = None
        self._ready = trio.Event()
        self._exited = trio.Event()
        self._server_ids: set[Any] = set()
        self._open: dict[Any, Any] = {}            # forwarded requests not answered (nor cancelled) yet: live id by hkey
        self._gone = False                          # the server exited or closed its stdout: it answers nothing more
        self._given_up: set[Any] = set()            # requests answered by the caller's error when it went
        self._forwarded_ids: set[Any] = set()      # every request forwarded: a cancel of one goes to the server
        self._tokens: set[Any] = set()             # progress tokens of the server's own requests
        self._answered = trio.Event()
        self._eof = trio.Event()

    def owns(self, value: Any) -> bool:
        """Whether ``value`` answers a request the real server made."""
        return isinstance(value, dict) and "method" not in value and hkey(value.get("id")) in self._server_ids

    def concerns(self, value: Any) -> bool:
        """Whether the client notification ``value`` is about a request the real server has
        (a cancel of one it was forwarded, progress on one of its own requests)."""
        if not isinstance(value, dict) or "id" in value or not isinstance(value.get("params"), dict):
            return False
        params = value["params"]
        if value.get("method") == "notifications/cancelled" and "requestId" in params:
            return hkey(params["requestId"]) in self._forwarded_ids
        if value.get("method") == "notifications/progress" and "progressToken" in params:
            return hkey(params["progressToken"]) in self._tokens
        return False

    async def forward(self, nursery: trio.Nursery, value: Any, handshake: Sequence[dict[str, Any]]) -> None:
        """Send ``value`` to the real server (started, and given ``handshake``, on first use).
        Raises SpawnError when it cannot be started or does not answer the handshake."""
        if self._gone:
            raise SpawnError(f"the real server {self.argv[0]!r} has exited")
        if self._popen is None:
            await self._start(nursery, handshake)
        assert self._stdin is not None
        if self.owns(value):
            self._server_ids.discard(hkey(value.get("id")))
        elif isinstance(value, dict) and "id" in value and "method" in value:
            self.forwarded += 1
            self._open[hkey(value["id"])] = value["id"]
            self._forwarded_ids.add(hkey(value["id"]))
        elif self.concerns(value) and value.get("method") == "notifications/cancelled":
            self._open.pop(hkey(value["params"]["requestId"]), None)      # no answer is due any more
            if not self._open:
                self._answered.set()
        try:
            await self._stdin.send_all(dumps(value) + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise SpawnError(f"the real server closed its stdin: {exc}") from None

    async def _start(self, nursery: trio.Nursery, handshake: Sequence[dict[str, Any]]) -> None:
        try:
            popen, in_w, out_r, err_r = spawn(self.argv)
        except OSError as exc:
            raise SpawnError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}") from None
        self._popen = popen
        if self.on_process is not None:
            self.on_process("spawn", pid=popen.pid, argv=self.argv)
        self._stdin = trio.lowlevel.FdStream(in_w)
        nursery.start_soon(self._reader, trio.lowlevel.FdStream(out_r))
        nursery.start_soon(drain, trio.lowlevel.FdStream(err_r), self._stderr)
        nursery.start_soon(self._wait, popen)
        init = next((m for m in handshake if m.get("method") == "initialize"), None)
        if init is None:
            self._ready.set()
            return
        await self._stdin.send_all(orjson.dumps({**init, "id": INIT_ID}) + b"\n")
        with trio.move_on_after(self.timeout):
            await self._ready.wait()
        if self._gone:
            raise SpawnError(f"the real server {self.argv[0]!r} exited before answering initialize")
        if not self._ready.is_set():
            raise SpawnError(f"the real server {self.argv[0]!r} did not answer initialize within {self.timeout:g} s")
        for m in handshake:
            if m.get("method") != "initialize":
                await self._stdin.send_all(dumps(m) + b"\n")

    async def _reader(self, stream: trio.lowlevel.FdStream) -> None:
        framer = NewlineFramer()
        async with stream:
            while True:
                try:
                    chunk = await stream.receive_some(CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    chunk = b""
                for f in framer.receive_data(chunk):
                    v = f.value
                    if isinstance(v, dict) and v.get("id") == INIT_ID and "method" not in v:
                        self._ready.set()
                        continue
                    if isinstance(v, dict) and "method" in v and "id" in v:
                        self._server_ids.add(hkey(v["id"]))
                        meta = v.get("params", {}).get("_meta") if isinstance(v.get("params"), dict) else None
                        if isinstance(meta, dict) and "progressToken" in meta:
                            self._tokens.add(hkey(meta["progressToken"]))
                    elif isinstance(v, dict) and "id" in v:
                        if hkey(v["id"]) in self._given_up:
                            continue                # the client has its error already
                        if hkey(v["id"]) in self._open:
                            self.answered += 1
                            self.errors += "error" in v
                        self._open.pop(hkey(v["id"]), None)
                        if not self._open:
                            self._answered.set()
                    self.to_client(f.raw if f.raw.endswith(b"\n") else f.raw + b"\n")
                if not chunk:
                    self._eof.set()
                    self._give_up()
                    return

    def _give_up(self) -> None:
        """The server is gone: every forwarded request it left unanswered to ``on_lost``."""
        self._gone = True
        for k, lid in list(self._open.items()):
            self.lost += 1
            self._given_up.add(k)
            if self.on_lost is not None:
                self.on_lost(lid)
        self._open.clear()
        self._answered.set()
        self._ready.set()                           # a handshake waiting for its answer: none comes

    def _stderr(self, chunk: bytes | bytearray) -> None:
        if self.on_stderr is not None:
            self.on_stderr(bytes(chunk))
        try:
            os.write(2, chunk)
        except OSError:
            pass

    async def _wait(self, popen: subprocess.Popen[bytes]) -> None:
        status = await wait_exit(popen)
        if self.on_process is not None:
            self.on_process("exit", code=status if status >= 0 else None, signal=-status if status < 0 else None)
        self._exited.set()
        # what it wrote before exiting is read first; a descendant that keeps stdout open
        # does not keep the client waiting for answers the server will never give
        with trio.move_on_after(EXITED_GRACE):
            await self._eof.wait()
        self._give_up()

    def signal(self, signum: int, reason: str = "forwarded") -> bool:
        """Send ``signum`` to the real server's process group (a host's signal passed on, or an
        escalation), recorded as a ``signal`` process event; False when it is not running."""
        if self._popen is None or self._exited.is_set():
            return False
        try:
            os.killpg(self._popen.pid, signum)
        except (ProcessLookupError, PermissionError):      # the group is gone already
            return False
        if self.on_process is not None:
            self.on_process("signal", signal=signal.Signals(signum).name, reason=reason, pgid=self._popen.pid)
        return True

    async def aclose(self, grace: float = 2.0, wait: bool = True) -> None:
        """Wait (up to ``timeout`` s; not when ``wait`` is False: mcptap is being stopped)
        for the answers to what was forwarded, close the server's stdin; SIGTERM, then
        SIGKILL its group after ``grace`` s each."""
        if self._popen is None:
            return
        if self._open and wait:
            self._answered = trio.Event()
            with trio.move_on_after(self.timeout):
                await self._answered.wait()
        if self._stdin is not None:
            await quiet_close(self._stdin)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(grace):
                await self._exited.wait()
            if self._exited.is_set():
                return
            try:
                os.killpg(self._popen.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
