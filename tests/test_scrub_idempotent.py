"""``scrub`` twice = ``scrub`` once, byte for byte (mcptap/redact/scrub.py,
engine.py): a value under a secret key that was already all placeholders was
copied anyway, so the second pass saw a "change" with no hit and rewrote the
message compactly (its ``raw`` dropped, later offsets and the end record's
digests shifted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, req, res, s2c

DATA = Path(__file__).parent / "data"


def scrub(src: Path, dst: Path) -> str:
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(dst)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def twice(src: Path, tmp: Path) -> tuple[bytes, bytes, str]:
    a, b = tmp / "once.jsonl", tmp / "twice.jsonl"
    scrub(src, a)
    out = scrub(a, b)
    return a.read_bytes(), b.read_bytes(), out


def test_docker_auths_text_scrubbed_twice_is_unchanged(tmp_path: Path) -> None:
    text = json.dumps({"auths": {"ghcr.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}})
    src = record(tmp_path / "src.jsonl", handshake() + [
        c2s(req(2, "tools/call", {"name": "cfg", "arguments": {}})),
        # spacing the compact encoding lacks: the message keeps its own bytes (raw)
        s2c(b'{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": ' + json.dumps(text).encode() + b'}]}}\n'),
        c2s(req(3, "tools/call", {"name": "x", "arguments": {"password": "pw-123456", "list": {"tokens": ["a1234567"]}}})),
        s2c(res(3)),
    ])
    once, again, out = twice(src, tmp_path)
    assert b"dXNlcjpwYXNzd29yZA" not in once and b"pw-123456" not in once
    assert once == again and "scrubbed 0 value" in out


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.rglob("*.jsonl") if "golden" not in p.parts))
def test_suite_captures_scrubbed_twice_are_unchanged(name: str, tmp_path: Path) -> None:
    src = next(DATA.rglob(name))
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(tmp_path / "once.jsonl")], catch_exceptions=False)
    if r.exit_code != 0:
        pytest.skip(f"not scrubbable: {r.output.strip()[:100]}")
    scrub(tmp_path / "once.jsonl", tmp_path / "twice.jsonl")
    assert (tmp_path / "once.jsonl").read_bytes() == (tmp_path / "twice.jsonl").read_bytes()


SECRET_KEYS = st.sampled_from(["password", "auth", "auths", "apiKey", "tokens", "credentials", "STRIPE_KEY", "name", "x"])
LEAF = st.one_of(st.text(max_size=12), st.integers(-5, 10**6), st.booleans(), st.none(),
                 st.sampled_from(["ghp_" + "a1B2" * 9, "password=hunter22", "Bearer abcdefgh12345", "glpat-abcdefghij0123456789"]))
VALUES = st.recursive(LEAF, lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(SECRET_KEYS, kids, max_size=3)),
                      max_leaves=10)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=VALUES, as_text=st.booleans(), spaced=st.booleans())
def test_generated_captures_scrubbed_twice_are_unchanged(tmp_path: Path, value: object, as_text: bool, spaced: bool) -> None:
    result = {"content": [{"type": "text", "text": json.dumps(value)}]} if as_text else {"structuredContent": {"v": value}}
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "result": result}, separators=(", ", ": ") if spaced else (",", ":"))
    src = record(tmp_path / "src.jsonl", handshake() + [c2s(req(2, "tools/call", {"name": "t", "arguments": {"a": value}})),
                                                       s2c(body.encode() + b"\n"), c2s(b"not json token=abcdef12345\n")])
    once, again, _ = twice(src, tmp_path)
    assert once == again
