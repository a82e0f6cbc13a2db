"""`mcptap recover`: a killed stdio tap's spill file added to its capture
(the SIGKILL end to end: tests/transport/test_stdio_flood.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.redact.keyed import PLACEHOLDER
from mcptap.transport.spill import SpillFile, entries

A = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}\n'
B = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b"}}\n'


def _killed_capture(tmp: Path) -> Path:
    """A capture cut off mid-record after A was recorded (no end record)."""
    cap = tmp / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_bytes(Direction.S2C, A)
    rec.writer.flush()
    with open(cap, "ab") as fp:
        fp.write(b'{"type":"mess')                       # SIGKILL mid-write
    return cap


def test_recover_appends_what_the_capture_lacks_and_marks_the_rest_lost(tmp_path: Path) -> None:
    cap = _killed_capture(tmp_path)
    spill = SpillFile(str(tmp_path / "cap.jsonl.spill"))
    spill.append(1, 7, 0, A)                              # recorded before the kill: skipped
    spill.append(1, 8, len(A) + len(B), B)                # B (at len(A)) was only in memory: a gap
    assert [e[2] for e in entries(str(tmp_path / "cap.jsonl.spill"))] == [0, len(A) + len(B)]
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0, out.output
    c = read_capture(str(cap))
    assert c.end is None and not (tmp_path / "cap.jsonl.spill").exists()
    tail = [r for r in c.records if r["type"] in ("gap", "chunk")]
    assert [r["type"] for r in tail] == ["gap", "gap", "chunk"]           # the cut record, the lost bytes, B
    assert tail[1]["dir"] == "s2c" and tail[1]["bytes"] == len(B)
    assert tail[2]["offset"] == len(A) + len(B) and decode_bytes(tail[2], "data") == B
    seqs = [r["seq"] for r in c.records if r.get("seq") is not None]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    report = orjson.loads(CliRunner().invoke(mcptap, ["check", "--format", "json", str(cap)]).output)["captures"][0]
    assert not report["complete"]


def test_recover_leaves_a_complete_capture_alone(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_bytes(Direction.S2C, A)
    rec.close(exit_code=0)
    before = cap.read_bytes()
    SpillFile(str(tmp_path / "cap.jsonl.spill")).append(1, 7, 0, A)     # stale: the capture has every byte
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0 and cap.read_bytes() == before and not (tmp_path / "cap.jsonl.spill").exists()
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])              # nothing left: says so, changes nothing
    assert out.exit_code == 0 and "nothing to recover" in out.output and cap.read_bytes() == before


def test_check_points_an_incomplete_capture_to_recover(tmp_path: Path) -> None:
    cap = _killed_capture(tmp_path)
    text = CliRunner().invoke(mcptap, ["check", str(cap)]).output
    assert "mcptap recover" in text and "the spill file its header names, cap.jsonl.spill," in text


def _complete_capture(tmp: Path, spill: str) -> Path:
    cap = tmp / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": spill})
    rec.stdio_bytes(Direction.S2C, A)
    rec.close(exit_code=0)
    return cap


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("named", ["cap.jsonl", "precious.txt", "precious.spill", "link.spill", "..", ".", ""])
def test_recover_never_removes_a_file_that_is_not_a_spill_file(tmp_path: Path, named: str, complete: bool) -> None:
    """A capture's header (edited, or from someone else's bug report) names
    the capture itself, another file, a file named like a spill file that
    holds something else, or a symlink to the capture: ``recover`` used to
    remove it ("removed the stale cap.jsonl"). Now it is left alone with one
    line saying why (exit 2); an empty name names nothing: nothing to recover."""
    cap = _complete_capture(tmp_path, named) if complete else _killed_capture(tmp_path)
    if not complete:                                     # the killed capture's header names cap.jsonl.spill: edit it
        lines = cap.read_bytes().split(b"\n")
        head = orjson.loads(lines[0])
        head["spill"] = named
        cap.write_bytes(b"\n".join([orjson.dumps(head), *lines[1:]]))
    (tmp_path / "precious.txt").write_bytes(b"keep me")
    (tmp_path / "precious.spill").write_bytes(b"hello, not spill entries")
    os.symlink(cap, tmp_path / "link.spill")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, out.output
    if named:                                            # there is such a file (or directory): says why it is left alone
        assert out.exit_code == 2 and "left alone, nothing recovered" in out.output, out.output
    else:
        assert out.exit_code == 0 and "nothing to recover" in out.output, out.output


def test_recover_finds_the_spill_file_of_the_capture_name_when_the_header_names_none_there(tmp_path: Path) -> None:
    """The header's ``spill`` holds a name that is not there (a capture name
    that is not UTF-8 is held as text with U+FFFD): the spill file named after
    the capture's own name is recovered."""
    cap = _killed_capture(tmp_path)
    lines = cap.read_bytes().split(b"\n")
    head = orjson.loads(lines[0])
    head["spill"] = "cap\ufffd.jsonl.spill"
    cap.write_bytes(b"\n".join([orjson.dumps(head), *lines[1:]]))
    SpillFile(str(tmp_path / "cap.jsonl.spill")).append(1, 8, len(A), B)
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0 and "added" in out.output, out.output
    assert not (tmp_path / "cap.jsonl.spill").exists()
    assert [decode_bytes(r, "data") for r in read_capture(str(cap)).records if r["type"] == "chunk"] == [B]


TOKEN = "ghp_" + "Zq3xY9w8V7u6T5s4R3q2P1o0N9m8L7k6J5i4"


def _line(i: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line %d %s"}}\n' % (i, TOKEN.encode())


def _killed_redacted_capture(tmp: Path) -> tuple[Path, list[bytes]]:
    """A ``record --redact`` capture (the user's key: the tests' MCPTAP_REDACT_KEY) that
    recorded two lines with a token before the kill, and the spill file holding those and
    three more, the token of line 3 cut in two by the relay's reads."""
    from mcptap.redact.engine import Redactor
    from mcptap.redact.keyfile import load_keyer
    from mcptap.redact.rules import build_rules
    from mcptap.redact.scrub import Scrubber

    cap = tmp / "cap.jsonl"
    w = CaptureWriter.open(str(cap))
    w.transform = Scrubber(Redactor(build_rules(), load_keyer())).transform
    rec = Recorder(w, "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    lines = [_line(i) for i in range(5)]
    rec.stdio_bytes(Direction.S2C, lines[0] + lines[1])
    rec.writer.flush()
    spill = SpillFile(str(tmp / "cap.jsonl.spill"))
    at = 0
    stream = b"".join(lines)
    third = len(lines[0]) + len(lines[1]) + len(lines[2]) - 20           # inside line 2's token
    for piece in (stream[:len(lines[0])], stream[len(lines[0]):third], stream[third:]):
        spill.append(1, 7, at, piece)
        at += len(piece)
    return cap, lines


def test_recover_redacts_a_redacted_capture_s_spill_with_its_rules_and_key(tmp_path: Path) -> None:
    cap, lines = _killed_redacted_capture(tmp_path)
    assert TOKEN.encode() not in cap.read_bytes()
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0, out.output
    body = cap.read_bytes()
    assert TOKEN.encode() not in body and TOKEN[:12].encode() not in body       # the cut token too
    c = read_capture(str(cap))
    held = [r for r in c.records if r["type"] in ("message", "chunk") and r["dir"] == "s2c"]
    data = [decode_bytes(r, "data") if r["type"] == "chunk" else (r.get("raw") or "").encode() or orjson.dumps(r["json"]) + b"\n"
            for r in held]
    # the capture's own placeholder for the token, and the same one in what was recovered
    marks = {m for d in data for m in PLACEHOLDER.findall(d.decode())}
    assert len(marks) == 1 and sum(d.count(next(iter(marks)).encode()) for d in data) == 5
    assert b"".join(data).count(b'"line ') == 5 and all(b"line %d " % i in b"".join(data) for i in range(5))
    # offsets run on over the bytes the capture holds; original says where they were forwarded
    at = 0
    for r, d in zip(held, data, strict=True):
        assert r["offset"] == at
        at += len(d)
    src = [r["original"] for r in held]
    assert src[-1]["offset"] + src[-1]["bytes"] == sum(map(len, lines))
    assert all(a["offset"] + a["bytes"] == b["offset"] for a, b in zip(src, src[1:], strict=False))
    assert not (tmp_path / "cap.jsonl.spill").exists()


def test_recover_refuses_a_redacted_capture_it_cannot_redact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap, _ = _killed_redacted_capture(tmp_path)
    before = cap.read_bytes()
    monkeypatch.setenv("MCPTAP_REDACT_KEY", "ab" * 32)                  # another key than the capture's
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 2 and "recorded with --redact" in out.output and "another redaction key" in out.output
    assert cap.read_bytes() == before and (tmp_path / "cap.jsonl.spill").exists()


def _killed_capture_with_argv_secret(tmp: Path, redact: bool = False) -> tuple[Path, list[str], bytes]:
    """A capture (``redact``: with --redact, rules that do not know this secret) of a server given
    ``--token TOKEN`` (as ``record`` sets it up: argv scrubbed in the header, the token replaced wherever it reappears), killed
    after one line; the spill file holds that line and one where the server echoes its
    arguments, cut by the relay's reads inside the token."""
    from mcptap.known_secrets import known_secrets
    from mcptap.redact.argv import placeholder, scrub_argv

    argv = ["server", "--token", TOKEN]
    shown = scrub_argv(argv)
    assert TOKEN not in shown[2]
    cap = tmp / "cap.jsonl"
    w = CaptureWriter.open(str(cap))
    if redact:
        from mcptap.redact.engine import Redactor
        from mcptap.redact.keyfile import load_keyer
        from mcptap.redact.rules import build_rules
        from mcptap.redact.scrub import Scrubber

        w.transform = Scrubber(Redactor(build_rules(builtin=False), load_keyer())).transform
    known = known_secrets(argv, shown, placeholder)
    assert known is not None
    w.line_filter = known.line
    rec = Recorder(w, "stdio", {"argv": shown}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.known = known
    rec.stdio_bytes(Direction.S2C, A)
    rec.writer.flush()
    echo = _line(7)
    spill = SpillFile(str(tmp / "cap.jsonl.spill"))
    spill.append(1, 7, len(A), echo[:-20])
    spill.append(1, 8, len(A) + len(echo) - 20, echo[-20:])
    return cap, argv, shown[2].encode()


@pytest.mark.parametrize("redact", [False, True])
def test_recover_replaces_the_server_s_argv_secrets_as_the_live_tap_does(tmp_path: Path, redact: bool) -> None:
    cap, argv, mark = _killed_capture_with_argv_secret(tmp_path, redact)
    assert TOKEN.encode() not in cap.read_bytes()
    out = CliRunner().invoke(mcptap, ["recover", str(cap), "--", *argv])
    assert out.exit_code == 0, out.output
    body = cap.read_bytes()
    assert TOKEN.encode() not in body and TOKEN[:12].encode() not in body and TOKEN[-12:].encode() not in body
    chunks = [decode_bytes(r, "data") for r in read_capture(str(cap)).records if r["type"] == "chunk"]
    assert b"".join(chunks) == _line(7).replace(TOKEN.encode(), mark)
    assert not (tmp_path / "cap.jsonl.spill").exists()


@pytest.mark.parametrize("given", [[], ["server", "--token", "ghp_another_token_entirely_0000000000000"]])
def test_recover_refuses_to_add_argv_secrets_it_cannot_replace(tmp_path: Path, given: list[str]) -> None:
    # without the server's command, or with another one: the values are unknown, the spill is left
    cap, _, _ = _killed_capture_with_argv_secret(tmp_path)
    before = cap.read_bytes()
    out = CliRunner().invoke(mcptap, ["recover", str(cap), *(["--", *given] if given else [])])
    assert out.exit_code == 2 and "server's arguments held secrets" in out.output, out.output
    assert cap.read_bytes() == before and (tmp_path / "cap.jsonl.spill").exists()


def test_recover_after_a_recorded_message_that_held_an_argv_secret_adds_every_byte_once(tmp_path: Path) -> None:
    """The live tap replaces the server's argv secrets in what it records, so the
    last recorded message is not as long as the bytes forwarded: where the recorded
    bytes end in the forwarded stream must come from the forwarded offsets, or
    the spill's next bytes are repeated (placeholder shorter) or skipped (longer)."""
    from mcptap.known_secrets import known_secrets
    from mcptap.redact.argv import placeholder, scrub_argv

    argv = ["server", "--token", TOKEN]
    shown = scrub_argv(argv)
    cap = tmp_path / "cap.jsonl"
    w = CaptureWriter.open(str(cap))
    known = known_secrets(argv, shown, placeholder)
    assert known is not None
    w.line_filter = known.line
    rec = Recorder(w, "stdio", {"argv": shown}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.known = known
    echo = _line(1)                                                     # the server echoes its token
    rec.stdio_bytes(Direction.S2C, A)
    rec.stdio_bytes(Direction.S2C, echo)                                 # recorded, with the placeholder
    rec.writer.flush()
    assert TOKEN.encode() not in cap.read_bytes() and len(shown[2].encode()) != len(TOKEN)
    spill = SpillFile(str(tmp_path / "cap.jsonl.spill"))
    spill.append(1, 7, len(A), echo + B[:30])                           # recorded, then the kill: B only in the spill
    spill.append(1, 8, len(A) + len(echo) + 30, B[30:])
    out = CliRunner().invoke(mcptap, ["recover", str(cap), "--", *argv])
    assert out.exit_code == 0, out.output
    c = read_capture(str(cap))
    chunks = [r for r in c.records if r["type"] == "chunk"]
    assert b"".join(decode_bytes(r, "data") for r in chunks) == B       # every forwarded byte once
    assert not [r for r in c.records if r["type"] == "gap"]
    said = [r for r in c.records if r["type"] == "message" and r.get("original")]
    assert [r["original"] for r in said] == [{"offset": len(A), "bytes": len(echo)}]   # the resized message says so
    assert chunks[0]["offset"] == len(A) + len(echo) and "original" not in chunks[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_recover_refuses_a_fifo_or_device_at_once(tmp_path: Path) -> None:
    """A FIFO waited for a writer forever (its open blocks); it has no place to append to nor a
    spill file beside it: a usage error, as ``report``/``serve --extend`` refuse a pipe."""
    fifo = tmp_path / "cap.jsonl"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/null"):
        proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "recover", path], capture_output=True, timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert b"give it as a file, not a pipe, device or descriptor" in proc.stderr
