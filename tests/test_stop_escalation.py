"""A host's repeated stop signal escalates, as under ``record`` (transport/stdio_signals.py):
``replay`` forwards the first to its stdio server and sends SIGTERM on the second, SIGKILL on
the third (replay/stop.py); ``serve --extend`` ends the session on the first (the real server
is shut down as at stdin EOF) and sends that server SIGTERM, then SIGKILL, on the next ones
(serve/stdio.py). SIGUSR1/SIGUSR2/SIGALRM are passed on and never counted. Real signals to
this process; the server is a stand-in that records what it is sent: no real server can
be made to receive three signals before mcptap has closed it."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import trio

from mcptap.replay.stop import latch_for, watch
from mcptap.serve.core import ServeCore
from mcptap.serve.script import script_from_path
from mcptap.serve.stdio import StdioServer
from scripted import handshake, record

HUP, TERM, KILL, USR1 = signal.SIGHUP, signal.SIGTERM, signal.SIGKILL, signal.SIGUSR1


class _Server:
    """A link (replay) or Fallback (serve) with a server process: what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []

    def signal(self, signum: int, reason: str = "forwarded") -> bool:
        self.sent.append((signum, reason))
        return True


class _Replayer:
    def __init__(self, link: Any) -> None:
        self.link = link
        self.stops: list[int] = []

    def stop(self, signum: int) -> None:
        self.stops.append(signum)


async def _until(cond: Any) -> None:
    with trio.fail_after(30):           # a hang guard, not a timing assertion
        while not cond():
            await trio.sleep(0.001)


async def test_replay_forwards_then_escalates_and_never_counts_usr1() -> None:
    server = _Server()
    replayer = _Replayer(server)
    latch = latch_for(stdio=True).install()
    try:
        os.kill(os.getpid(), HUP)            # before the watcher: latched, handled once it starts
        async with trio.open_nursery() as nursery:
            await nursery.start(watch, replayer, latch)
            await _until(lambda: len(server.sent) == 1)
            for n, s in enumerate((USR1, HUP, HUP), start=2):
                os.kill(os.getpid(), s)
                await _until(lambda n=n: len(server.sent) == n)
            nursery.cancel_scope.cancel()
    finally:
        latch.restore()
    assert server.sent == [(HUP, "forwarded"), (USR1, "forwarded"), (TERM, "escalation"), (KILL, "escalation")]
    assert replayer.stops == [HUP, HUP, HUP]


async def test_replay_over_http_ignores_usr1_and_stops_on_sigterm() -> None:
    replayer = _Replayer(object())            # an HTTP link: no process of ours
    latch = latch_for(stdio=False).install()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(watch, replayer, latch)
            os.kill(os.getpid(), USR1)       # ignored: its default action would end this process
            os.kill(os.getpid(), TERM)
            await _until(lambda: replayer.stops)
            nursery.cancel_scope.cancel()
    finally:
        latch.restore()
    assert replayer.stops == [TERM]


async def test_serve_extend_escalates_on_the_real_server_from_the_second_stop_signal(tmp_path: Path) -> None:
    core = ServeCore(script_from_path(str(record(tmp_path / "c.jsonl", handshake()))))
    mock = StdioServer(core)
    fb = _Server()
    mock.fallback = fb  # type: ignore[assignment]
    async with trio.open_nursery() as nursery:
        await nursery.start(mock._on_signals)
        for n, s in enumerate((HUP, USR1, HUP, HUP)):
            os.kill(os.getpid(), s)
            await _until(lambda n=n: mock._stops + [s for s, _ in fb.sent].count(USR1) == n + 1)
        nursery.cancel_scope.cancel()
    assert fb.sent == [(USR1, "forwarded"), (TERM, "escalation"), (KILL, "escalation")]
    assert mock.result.signal == HUP
