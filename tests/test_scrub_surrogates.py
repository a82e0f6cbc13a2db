"""Scrubbing messages that hold a lone UTF-16 surrogate escape (``"\\ud83d"``:
JSON grammar, not Unicode; a JavaScript peer's text cut inside an emoji).
Such a string reaches the scrubber as a Python str with a surrogate, which
orjson cannot encode: ``record --redact`` stopped recording at the first one
(an id, a progress token, a cancel's requestId), ``scrub``/``report``/``diff``
ended in an internal error, and a message re-encoded to hide a secret got
U+FFFD in place of the escape (other bytes than the peer sent; ``check`` and
``check --full`` disagreed). The escape must survive, secrets must not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from click.testing import CliRunner

from mcptap.capture.reader import read_capture
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, res, s2c
from test_redact_engine import SECRETS

GH = SECRETS["github"]

#: (line the client sends, what the scrubbed capture must hold for it)
LINES = [
    (b'{"jsonrpc":"2.0","id":"\\ud83d","method":"ping"}\n', None),
    (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"progressToken":"\\udfff"}}}\n',
     None),
    (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\\udfff"}}\n', None),
    # a secret beside a lone surrogate: the compact encoding, and bytes kept verbatim (spaces)
    (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"lone \\ud800 ' + GH.encode() + b'"}}\n',
     b'"data":"lone \\ud800 \xc2\xabredacted:hmac:'),
    (b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x\\udc00 ' + GH.encode() + b'"}}\n',
     b'"data": "x\\udc00 \xc2\xabredacted:hmac:'),
]


def run(*args: str):
    return CliRunner().invoke(mcptap, list(args), catch_exceptions=False)


def payloads(path: Path) -> list[bytes]:
    return [m.raw for m in read_capture(str(path)).messages()]


def assert_scrubbed(path: Path) -> None:
    """Every line recorded, each byte for byte but for its secret, the escape kept."""
    got = payloads(path)
    assert GH.encode() not in path.read_bytes()
    for line, kept in LINES:
        if kept is None:
            assert line in got
        else:
            assert any(kept in g and GH.encode() not in g for g in got), kept
    full = run("check", "--full", "--format", "json", "--fail-on", "never", str(path))
    quick = run("check", "--format", "json", "--fail-on", "never", str(path))
    assert full.exit_code == quick.exit_code == 0
    counts = [{c["code"]: c["count"] for c in orjson.loads(r.output)["captures"][0]["codes"]} for r in (full, quick)]
    assert counts[0] == counts[1]
    assert "capture.gap" not in counts[0] and counts[0]["jsonrpc.lone_surrogate"] >= len(LINES)


def test_record_redact_keeps_recording_lone_surrogates(tmp_path) -> None:
    sent = b"".join(line for line, _ in LINES)
    out = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact", "-q", "-o", str(out), "--", "cat"],
                       input=sent, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == sent, p.stderr
    assert b"recording stopped" not in p.stderr and b"incomplete" not in p.stderr, p.stderr
    assert read_capture(str(out)).end is not None
    assert_scrubbed(out)


def test_scrub_report_diff_read_lone_surrogates(tmp_path) -> None:
    src = record(tmp_path / "plain.jsonl", handshake() + [c2s(line) for line, _ in LINES] + [s2c(res("\udfff"))])
    out = tmp_path / "s.jsonl"
    r = run("scrub", str(src), "-o", str(out))
    assert r.exit_code == 0, r.output
    got = payloads(out)
    assert b'{"jsonrpc":"2.0","id":"\\udfff","result":{}}\n' in got
    assert_scrubbed(out)
    again = tmp_path / "s2.jsonl"
    assert run("scrub", str(out), "-o", str(again)).exit_code == 0
    assert again.read_bytes() == out.read_bytes()           # scrubbing twice = once
    r = run("report", str(src), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output
    r = run("diff", str(src), str(out))
    assert r.exit_code in (0, 1) and "internal error" not in r.output, r.output


def test_secrets_in_ids_and_methods_are_warned_and_report_path_scrubbed(tmp_path) -> None:
    """A token used as a request id or in a method name stays (pairing, serve's matching):
    scrub and its dry run say so. report's default title and meta.path came from the capture's
    path unscrubbed (a directory named by a token), while the header's cwd was scrubbed."""
    folder = tmp_path / GH
    folder.mkdir()
    src = record(folder / "cap.jsonl", handshake() + [c2s(b'{"jsonrpc":"2.0","id":"' + GH.encode() + b'","method":"ping"}\n'),
                                                      c2s(b'{"jsonrpc":"2.0","method":"x/AKIAIOSFODNN7EXAMPLE"}\n')])
    for args in (["--dry-run"], ["-o", str(tmp_path / "s.jsonl")]):
        r = CliRunner().invoke(mcptap, ["scrub", str(src), *args])
        assert r.exit_code == 0, r.output
        warning = [line for line in r.stderr.splitlines() if "never redacted" in line]
        assert len(warning) == 1 and "2 secret(s)" in warning[0] and "#4 id" in warning[0] and "#5 method" in warning[0], r.stderr
    html = tmp_path / "r.html"
    r = CliRunner().invoke(mcptap, ["report", str(src), "-o", str(html)])
    assert r.exit_code == 0, r.output
    # the report scrubs as scrub does, so it says what it keeps as scrub does (the page reads "scrubbed")
    warning = [line for line in r.stderr.splitlines() if "never redacted" in line]
    assert len(warning) == 1 and "2 secret(s)" in warning[0] and "stay in the report" in warning[0], r.stderr
    text = html.read_text()
    title = text.split("<title>")[1].split("</title>")[0]
    assert GH not in title and "redacted:hmac:" in title
    assert str(folder) not in text          # meta.path too


def test_record_redact_warns_of_a_secret_id(tmp_path) -> None:
    line = b'{"jsonrpc":"2.0","id":"' + GH.encode() + b'","method":"ping"}\n'
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact", "-q", "-o", str(tmp_path / "r.jsonl"), "--", "cat"],
                       input=line, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == line, p.stderr
    assert b"2 secret(s) in JSON-RPC ids or method names are never redacted" in p.stderr, p.stderr
