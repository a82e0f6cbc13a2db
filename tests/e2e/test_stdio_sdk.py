"""End to end: the official MCP SDK client and server through `mcptap record`.

Both eras: the SDK's default (probes server/discover, 2026-07-28 stateless) and
the initialize handshake (mode="legacy"). The session must work unchanged, and
the capture must hold every message, paired, in the right phase, with zero
error findings and per-direction SHA-256 equal to what each side sent.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.capture.format import message_from_record
from mcptap.capture.reader import read_capture
from sdk_scenario import EXPECTED, drive

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent


def tapped(capture: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcptap.cli.main", "record", "--quiet", "-o", str(capture), "--", sys.executable, str(HERE / "sdk_server.py")],
    )


def check_capture(path: Path) -> list[dict]:
    cap = read_capture(str(path))
    assert cap.end is not None and not cap.truncated, "capture must end with an end record"
    msgs = [r for r in cap.records if r["type"] == "message"]
    errors = [(r["seq"], f) for r in cap.records for f in r.get("findings", ()) if f["severity"] == "error"]
    assert errors == [], f"clean SDK session produced error findings: {errors}"
    # every request answered and paired
    reqs = {r["seq"]: r for r in msgs if r["kind"] == "request"}
    paired = {r["pair"] for r in msgs if r["kind"] in ("response", "error") and "pair" in r}
    assert set(reqs) == paired, f"unpaired requests: {set(reqs) - paired}"
    assert cap.end["pending"] == []
    # SHA-256 per direction equals the bytes that crossed the tap
    for d in ("c2s", "s2c"):
        raw = b"".join(message_from_record(r).raw for r in msgs if r["dir"] == d)
        assert cap.end[d]["sha256"] == hashlib.sha256(raw).hexdigest()
        assert cap.end[d]["bytes"] == len(raw) > 0
    # today's full rules, including schema shape checks, agree: no errors, no warnings
    from mcptap.capture.reader import CaptureStream
    from mcptap.reannotate import reannotate

    stream = CaptureStream(str(path))
    again = [(r["seq"], f) for r in reannotate(stream.header, stream,
                                               shapes=True) for f in r.get("findings", ()) if isinstance(f, dict) and f["severity"] != "info"]
    assert again == [], again
    return msgs




async def test_handshake_era_session_through_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "legacy.jsonl"
    async with Client(tapped(cap), mode="legacy") as client:
        got, progress = await drive(client)
        await client.send_ping()
    assert got == EXPECTED and progress == [1.0, 2.0, 3.0]
    msgs = check_capture(cap)
    methods = [r.get("method") for r in msgs if r["dir"] == "c2s"]
    assert methods[:2] == ["initialize", "notifications/initialized"]
    assert "ping" in methods
    init_resp = next(r for r in msgs if r["dir"] == "s2c" and r.get("pair") == msgs[0]["seq"])
    assert init_resp["phase"] == "initializing" and init_resp["rev"] == init_resp["json"]["result"]["protocolVersion"]
    later = [r for r in msgs if r["seq"] > init_resp["seq"] and r.get("method") != "notifications/initialized"]
    assert {r["phase"] for r in later} == {"operating"}
    progress = [r for r in msgs if r.get("method") == "notifications/progress"]
    assert len(progress) == 3 and all(not r.get("findings") for r in progress)
    slow_call = next(r for r in msgs if r.get("method") == "tools/call" and r["json"]["params"]["name"] == "slow")
    assert {r["link"] for r in progress} == {slow_call["seq"]}
    boom = next(r for r in msgs if r["dir"] == "s2c" and r.get("json", {}).get("result", {}).get("isError"))
    assert boom["kind"] == "response"


async def test_stateless_2026_07_28_session_through_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "modern.jsonl"
    async with Client(tapped(cap)) as client:
        assert client.protocol_version == "2026-07-28"
        got, progress = await drive(client)
    assert got == EXPECTED and progress == [1.0, 2.0, 3.0]
    msgs = check_capture(cap)
    assert msgs[0]["method"] == "server/discover"
    assert not any(r.get("method") == "initialize" for r in msgs)
    # the probe itself precedes the era decision; everything from its answer on is stateless
    assert msgs[0]["phase"] == "before_initialize" and "lifecycle.era_probe" in [f["code"] for f in msgs[0]["findings"]]
    assert {r["phase"] for r in msgs[1:]} == {"stateless"}
    assert {r.get("rev") for r in msgs if r["kind"] == "request"} == {"2026-07-28"}
