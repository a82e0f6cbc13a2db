"""A peer's JSON-RPC id beyond 64 bits (``2**80``): orjson refuses to encode
it, and show (every format), export messages and report used to end in a
``TypeError: Integer exceeds 64-bit range`` traceback when the capture was
re-annotated (``--full``, or rules newer than the capture's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcptap.capture.dumps import dumps
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, s2c

BIG = 2**80 + 1


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "big.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % BIG), s2c(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % BIG),
        ("exit", 0)])


@pytest.mark.parametrize("argv", [
    ["show", "--full"], ["show", "--full", "--format", "json"], ["show", "--full", "--format", "mermaid"],
    ["export", "-f", "messages"], ["check", "--full"],
])
def test_commands_print_a_big_id_exactly(cap: Path, argv: list[str]) -> None:
    r = CliRunner().invoke(mcptap, [argv[0], str(cap), *argv[1:]], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    if argv[0] != "check":
        assert str(BIG) in r.stdout


def test_report_holds_a_big_id(cap: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = CliRunner().invoke(mcptap, ["report", str(cap), "--no-scrub", "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert str(BIG) in out.read_text()


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=20))
def test_dumps_round_trips_any_json_value_exactly(value: object) -> None:
    assert json.loads(dumps(value)) == value
    assert json.loads(dumps(value, indent=True)) == value


def test_filter_by_a_big_id(cap: Path) -> None:
    r = CliRunner().invoke(mcptap, ["show", str(cap), "--full", "--oneline", "--no-summary", "-f", f"~id {BIG}"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert sum(f"id={BIG}" in line for line in r.stdout.splitlines()) == 2


ECHO_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {}}) + "\\n"); sys.stdout.flush()
    if m.get("method") == "notifications/initialized":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": BIG_ID, "method": "ping"}) + "\\n"); sys.stdout.flush()
""".replace("BIG_ID", str(BIG))


def test_replay_answers_a_server_request_with_a_big_id(tmp_path: Path) -> None:
    """The recorded answer to the server's `ping` (id 2**80+1) is sent back: it
    used to crash the replay runner's stdio link."""
    import sys
    cap = record(tmp_path / "srv.jsonl", handshake() + [
        s2c(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % BIG), c2s(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % BIG),
        ("exit", 0)])
    out = tmp_path / "new.jsonl"
    r = CliRunner().invoke(mcptap, ["replay", str(cap), "-o", str(out), "--", sys.executable, "-c", ECHO_SERVER], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    assert "Traceback" not in r.stderr and "s2c ping" in r.stdout
