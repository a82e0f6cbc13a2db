"""A host's signals during ``mcptap replay`` (trio, main thread), as ``record`` treats them.

    latch = SignalLatch(signals_for(stdio)).install()     # from when the new capture exists
    async with trio.open_nursery() as n:
        await n.start(watch, replayer, latch)
        result = await replayer.run()
        n.cancel_scope.cancel()

A stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) stops the replay: no more steps
are sent nor answers waited for (``Replayer.stop``), the server is closed as at the
end, and the caller finishes the new capture and exits 128+N. Over stdio it goes
on to the server's process group first (the server decides, as under ``record``);
a second one there is SIGTERM, a third SIGKILL (the link's close kills it after
``--grace`` in any case). SIGUSR1, SIGUSR2 and SIGALRM are the stdio server's own:
passed on, never counted; over HTTP there is no process of ours to pass them to,
so they are ignored (their default action would end mcptap with the capture
unfinished). Signals that came before ``watch`` (the latch's) are handled as if
they came then.
"""

from __future__ import annotations

import signal
from typing import Any

import trio

from mcptap.transport.signal_latch import FORWARDED_SIGNALS, PASSED_ON_SIGNALS, STOP_SIGNALS, SignalLatch, open_receiver


def latch_for(stdio: bool) -> SignalLatch:
    """The latch for a replay over stdio (all forwarded signals caught) or HTTP (the stop
    signals caught, SIGUSR1/SIGUSR2/SIGALRM ignored); not installed yet."""
    return SignalLatch(FORWARDED_SIGNALS) if stdio else SignalLatch(STOP_SIGNALS, ignoring=PASSED_ON_SIGNALS)


async def watch(replayer: Any, latch: SignalLatch, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Receive the latch's signals until cancelled (see module docstring); ``replayer``: the
    running Replayer (its ``link`` is the current one: a fresh one per recorded session)."""
    stops = 0

    def on(signum: int) -> None:
        nonlocal stops
        pass_on = getattr(replayer.link, "signal", None)      # a link with a server process of ours (stdio)
        if signum in PASSED_ON_SIGNALS:
            if pass_on is not None:
                pass_on(signum)
            return
        stops += 1
        if pass_on is not None:
            pass_on(*((signum, "forwarded") if stops == 1 else (signal.SIGTERM if stops == 2 else signal.SIGKILL, "escalation")))
        replayer.stop(signum)

    with open_receiver(*latch.signals) as signals:
        task_status.started()
        for signum in latch.take():
            on(signum)
        async for signum in signals:
            on(int(signum))


def late_stop(latch: SignalLatch) -> int:
    """The first stop signal that came after ``watch`` ended (0 for none)."""
    return next((s for s in latch.take() if s in STOP_SIGNALS), 0)
