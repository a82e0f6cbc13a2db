"""``serve`` of a scrubbed capture (mcptap/redact/live.py, serve/core.py ``prepare``): the
recorded requests hold ``«redacted:hmac:…»`` where the live client sends the secret, so
none of the calls that carry one got an answer (``-32602 … no answer … with these params``).
With the key the capture was scrubbed with, live params are redacted the same way before
matching; with another key serve says so once on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, req, res, s2c

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
OTHER = "ff" + KEY[2:]
CALLS = [
    {"name": "login", "arguments": {"user": "bob", "password": "hunter2-Correct-Horse"}},
    {"name": "fetch", "arguments": {"url": "https://x.example/?token=ghp_" + "a1B2" * 9}},
    {"name": "plain", "arguments": {"n": 1}},
]


def _client() -> bytes:
    msgs: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    msgs += [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": p} for i, p in enumerate(CALLS)]
    return b"".join(json.dumps(m).encode() + b"\n" for m in msgs)


@pytest.fixture
def scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCPTAP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("MCPTAP_REDACT_KEY", KEY)
    steps = handshake()
    for i, p in enumerate(CALLS):
        steps += [c2s(req(2 + i, "tools/call", p)), s2c(res(2 + i, {"content": [{"type": "text", "text": f"ok {i}"}]}))]
    src = record(tmp_path / "c.jsonl", steps)
    out = tmp_path / "s.jsonl"
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "hunter2-Correct-Horse" not in out.read_text()
    return out


def _serve(path: Path) -> tuple[list[dict[str, Any]], str]:
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", "-q", str(path)], input=_client(),
                       capture_output=True, timeout=60, env=os.environ.copy())
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()], p.stderr.decode()


def test_with_the_same_key_every_call_is_answered(scrubbed: Path) -> None:
    out, err = _serve(scrubbed)
    answers = {m["id"]: m for m in out if "id" in m}
    assert [answers[2 + i].get("result", {}).get("content", [{}])[0].get("text") for i in range(3)] == ["ok 0", "ok 1", "ok 2"]
    assert "another redaction key" not in err


def test_with_another_key_serve_says_so_once(scrubbed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPTAP_REDACT_KEY", OTHER)
    out, err = _serve(scrubbed)
    answers = {m["id"]: m for m in out if "id" in m}
    assert "error" in answers[2] and answers[4]["result"]["content"][0]["text"] == "ok 2"
    assert err.count("another redaction key") == 1 and "MCPTAP_REDACT_KEY" in err


def test_live_redaction_rebuilds_user_rules() -> None:
    from mcptap.redact.keyed import Keyer
    from mcptap.redact.live import live_redaction
    from mcptap.redact.rules import build_rules

    keyer = Keyer(bytes.fromhex(KEY))
    rules = build_rules(keys=["ssn"], paths=["params.arguments.q"], patterns=[r"EMP-(\d{6})"])
    header = {"scrubbed": [{"rules": rules.describe(), "key": keyer.fingerprint()}]}
    prepare, why = live_redaction(header, keyer)
    assert why is None and prepare is not None
    got = prepare({"arguments": {"ssn": "123-45-6789", "q": "free text", "note": "EMP-123456"}})
    assert "123-45-6789" not in json.dumps(got) and "free text" not in json.dumps(got) and "123456" not in json.dumps(got)
    assert live_redaction({}, keyer) == (None, None)


@pytest.mark.parametrize("command", ["serve", "replay"])
def test_an_unusable_key_is_named_not_taken_for_none(scrubbed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     command: str) -> None:
    # the key file holds the right key; a mistyped MCPTAP_REDACT_KEY in front of it was once
    # reported as "you have no redaction key" and the file silently ignored
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "redaction.key").write_text(KEY + "\n")
    monkeypatch.setenv("MCPTAP_REDACT_KEY", "not-hex")
    new = tmp_path / "new.jsonl"
    argv = ["serve", str(scrubbed)] if command == "serve" else \
        ["replay", str(scrubbed), "-o", str(new), "--", sys.executable, "-c", "pass"]
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *argv], input=_client(), capture_output=True,
                       timeout=60, env=os.environ.copy())
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert err == "mcptap: MCPTAP_REDACT_KEY is not a hex key\n"
    assert p.stdout == b"" and not new.exists()
