"""Replay and diff against real peers: an official-SDK server in two builds
(tests/replay/sdk_server.py: v2 changes greet's answer, removes echo, drops the
completions capability) and official-SDK clients recorded through mcptap
(tests/replay/sdk_client.py), in both protocol eras, over stdio and HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = [pytest.mark.e2e]

HERE = Path(__file__).resolve().parents[1] / "replay"
SERVER = [sys.executable, str(HERE / "sdk_server.py")]
CLIENT = [sys.executable, str(HERE / "sdk_client.py")]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
ERAS = ["legacy", "modern"]


def _run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One capture per era of the SDK client against v1 (via ``mcptap record``)."""
    out = {}
    d = tmp_path_factory.mktemp("captures")
    for era in ERAS:
        path = d / f"{era}.jsonl"
        proc = _run([*CLIENT, era, str(path), "--", *SERVER, "v1"])
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        out[era] = path
    return out


def _replay(capture: Path, out: Path, *server: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    proc = _run([*MCPTAP, "replay", str(capture), "-o", str(out), "--format", "json", *extra, *server])
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return proc.returncode, orjson.loads(proc.stdout)


def _not_matching(report: dict) -> dict[str, dict]:
    return {r["label"]: r for r in report["exchanges"] if r["status"] not in ("MATCH", "SKIPPED")}


@pytest.mark.parametrize("era", ERAS)
def test_replay_against_the_same_build_matches_everything(recorded: dict[str, Path], tmp_path: Path, era: str) -> None:
    code, report = _replay(recorded[era], tmp_path / "new.jsonl", "--", *SERVER, "v1")
    assert code == 0 and _not_matching(report) == {}
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    # the server asked for elicitation and sampling during interview: answered from the capture
    assert statuses["s2c elicitation/create"] == statuses["s2c sampling/createMessage"] == "MATCH"
    assert statuses["tools/call interview"] == "MATCH"
    assert statuses["tools/call wipe"] == "SKIPPED"            # destructive: not repeated by default
    assert report["era"] == era and report["surface"] == []
    # the new session is a normal capture; against the original it lacks only the skipped call
    proc = _run([*MCPTAP, "diff", str(recorded[era]), str(tmp_path / "new.jsonl"), "--format", "json"])
    assert proc.returncode == 1, proc.stdout.decode()
    items = orjson.loads(proc.stdout)["items"]
    assert [(i["section"], i["kind"], i["subject"]) for i in items] == [("exchanges", "removed", "tools/call wipe")]


@pytest.mark.parametrize("era", ERAS)
def test_replay_against_v2_reports_exactly_the_three_changes(recorded: dict[str, Path], tmp_path: Path, era: str) -> None:
    code, report = _replay(recorded[era], tmp_path / "v2.jsonl", "--", *SERVER, "v2")
    assert code == 1
    changed = _not_matching(report)
    handshake = "initialize" if era == "legacy" else "server/discover"
    assert set(changed) == {handshake, "tools/list", "tools/call greet"}
    assert {p["path"]: p["kind"] for p in changed[handshake]["paths"]} == {"result.capabilities.completions": "removed"}
    assert {p["path"]: p["kind"] for p in changed["tools/list"]["paths"]} == {"result.tools[name=echo]": "removed"}
    greet = {p["path"]: (p["a"], p["b"]) for p in changed["tools/call greet"]["paths"]}
    assert greet["result.content[0].text"] == ("Hello, Ann!", "Hi Ann.")
    assert {(s["section"], s["subject"], s.get("breaking", False)) for s in report["surface"]} == {
        ("capabilities", "server.completions", True), ("tools", "echo", True)}
    # diff of the two captures says the same
    proc = _run([*MCPTAP, "diff", str(recorded[era]), str(tmp_path / "v2.jsonl"), "--format", "json"])
    assert proc.returncode == 1
    items = orjson.loads(proc.stdout)["items"]
    assert {(i["section"], i["subject"]) for i in items} == {
        ("capabilities", "server.completions"), ("tools", "echo"), ("exchanges", "tools/call wipe"),
        ("exchanges", handshake), ("exchanges", "tools/list"), ("exchanges", "tools/call greet")}


def test_ignore_a_whole_result_masks_it(recorded: dict[str, Path], tmp_path: Path) -> None:
    # `--ignore result` / `METHOD:result` name the whole member, as `result.content` names a part
    code, report = _replay(recorded["legacy"], tmp_path / "a.jsonl", "--", *SERVER, "v2", extra=("--ignore", "tools/call:result"))
    assert code == 1 and set(_not_matching(report)) == {"initialize", "tools/list"}
    code, report = _replay(recorded["legacy"], tmp_path / "b.jsonl", "--", *SERVER, "v2", extra=("--ignore", "result"))
    assert code == 0 and _not_matching(report) == {}
    proc = _run([*MCPTAP, "diff", str(recorded["legacy"]), str(tmp_path / "a.jsonl"), "--format", "json", "--ignore", "result"])
    assert {i["subject"] for i in orjson.loads(proc.stdout)["items"] if i["section"] == "exchanges"} == {"tools/call wipe"}


def test_allow_side_effects_calls_the_destructive_tool(recorded: dict[str, Path], tmp_path: Path) -> None:
    code, report = _replay(recorded["legacy"], tmp_path / "all.jsonl", "--", *SERVER, "v1", extra=("--allow-side-effects",))
    assert code == 0
    assert {r["label"]: r["status"] for r in report["exchanges"]}["tools/call wipe"] == "MATCH"


def test_diff_of_two_recordings_of_the_same_scenario_is_empty(recorded: dict[str, Path], tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    proc = _run([*CLIENT, "legacy", str(again), "--", *SERVER, "v1"])
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    proc = _run([*MCPTAP, "diff", str(recorded["legacy"]), str(again)])
    assert proc.returncode == 0, proc.stdout.decode()
    assert b"no differences" in proc.stdout


def test_replay_with_a_server_that_cannot_start_exits_2(recorded: dict[str, Path], tmp_path: Path) -> None:
    proc = _run([*MCPTAP, "replay", str(recorded["legacy"]), "-o", str(tmp_path / "x.jsonl"), "--", "/nonexistent/server"])
    assert proc.returncode == 2 and b"cannot run" in proc.stderr


def test_replay_against_a_server_that_dies_reports_missing(recorded: dict[str, Path], tmp_path: Path) -> None:
    # a "server" that answers nothing and exits at once
    code, report = _replay(recorded["legacy"], tmp_path / "dead.jsonl", "--", sys.executable, "-c", "pass")
    assert code == 1
    assert {r["status"] for r in report["exchanges"] if r["status"] != "SKIPPED"} == {"MISSING"}


# -- Streamable HTTP ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded_http(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same scenario over Streamable HTTP through the real HTTP tap."""
    out = {}
    d = tmp_path_factory.mktemp("http-captures")
    for era in ERAS:
        path = d / f"{era}.jsonl"
        proc = _run([sys.executable, str(HERE / "http_record.py"), era, str(path), "v1"])
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        out[era] = path
    return out


async def _replay_url(capture: Path, out: Path, version: str) -> tuple[int, dict]:
    import trio

    sys.path.insert(0, str(HERE))
    from http_record import http_server

    async with http_server(version) as url:
        proc = await trio.run_process([*MCPTAP, "replay", str(capture), "-o", str(out), "--format", "json", "--url", url],
                                      capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return proc.returncode, orjson.loads(proc.stdout)


@pytest.mark.parametrize("era", ERAS)
async def test_http_replay_same_build_matches_and_v2_shows_the_three_changes(recorded_http: dict[str, Path], tmp_path: Path, era: str) -> None:
    from mcptap.capture.reader import read_capture

    code, report = await _replay_url(recorded_http[era], tmp_path / "v1.jsonl", "v1")
    assert code == 0 and _not_matching(report) == {}
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    assert statuses["s2c elicitation/create"] == statuses["s2c sampling/createMessage"] == "MATCH"
    new = read_capture(str(tmp_path / "v1.jsonl"))
    assert new.header["transport"] == "http" and new.end is not None
    assert not [f for m in new.messages() for f in m.findings if f.severity.value == "error"]
    if era == "legacy":                                   # the live session id was minted and carried
        sessions = {m.session for m in new.messages()}
        assert len(sessions) == 1 and None not in sessions
    code, report = await _replay_url(recorded_http[era], tmp_path / "v2.jsonl", "v2")
    assert code == 1
    handshake = "initialize" if era == "legacy" else "server/discover"
    assert set(_not_matching(report)) == {handshake, "tools/list", "tools/call greet"}


async def test_stdio_capture_replays_over_http(recorded: dict[str, Path], tmp_path: Path) -> None:
    code, report = await _replay_url(recorded["modern"], tmp_path / "x.jsonl", "v1")
    assert code == 0 and _not_matching(report) == {}


async def test_http_replay_records_no_credential_in_clear(recorded_http: dict[str, Path], tmp_path: Path) -> None:
    """`replay --url URL?api_key=… -H 'Authorization: …'`: the new capture holds
    placeholders, as the tap's captures do (the query value was recorded in
    clear in every http record's target and message's transport path)."""
    import trio

    sys.path.insert(0, str(HERE))
    from http_record import http_server

    out = tmp_path / "new.jsonl"
    async with http_server("v1") as url:
        proc = await trio.run_process([*MCPTAP, "replay", str(recorded_http["modern"]), "-o", str(out), "--url", url + "?api_key=qSECRET-4711-abc",
                                       "-H", "Authorization: Bearer hSECRET-0815-xyz"], capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    text = out.read_text()
    assert "«redacted:hmac:" in text and "qSECRET-4711-abc" not in text and "hSECRET-0815-xyz" not in text
