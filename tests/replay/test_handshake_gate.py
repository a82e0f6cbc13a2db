"""A failed handshake stops the replay of its session, in both eras: a live
``initialize`` (handshake era) or ``server/discover`` (2026-07-28) that fails
where the recorded one succeeded leaves the session's later steps unsent, with
the same note; a handshake that failed in the recording too (the SDK client's
discover-then-initialize fallback) does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer
from replay.capgen import C2S, META, S2C, Tape
from replay.test_plan import req, res
from replay.test_runner import FakeLink, echo_server

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete",
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}


class RefusingLink(FakeLink):
    """The fake server, answering ``refused`` methods with -32601."""

    def __init__(self, refused: set[str]) -> None:
        super().__init__(self._handle)
        self.refused = refused

    def _handle(self, msg: dict[str, Any], ctx: dict[str, Any]) -> Any:
        if msg["method"] == "server/discover":
            return DISCOVERED
        return echo_server(msg, ctx)

    async def _serve(self, msg: dict[str, Any]) -> None:
        if msg["method"] in self.refused:
            await self.deliver({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}, None)
        else:
            await super()._serve(msg)


def _modern(t: Tape) -> None:
    t.send(C2S, req(1, "server/discover", {"_meta": META}))
    t.send(S2C, res(1, DISCOVERED))


def _legacy(t: Tape) -> None:
    t.send(C2S, req(1, "initialize", INIT))
    t.send(S2C, res(1, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})


async def _run(path: str, link: FakeLink) -> list[tuple[str, str, str | None]]:
    plan = plan_from_path(path)
    result = await Replayer(plan, link, timeout=2).run()
    return [(r.label, r.status, r.note) for r in compare_replay(plan, result.live, result.server_requests, result.notes)]


@pytest.mark.parametrize("handshake", ["initialize", "server/discover"])
async def test_a_failed_live_handshake_stops_its_session_in_both_eras(tmp_path: Path, handshake: str) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    meta = {"_meta": META} if handshake == "server/discover" else {}
    (_modern if handshake == "server/discover" else _legacy)(t)
    t.send(C2S, req(2, "tools/list", meta or None))
    t.send(S2C, res(2, {"tools": []}))
    t.send(C2S, req(3, "resources/list", meta or None))
    t.send(S2C, res(3, {"resources": []}))
    t.close()
    link = RefusingLink({handshake})
    rows = await _run(path, link)
    assert rows[0][:2] == (handshake, "ERROR-CHANGED"), rows
    why = f"not sent: {handshake} failed (error -32601 'Method not found')"
    assert [(label, note) for label, _, note in rows if label in ("tools/list", "resources/list")] == [
        ("tools/list", why), ("resources/list", why)], rows
    assert [m.get("method") for m in link.received if "id" in m] == [handshake]


async def test_a_handshake_that_failed_in_the_recording_too_does_not_stop_the_replay(tmp_path: Path) -> None:
    """The SDK's Client probes server/discover and falls back to initialize on a
    handshake-era server: the live discover fails as the recorded one did."""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    t.send(C2S, req(0, "server/discover", {"_meta": META}))
    t.send(S2C, {"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "Method not found"}})
    _legacy(t)
    t.send(C2S, req(2, "tools/list"))
    t.send(S2C, res(2, {"tools": []}))
    t.close()
    link = RefusingLink({"server/discover"})
    rows = await _run(path, link)
    assert [label for label, _, _ in rows] == ["server/discover", "initialize", "tools/list"]
    assert not [r for r in rows if r[2] and "not sent" in r[2]], rows
    assert [m.get("method") for m in link.received if "id" in m] == ["server/discover", "initialize", "tools/list"]
