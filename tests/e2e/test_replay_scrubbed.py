"""Replaying a scrubbed capture against a real SDK server matches what it should
(mcptap/redact/live.py, cli/replay.py, replay/runner.py). The capture holds
``«redacted:hmac:…»`` where the live server answers with secrets and asks with them, so
every answer that carried one was reported changed, and the server's sampling request
matched no recorded one (MISSING and NEW; its answer found by method only). As ``serve``
does for live params, replay now redacts the live answers and the live server's requests
with the capture's rules and key before comparing and matching, when this user's key made
the capture; with another key it says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = [pytest.mark.e2e]

HERE = Path(__file__).resolve().parents[1] / "replay"
SCRIPT = [sys.executable, str(HERE / "sdk_secrets.py")]
SERVER = [*SCRIPT, "server"]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})


@pytest.fixture(scope="module")
def scrubbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("scrubbed")
    raw, out = d / "raw.jsonl", d / "scrubbed.jsonl"
    proc = _run([*SCRIPT, "client", str(raw), "--", *SERVER])
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    proc = _run([*MCPTAP, "scrub", str(raw), "-o", str(out)])
    assert proc.returncode == 0, proc.stderr.decode()
    text = out.read_text()
    assert "abcdef1234567890XYZ" not in text and "Q7f9Lm2Xp4Rt8Vw1Zy3B" not in text
    return out


def _replay(capture: Path, out: Path, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    proc = _run([*MCPTAP, "replay", str(capture), "-o", str(out), "--format", "json", "--", *SERVER], env)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return proc.returncode, orjson.loads(proc.stdout), proc.stderr.decode()


def test_a_scrubbed_capture_replayed_against_the_same_server_matches(scrubbed: Path, tmp_path: Path) -> None:
    code, report, err = _replay(scrubbed, tmp_path / "new.jsonl")
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    assert code == 0, (statuses, report["exchanges"])
    assert statuses["tools/call whoami"] == statuses["tools/call ask"] == statuses["s2c sampling/createMessage"] == "MATCH"
    # the report shows no live secret
    assert "abcdef1234567890XYZ" not in orjson.dumps(report).decode()


def test_with_another_key_replay_says_why_secrets_differ(scrubbed: Path, tmp_path: Path) -> None:
    code, report, err = _replay(scrubbed, tmp_path / "other.jsonl", {"MCPTAP_REDACT_KEY": "ab" * 32})
    assert code == 1 and "another redaction key" in err
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    assert statuses["tools/call whoami"] != "MATCH"
