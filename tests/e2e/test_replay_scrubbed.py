"""Replaying a scrubbed capture against a real SDK server matches what it should
(mcptap/redact/live.py, cli/replay.py, replay/runner.py). The capture holds
``«redacted:hmac:…»`` where the live server answers with secrets and asks with them, so
every answer that carried one was reported changed, and the server's sampling request
matched no recorded one (MISSING and NEW; its answer found by method only). As ``serve``
does for live params, replay now redacts the live answers and the live server's requests
with the capture's rules and key before comparing and matching, when this user's key made
the capture; with another key it says so.

The new capture is scrubbed as the recorded one was (same rules, same key: its header's
``scrubbed`` the same), so it holds no live secret, and ``diff`` of the two compares
placeholders with placeholders; a replay that cannot scrub it (another key) refuses unless
``--unscrubbed-output``. ``diff`` of a scrubbed capture against one in clear scrubs the
clear one with the same key as it reads it, or refuses without that key."""

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


SECRETS = ("abcdef1234567890XYZ", "Q7f9Lm2Xp4Rt8Vw1Zy3B")


def _replay(capture: Path, out: Path, env: dict[str, str] | None = None, *more: str) -> tuple[int, dict, str]:
    proc = _run([*MCPTAP, "replay", str(capture), "-o", str(out), "--format", "json", *more, "--", *SERVER], env)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return proc.returncode, orjson.loads(proc.stdout), proc.stderr.decode()


def _header(path: Path) -> dict:
    return orjson.loads(path.read_bytes().split(b"\n", 1)[0])


def test_a_scrubbed_capture_replayed_against_the_same_server_matches(scrubbed: Path, tmp_path: Path) -> None:
    code, report, err = _replay(scrubbed, tmp_path / "new.jsonl")
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    assert code == 0, (statuses, report["exchanges"])
    assert statuses["tools/call whoami"] == statuses["tools/call ask"] == statuses["s2c sampling/createMessage"] == "MATCH"
    # the report shows no live secret
    assert "abcdef1234567890XYZ" not in orjson.dumps(report).decode()
    # nor does the new capture: scrubbed with the recorded one's rules and key
    new = tmp_path / "new.jsonl"
    text = new.read_text()
    assert not [s for s in SECRETS if s in text]
    assert _header(new)["scrubbed"] == _header(scrubbed)["scrubbed"]
    # so diff compares placeholders with placeholders, and prints no secret
    diff = _run([*MCPTAP, "diff", str(scrubbed), str(new), "--format", "json"])
    out = diff.stdout.decode()
    assert not [s for s in SECRETS if s in out]
    assert not [i for i in orjson.loads(out)["items"] if i["section"] == "exchanges"], out


def test_diff_scrubs_a_capture_in_clear_against_a_scrubbed_one(scrubbed: Path) -> None:
    raw = scrubbed.parent / "raw.jsonl"
    assert [s for s in SECRETS if s in raw.read_text()]       # the recording in clear
    for a, b in ((scrubbed, raw), (raw, scrubbed)):
        diff = _run([*MCPTAP, "diff", str(a), str(b), "--no-color"])
        out = diff.stdout.decode() + diff.stderr.decode()
        assert diff.returncode == 0, out
        assert not [s for s in SECRETS if s in out]
    # without the key that scrubbed it: refused, nothing printed from the capture in clear
    diff = _run([*MCPTAP, "diff", str(scrubbed), str(raw), "--no-color"], {"MCPTAP_REDACT_KEY": "ab" * 32})
    assert diff.returncode == 2 and diff.stdout == b""
    assert "is scrubbed" in diff.stderr.decode() and "MCPTAP_REDACT_KEY" in diff.stderr.decode()


def test_with_another_key_replay_refuses_unless_told(scrubbed: Path, tmp_path: Path) -> None:
    # the new capture could not be scrubbed: it would hold the live secrets in clear
    proc = _run([*MCPTAP, "replay", str(scrubbed), "-o", str(tmp_path / "refused.jsonl"), "--", *SERVER], {"MCPTAP_REDACT_KEY": "ab" * 32})
    assert proc.returncode == 2 and "another redaction key" in proc.stderr.decode() and "--unscrubbed-output" in proc.stderr.decode()
    assert not (tmp_path / "refused.jsonl").exists()
    code, report, err = _replay(scrubbed, tmp_path / "other.jsonl", {"MCPTAP_REDACT_KEY": "ab" * 32}, "--unscrubbed-output")
    assert code == 1 and "another redaction key" in err
    statuses = {r["label"]: r["status"] for r in report["exchanges"]}
    assert statuses["tools/call whoami"] != "MATCH"
