"""The stdio tap's signals to the server (trio): forwarding a host's signals to
the server's process group, escalation on a repeated one, and the spec's
shutdown sequence after stdin EOF (grace → SIGTERM → grace → SIGKILL). Used by
``stdio.StdioTap`` (a mixin: the tap's state lives there), and the
``SignalLatch`` (transport/signal_latch.py) that holds a host's signals until the tap can act on them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import trio

from mcptap.protocol.codes import finding
from mcptap.transport.handoff import Handoff
from mcptap.transport.signal_latch import PASSED_ON_SIGNALS, SignalLatch
from mcptap.transport.stdio_os import signame
from mcptap.transport.tap_recorder import TapRecorder

#: the signals a host (or a terminal) sends to stop a server: forwarded to its process group
#: a host's signal this soon after it closed the server's stdin (seconds) gave the server no
#: time to exit on EOF: no ``process.no_exit_after_stdin_eof`` (the SDKs wait 2 s)
HOST_GAVE_NO_TIME = 0.25


class ProcessSignals:
    """Mixin of ``StdioTap``: the attributes below are the tap's."""

    rec: TapRecorder
    grace: float
    _pgid: int
    _handoff: Handoff
    _exited: trio.Event
    _stdout_closed: trio.Event
    _stdin_eof_at: float | None
    _late_exit_reported: bool
    _orphan_reported: bool
    _rec: Callable[..., None]
    say: Callable[[str], None]
    _early: SignalLatch | None

    def _signal_group(self, signum: int, reason: str) -> None:
        def send() -> dict[str, Any]:
            try:
                os.killpg(self._pgid, signum)
                return {"delivered": True}
            except (ProcessLookupError, PermissionError):     # group already gone
                return {"delivered": False}

        fs = []
        if reason == "forwarded":
            fs.append(finding("process.signal_forwarded", f"mcptap received {signame(signum)} and forwarded it to the server's process group",
                              {"signal": signame(signum)}))
        # stamped before the kill: the server's EOF and exit it causes are recorded after it
        self._handoff.call_caused(send, self.rec.process, "signal", signal=signame(signum), reason=reason, pgid=self._pgid, findings=fs)

    async def _forward_signals(self, signals: Any, nursery: trio.Nursery) -> None:
        """Forward ``FORWARDED_SIGNALS`` to the server's group. A server may
        ignore the stop signals (SIGINT/SIGTERM/SIGHUP/SIGQUIT; or wait for
        stdin EOF that a host never sends), so a second one escalates: SIGTERM,
        then SIGKILL after --grace; a third kills at once. The first is always
        only forwarded (the server decides). SIGUSR1/SIGUSR2/SIGALRM are the
        server's own business: only forwarded, never counted."""
        received = 0
        early = self._early.take() if self._early is not None else []   # before our receiver existed
        for signum in early:
            received = self._on_host_signal(signum, received, nursery)
        async for signum in signals:
            received = self._on_host_signal(signum, received, nursery)

    def _on_host_signal(self, signum: int, received: int, nursery: trio.Nursery) -> int:
        """Handle one host signal; returns the count of stop signals so far."""
        if signum in PASSED_ON_SIGNALS:
            self._signal_group(signum, "forwarded")
            return received
        self._host_signal(signum, received + 1, nursery)
        return received + 1

    def _host_signal(self, signum: int, received: int, nursery: trio.Nursery) -> None:
        """The ``received``-th signal from the host (``_forward_signals``)."""
        self._handoff.hurry()               # a host that signals us wants the capture finished now
        self._host_gave_up(signum)
        self._signal_group(signum, "forwarded")
        if received == 2:
            self.say(f"{signame(signum)} again: stopping the server (SIGTERM, SIGKILL after {self.grace:g} s)")
            nursery.start_soon(self._escalate)
        elif received >= 3:
            self._signal_group(signal.SIGKILL, "escalation")

    async def _escalate(self) -> None:
        self._signal_group(signal.SIGTERM, "escalation")
        with trio.move_on_after(self.grace):
            await self._exited.wait()
            return
        self._signal_group(signal.SIGKILL, "escalation")

    async def _after_stdin_eof(self) -> None:
        """Shutdown sequence of the spec: stdin closed → grace → SIGTERM → grace → SIGKILL
        (to the process group; continues if an orphan still holds stdout)."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(self.grace):
                await self._exited.wait()
                await self._stdout_closed.wait()
                return
            if signum == signal.SIGTERM and self._exited.is_set():
                # the server exited in time; a descendant keeps its stdout (one that left the process
                # group, setsid, is not seen by stdio._finish): not "still running"
                self._orphaned()
            elif signum == signal.SIGTERM and not self._late_exit_reported:
                self._late_exit_reported = True
                self._rec(self.rec.process, "no_exit_after_stdin_eof", seconds=self.grace, findings=[finding(
                    "process.no_exit_after_stdin_eof", f"server still running {self.grace:g} s after its stdin was closed: sending SIGTERM",
                    {"seconds": self.grace})])
            self._signal_group(signum, "shutdown")

    def _orphaned(self) -> None:
        """The server exited but its stdout is still open: a descendant holds it (once)."""
        if not self._orphan_reported:
            self._orphan_reported = True
            self._rec(self.rec.process, "exited_but_stdout_open", pid=self._pgid, findings=[finding(
                "process.exited_but_stdout_open", "the server exited but its stdout is still open (a descendant holds it); relaying on")])

    def _host_gave_up(self, signum: int) -> None:
        """A host signals mcptap after it closed the server's stdin while the
        server still runs: the host's own grace ran out first (the SDKs wait
        2 s, then SIGTERM; ``--grace`` defaults to 5 s), so the server did not
        exit on stdin EOF in the time the host gives it. A host that closes
        stdin and signals at once (within ``HOST_GAVE_NO_TIME``) gave it none."""
        if self._stdin_eof_at is None or self._exited.is_set() or self._late_exit_reported:
            return
        waited = round(trio.current_time() - self._stdin_eof_at, 3)
        if waited < HOST_GAVE_NO_TIME:
            return
        self._late_exit_reported = True
        self._rec(self.rec.process, "no_exit_after_stdin_eof", seconds=waited, findings=[finding(
            "process.no_exit_after_stdin_eof", f"server still running {waited:g} s after its stdin was closed, when the host sent "
            f"{signame(signum)}", {"seconds": waited})])

    def _group_alive(self) -> bool:
        """Whether a process of the server's group (its descendants that kept it) still exists."""
        try:
            os.killpg(self._pgid, 0)
        except ProcessLookupError:
            return False
        except OSError:                 # EPERM: a member exists
            return True
        return True
