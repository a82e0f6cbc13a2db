"""A replayed answer is timed from the instant the new capture's record of
its request is stamped (right before the request is written), not from when
the link's task gets the thread back after the write: under load (the
recording's worker holding the GIL) that came late, after the answer was in,
and replay reported a fraction of the latency its own capture holds. The
stall after each write is made here on purpose; against the official-SDK
server (tests/replay/sdk_server.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.replay.offpath import OffPath
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer, StdioLink
from replay.capgen import C2S, S2C, TOOLS, Tape
from replay.test_plan import handshake, req, res

SERVER = [sys.executable, str(Path(__file__).parent / "sdk_server.py"), "v1"]
STALL = 0.3         # s the trio thread is held after each write (a worker thread's long C call)


async def test_the_report_and_the_new_capture_time_an_answer_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, out = str(tmp_path / "c.jsonl"), str(tmp_path / "new.jsonl")
    t = Tape(path)
    handshake(t, TOOLS)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    t.send(S2C, res(2, {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}))
    t.close()
    plain = OffPath.writing

    @contextmanager
    def stalled(self: OffPath) -> Iterator[None]:
        with plain(self):
            yield
        time.sleep(STALL)                   # the server answers meanwhile; its answer waits in the pipe

    monkeypatch.setattr(OffPath, "writing", stalled)
    rec = Recorder(CaptureWriter.open(out), "stdio", target={"argv": ["sdk"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    plan = plan_from_path(path)
    result = await Replayer(plan, StdioLink(SERVER, rec, grace=2), timeout=30).run()
    rec.close(exit_code=result.exit_code)
    msgs = {r["seq"]: r for r in read_capture(out).records if r.get("type") == "message"}
    captured = {msgs[r["pair"]]["method"]: r["latency_us"] for r in msgs.values() if r.get("pair") in msgs and "latency_us" in r}
    for step in plan.steps:
        live = result.live.get(step.index)
        if step.kind != "request" or live is None:
            continue
        assert live.response is not None and "result" in live.response, live.response
        # the same start, the same end (give or take the scheduling between reading and handing on)
        assert live.latency_us is not None and abs(live.latency_us - captured[step.method]) < STALL * 1e6 / 3, \
            (step.method, live.latency_us, captured)
        assert live.latency_us >= STALL * 1e6 * 0.8          # the answer was read only after the stall
