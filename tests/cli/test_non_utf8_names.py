"""A capture whose file name is not UTF-8 (bytes from an old archive, another
locale): every command that puts the path into text, JSON or HTML writes the
undecodable bytes as ``\\xff`` (``escape.escape_name``, escape_os's form: it
was U+FFFD, which lost them and made two names alike), strict UTF-8 JSON (SARIF:
the bytes percent-encoded), never a UnicodeEncodeError traceback; a name that
holds ``\\xff`` literally is shown ``\\\\xff``, told apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pty_run import run_on_pty
from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")


@pytest.fixture
def odd(tmp_path: Path) -> bytes:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    name = os.fsencode(tmp_path) + b"/n\xff\xfe.jsonl"
    os.rename(cap, name)
    return name


def cli(*args: bytes | str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, cwd=cwd, env=env, timeout=60)


def test_check_json(odd: bytes, tmp_path: Path) -> None:
    proc = cli("check", "--format", "json", odd, cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["captures"][0]["path"].endswith("n\\xff\\xfe.jsonl")


def test_check_sarif(odd: bytes, tmp_path: Path) -> None:
    proc = cli("check", "--format", "sarif", odd, cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    uri = json.loads(proc.stdout)["runs"][0]["artifacts"][0]["location"]["uri"]
    assert uri == "n%FF%FE.jsonl"


def test_report_html(odd: bytes, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = cli("report", odd, "-o", str(out), cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert "n\\xff\\xfe.jsonl" in out.read_text(encoding="utf-8")


def test_ls_json(odd: bytes, tmp_path: Path) -> None:
    proc = cli("ls", "--dir", str(tmp_path), "--format", "json", cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    paths = [orjson.loads(line)["path"] for line in proc.stdout.splitlines()]       # (strict JSON)
    assert any(p.endswith("n\\xff\\xfe.jsonl") for p in paths)


def test_ls_text_has_no_raw_undecodable_bytes(odd: bytes, tmp_path: Path) -> None:
    proc = cli("ls", "--dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc.stdout.decode("utf-8")          # valid UTF-8 on the terminal
    assert "n\\xff\\xfe.jsonl" in proc.stdout.decode()


def test_a_literal_backslash_escape_is_told_from_a_byte(tmp_path: Path) -> None:
    """Two captures, one named with the byte 0xff, one with the four characters
    ``\\xff``: ls (text and JSON), prune and check show two different names."""
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    byte, literal = os.fsencode(tmp_path) + b"/n\xff.jsonl", os.fsencode(tmp_path) + b"/n\\xff.jsonl"
    with open(byte, "wb") as fp:
        fp.write(cap.read_bytes())
    os.rename(cap, literal)
    text = cli("ls", "--dir", str(tmp_path), cwd=tmp_path).stdout.decode("utf-8")
    assert "n\\xff.jsonl" in text and "n\\\\xff.jsonl" in text, text
    paths = {orjson.loads(line)["path"].rsplit("/", 1)[1] for line in cli("ls", "--dir", str(tmp_path), "--format", "json",
                                                                          cwd=tmp_path).stdout.splitlines()}
    assert paths == {"n\\xff.jsonl", "n\\\\xff.jsonl"}
    checked = orjson.loads(cli("check", "--format", "json", byte, literal, cwd=tmp_path).stdout)
    assert [c["path"].rsplit("/", 1)[1] for c in checked["captures"]] == ["n\\xff.jsonl", "n\\\\xff.jsonl"]
    pruned = cli("prune", "--dir", str(tmp_path), "--keep", "0", "--dry-run", cwd=tmp_path)
    lines = pruned.stdout.decode("utf-8").splitlines()
    assert len(lines) == 2 and any("n\\xff.jsonl (" in x for x in lines) and any("n\\\\xff.jsonl (" in x for x in lines), lines


def on_terminal(*args: bytes | str, cwd: Path) -> tuple[int, bytes]:
    """Run mcptap with its standard output and error on a terminal (a pty):
    click.echo strips escape sequences only when writing elsewhere, so a raw
    ESC in a message is seen here as the user's terminal would get it."""
    import pty  # noqa: F401 - POSIX only, as the module

    env = {**os.environ, "LC_ALL": "C.UTF-8", "NO_COLOR": "1", "MCPTAP_PROGRESS_DELAY": "600"}
    return run_on_pty([sys.executable, "-m", "mcptap.cli.main", *args], env, stdout=True, cwd=cwd)


@pytest.mark.parametrize(("name", "shown"), [(b"n\xff", b"n\\xff"), (b"e\x1b[31mred", b"e\\x1b[31mred")], ids=["0xff", "esc"])
@pytest.mark.parametrize("argv", [
    ["report", "{cap}", "-o", "{name}.html"], ["report", "{bad}", "-o", "r.html"], ["report", "{cap}", "-o", "{name}/none/r.html"],
    ["scrub", "{cap}", "-o", "{name}-s.jsonl"], ["scrub", "{bad}", "-o", "s.jsonl"], ["scrub", "{cap}", "-o", "{name}/none/s.jsonl"],
    ["export", "-f", "messages", "{bad}", "-o", "e.jsonl"], ["export", "-f", "messages", "{cap}", "-o", "{name}/none/e.jsonl"],
    ["export", "-f", "har", "{cap}"], ["export", "-f", "messages", "{name}-missing.jsonl"],
    ["check", "--format", "json", "{name}-missing.jsonl"], ["check", "--format", "junit", "{name}-missing.jsonl"],
], ids=" ".join)
def test_messages_show_a_file_name_safely(tmp_path: Path, name: bytes, shown: bytes, argv: list[str]) -> None:
    """mcptap's own lines about a file: a byte that is not UTF-8 as ``\\xff``
    (it was ``\\udcff``, Python's surrogate escape, or an internal error when
    the line was JSON: check --format json), a control character as ``\\x1b``
    (report and scrub printed it raw: the rest of the line in red)."""
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    os.rename(cap, tmp_path / os.fsdecode(name + b".jsonl"))
    bad = tmp_path / os.fsdecode(name + b"-bad.jsonl")
    bad.write_bytes((tmp_path / os.fsdecode(name + b".jsonl")).read_bytes().replace(b'"seq":3,', b'"seq":"x",', 1))
    args = [a.encode().replace(b"{cap}", name + b".jsonl").replace(b"{bad}", bad.name.encode("utf-8", "surrogateescape"))
            .replace(b"{name}", name) for a in argv]
    status, out = on_terminal(*args, cwd=tmp_path)
    assert status in (0, 1, 2), out
    assert b"internal error" not in out and b"Traceback" not in out, out
    assert b"\x1b" not in out and b"udc" not in out, out
    out.decode("utf-8")                 # strictly: no raw byte of the name
    assert shown in out, out


SERVER = ("import sys\n"
          "for line in sys.stdin:\n"
          "    if '\"initialize\"' in line:\n"
          "        sys.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
          "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\\n'); sys.stdout.flush()\n")


def test_record_to_a_name_and_with_an_argument_that_are_not_utf8_keeps_the_header(tmp_path: Path) -> None:
    """``record -o $'n\\xff.jsonl' -- server $'\\xff'``: the header (its target
    argv and spill file name) and the spawn record used to be written as an
    "unencodable record" gap, so no reader could open the capture. Those
    bytes are now held as U+FFFD; the session and every reader work."""
    (tmp_path / "srv.py").write_text(SERVER)
    name = os.fsencode(tmp_path) + b"/n\xff.jsonl"
    hello = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
             b'"clientInfo":{"name":"c","version":"1"}}}\n')
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", name, "--", sys.executable, "srv.py", b"a\xffb"],
                       input=hello, capture_output=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode == 0 and b'"protocolVersion":"2025-06-18"' in p.stdout, p.stderr
    with open(name, "rb") as fp:
        recs = [json.loads(x) for x in fp]
    assert recs[0]["type"] == "header" and recs[0]["target"]["argv"][-1] == "a\ufffdb"
    assert recs[0]["spill"] == "n\ufffd.jsonl.spill"
    assert recs[1]["type"] == "process" and recs[1]["argv"][-1] == "a\ufffdb"
    assert not any(r["type"] == "gap" for r in recs) and recs[-1]["type"] == "end"
    shown = cli("show", name, cwd=tmp_path)
    assert shown.returncode == 0 and b"initialize" in shown.stdout, shown.stderr


def test_diff_names_the_files_as_show_does(odd: bytes, tmp_path: Path) -> None:
    # diff --format json wrote "a": "…n\udcff\udcfe.jsonl" (a lone surrogate, not strict JSON) and its
    # text header showed \udcff where show, check and replay show \xff
    other = tmp_path / "cap2.jsonl"
    other.write_bytes(open(odd, "rb").read())
    proc = cli("diff", odd, str(other), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["a"].endswith("n\\xff\\xfe.jsonl")
    text = cli("diff", odd, str(other), cwd=tmp_path)
    assert text.returncode == 0 and text.stdout.decode().splitlines()[0].endswith("n\\xff\\xfe.jsonl"), text.stdout
    shown = cli("show", odd, cwd=tmp_path)
    assert "n\\xff\\xfe.jsonl" in shown.stdout.decode().splitlines()[0]


def test_replay_json_names_the_new_capture_strictly(odd: bytes, tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text("import json, sys\n"
                      "for line in sys.stdin:\n"
                      "    m = json.loads(line)\n"
                      "    if 'id' in m and 'method' in m:\n"
                      "        r = {'protocolVersion': m['params']['protocolVersion'], 'capabilities': {}, 'serverInfo': {'name': 's', 'version': '1'}}"
                      " if m['method'] == 'initialize' else {}\n"
                      "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n")
    new = os.fsencode(tmp_path) + b"/new\xfe.jsonl"
    proc = cli("replay", odd, "--format", "json", "-o", new, "--", sys.executable, str(server), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert orjson.loads(proc.stdout)["capture"].endswith("new\\xfe.jsonl")
