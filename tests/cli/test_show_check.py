"""`mcptap show` and `mcptap check` as a user runs them: exit statuses, formats,
colour, the default capture, --follow on a growing file, golden outputs for
the example captures, and real SDK peers recorded by `mcptap record`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.cli.output import use_color
from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "e2e"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(mcptap, list(args), env=env, catch_exceptions=False)


def faulty(tmp_path: Path) -> Path:
    return record(tmp_path / "faulty.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(99)), s2c(res(2)),
                                                            s2c(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\r\n')])


def info_only(tmp_path: Path) -> Path:
    return record(tmp_path / "info.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


# -- check ---------------------------------------------------------------------------

@pytest.mark.parametrize("fail_on, faulty_status, info_status", [
    ("error", 1, 0), ("warn", 1, 0), ("info", 1, 1), ("never", 0, 0)])
def test_check_exit_status(tmp_path: Path, fail_on: str, faulty_status: int, info_status: int) -> None:
    assert run("check", "--fail-on", fail_on, str(faulty(tmp_path))).exit_code == faulty_status
    assert run("check", "--fail-on", fail_on, str(info_only(tmp_path))).exit_code == info_status


def test_check_default_fail_on_is_error(tmp_path: Path) -> None:
    warn_only = record(tmp_path / "w.jsonl", handshake() + [
        s2c(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\r\n')])
    assert run("check", str(warn_only)).exit_code == 0
    assert run("check", str(faulty(tmp_path))).exit_code == 1


def test_check_unreadable_capture_is_exit_2_with_the_reason_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"header","format":"mcptap-capture","version":99}\n')
    r = run("check", str(bad), str(info_only(tmp_path)))
    assert r.exit_code == 2
    assert "mcptap: " in r.stderr and "version 99 is not supported" in r.stderr
    assert "info.jsonl" in r.stdout                      # the readable capture is still reported


def test_check_text(tmp_path: Path) -> None:
    r = run("check", str(faulty(tmp_path)))
    assert "error jsonrpc.unmatched_response ×1  first #5 at 0.005s" in r.stdout
    assert "warn  framing.crlf ×1" in r.stdout
    assert r.stdout.rstrip().endswith("FAIL (1 finding(s) at or above error)")
    assert "\x1b[" not in r.stdout                       # not a terminal: no colour


def test_check_formats(tmp_path: Path) -> None:
    path = str(faulty(tmp_path))
    j = json.loads(run("check", "--format", "json", path).stdout)
    assert j["status"] == 1 and j["captures"][0]["codes"][0]["code"] == "jsonrpc.unmatched_response"
    log = json.loads(run("check", "--format", "sarif", path).stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"jsonrpc.unmatched_response", "framing.crlf"}
    root = ET.fromstring(run("check", "--format", "junit", path).stdout)
    assert root.get("failures") == "1"
    out = tmp_path / "report.sarif"
    r = run("check", "--format", "sarif", "-o", str(out), path)
    assert r.exit_code == 1 and r.stdout == "" and json.loads(out.read_text())["version"] == "2.1.0"


# -- show ----------------------------------------------------------------------------

def test_show_text_json_mermaid(tmp_path: Path) -> None:
    path = str(faulty(tmp_path))
    text = run("show", path)
    assert text.exit_code == 0 and "jsonrpc.unmatched_response" in text.stdout and "Summary" in text.stdout
    lines = [json.loads(x) for x in run("show", "--format", "json", path).stdout.splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "summary" and lines[-2]["type"] == "end"
    mmd = run("show", "--format", "mermaid", path).stdout
    assert mmd.startswith("sequenceDiagram\n") and "S-->>C: 6 ping id=2" in mmd


def test_show_filter_and_bad_filter(tmp_path: Path) -> None:
    path = str(faulty(tmp_path))
    r = run("show", "--oneline", "--no-summary", "--filter", "~sev error", path)
    body = r.stdout.splitlines()[2:]
    assert len(body) == 1 and "id=99" in body[0]
    bad = run("show", "--filter", "~req & (~m x", path)
    assert bad.exit_code == 2 and "column 13" in bad.stderr and bad.stdout == ""
    # the caret display of docs/filters.md: three real lines, no escaped "\\n"
    lines = bad.stderr.splitlines()
    assert "\\n" not in bad.stderr and lines[1] == "  ~req & (~m x" and lines[2].index("^") - 2 == 12
    # control characters in the expression still never reach the terminal raw
    esc = run("show", "--filter", "~m \x1b[2J &", path)
    assert esc.exit_code == 2 and "\x1b" not in esc.stderr and "\\x1b[2J" in esc.stderr


def test_show_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(faulty(tmp_path))
    assert "\x1b[" in run("show", "--color", path).stdout
    assert "\x1b[" not in run("show", path).stdout
    assert "\x1b[" not in run("show", "--no-color", path).stdout
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(None) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(None) is False
    assert use_color(True) is True and use_color(False) is False


def test_show_without_argument_uses_the_newest_capture(tmp_path: Path) -> None:
    old = faulty(tmp_path)
    new = info_only(tmp_path)
    os.utime(old, (time.time() - 100, time.time() - 100))
    r = run("show", "--oneline", env={"MCPTAP_DIR": str(tmp_path)})
    assert r.exit_code == 0 and r.stdout.splitlines()[0].startswith(str(new))
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run("show", env={"MCPTAP_DIR": str(empty)})
    assert r.exit_code == 2 and "none found in" in r.stderr


def test_show_missing_capture(tmp_path: Path) -> None:
    r = run("show", str(tmp_path / "nope.jsonl"))
    assert r.exit_code == 2 and "cannot open capture" in r.stderr


def test_show_follow_a_growing_capture(tmp_path: Path) -> None:
    """A writer appends records (once mid-line) while `show --follow` polls;
    it prints each record as it completes and stops after the end record."""
    whole = faulty(tmp_path).read_bytes()
    live = tmp_path / "live.jsonl"
    lines = whole.splitlines(keepends=True)
    live.write_bytes(lines[0] + lines[1])
    writer = open(live, "ab")           # held from the start, as a tap does (a capture nobody writes ends the follow)
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "show", "--follow", "--poll", "0.02", "--oneline", str(live)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, bufsize=0)
    try:
        # unbuffered: readline() takes exactly one line, so communicate() below gets all the rest
        # (a buffered reader would keep lines communicate() never sees)
        first = proc.stdout.readline()                     # header line appears before the capture is complete
        assert str(live).encode() in first
        with writer as fp:
            for ln in lines[2:]:
                half = len(ln) // 2
                fp.write(ln[:half])
                fp.flush()
                time.sleep(0.03)                           # let the poller see a partial line
                fp.write(ln[half:])
                fp.flush()
        # read() keeps what readline() buffered past the first line (communicate() would drop it)
        out = proc.stdout.read()
        errout = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
        writer.close()
    assert proc.returncode == 0, errout
    text = (first + out).decode()
    assert "jsonrpc.unmatched_response" in text and "Summary" in text
    seqs = [int(x[:6]) for x in text.splitlines() if x[:6].strip().isdigit()]
    assert seqs == list(range(1, len(lines) - 1))         # every record except header and end, in order, once


# -- golden outputs of the example captures ------------------------------------------

def _make_captures():
    spec = importlib.util.spec_from_file_location("make_captures", ROOT / "scripts" / "make_captures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKE = _make_captures()


@pytest.mark.parametrize("name", sorted(MAKE.GOLDENS))
def test_golden_output(name: str) -> None:
    want = (ROOT / "tests" / "data" / "golden" / name).read_text()
    got = MAKE.run_cli(MAKE.GOLDENS[name])
    assert got == want, f"{name} changed: if intended, run `.venv/bin/python scripts/make_captures.py --golden` and review the diff"


def _traffic(path: Path) -> list[tuple]:
    """What a capture recorded, without the annotations (those follow the rules of the day)."""
    from mcptap.capture.format import message_from_record

    out = []
    for line in path.read_bytes().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            out.append(("partial", line))
            continue
        if rec["type"] == "message":
            out.append((rec["seq"], rec["t_us"], rec["dir"], message_from_record(rec).raw))
        elif rec["type"] in ("stderr", "eof", "process"):
            out.append((rec["seq"], rec["t_us"], rec["type"], rec.get("data"), rec.get("dir"), rec.get("code")))
        elif rec["type"] == "header":
            out.append((rec["started"], rec["target"]))
    return out


def test_example_captures_are_reproducible(tmp_path: Path) -> None:
    """scripts/make_captures.py regenerates the same traffic (run it to refresh
    the stored annotations after a rule change)."""
    for name, make in MAKE.CAPTURE_FILES.items():
        make(tmp_path / name)
        assert _traffic(tmp_path / name) == _traffic(ROOT / "captures" / name), name


def test_captures_readme_describes_every_example() -> None:
    readme = (ROOT / "captures" / "README.md").read_text()
    for name in MAKE.CAPTURE_FILES:
        assert f"`{name}`" in readme


# -- real peers ----------------------------------------------------------------------

def tap(capture: Path, server: Path) -> list[str]:
    return ["-m", "mcptap.cli.main", "record", "--quiet", "-o", str(capture), "--", sys.executable, str(server)]


@pytest.mark.e2e
async def test_real_sdk_session_checks_clean_and_shows_its_tools(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cap = tmp_path / "sdk.jsonl"
    async with Client(StdioServerParameters(command=sys.executable, args=tap(cap, E2E / "sdk_server.py")), mode="legacy") as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("slow", {"steps": 2}, progress_callback=lambda p, t, m: None)
    r = run("check", "--fail-on", "warn", str(cap))
    assert r.exit_code == 0, r.stdout
    shown = run("show", "--oneline", "--filter", "~tool slow", str(cap)).stdout
    assert "tools/call slow" in shown and "notifications/progress" in shown
    assert "slow " in shown[shown.index("Summary"):]


@pytest.mark.e2e
async def test_real_misbehaving_server_fails_check(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cap = tmp_path / "bad.jsonl"
    async with Client(StdioServerParameters(command=sys.executable, args=tap(cap, E2E / "bad_server.py")), mode="legacy") as client:
        await client.call_tool("echo", {"text": "hi"})
    r = run("check", "--format", "json", str(cap))
    assert r.exit_code == 1
    codes = {c["code"] for c in json.loads(r.stdout)["captures"][0]["codes"]}
    assert {"framing.non_jsonrpc_line", "lifecycle.server_request_before_initialized", "jsonrpc.duplicate_id_in_flight"} <= codes


@pytest.mark.e2e
def test_spawn_failure_is_recorded_and_checked(tmp_path: Path) -> None:
    cap = tmp_path / "spawn.jsonl"
    subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--quiet", "-o", str(cap), "--", str(tmp_path / "no-such-server")],
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    r = run("check", "--format", "json", str(cap))
    codes = {c["code"]: c for c in json.loads(r.stdout)["captures"][0]["codes"]}
    assert codes["process.spawn_failed"]["severity"] == "error" and r.exit_code == 1


def test_show_without_a_capture_skips_captures_with_no_traffic(tmp_path: Path) -> None:
    """A command that failed before any traffic leaves a capture (the record of
    why); `show` without an argument skips it for the newest one with traffic."""
    good = faulty(tmp_path)
    os.utime(good, (time.time() - 100, time.time() - 100))
    spawn = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(tmp_path / "failed.jsonl"), "--",
                            str(tmp_path / "no-such-server")], capture_output=True, timeout=60)
    assert spawn.returncode == 127 and (tmp_path / "failed.jsonl").exists()
    r = run("show", "--oneline", env={"MCPTAP_DIR": str(tmp_path)})
    assert r.exit_code == 0 and r.stdout.splitlines()[0].startswith(str(good))
    assert "skipped 1 newer capture(s) with no traffic" in r.stderr and "failed.jsonl" in r.stderr
    good.unlink()
    r = run("show", env={"MCPTAP_DIR": str(tmp_path)})
    assert r.exit_code == 2 and "no capture with traffic" in r.stderr and "failed.jsonl" in r.stderr


def test_check_says_a_read_error_once(tmp_path: Path) -> None:
    gone = tmp_path / "gone.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", str(gone)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert (p.stdout + p.stderr).count("No such file or directory") == 1, p.stdout + p.stderr
    assert p.stderr.startswith("mcptap: cannot open capture") and "cannot check: unreadable" in p.stdout
    out = tmp_path / "report.txt"                      # a report file gets the reason (stderr has it too)
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "-o", str(out), str(gone)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "No such file or directory" in out.read_text()


def test_an_end_record_with_a_null_seq(tmp_path: Path) -> None:
    """The end record's seq is optional too: re-annotation took it as a number
    (``None - 1``: "internal error: TypeError" in check, show --full, report)."""
    path = info_only(tmp_path)
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    assert recs[-1]["type"] == "end"
    recs[-1]["seq"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    for args in (["check", str(path)], ["check", "--full", str(path)], ["show", "--full", str(path)],
                 ["report", str(path), "-o", str(tmp_path / "r.html")]):
        r = run(*args)          # (an exception would fail the test: catch_exceptions=False)
        assert r.exit_code in (0, 1), (args, r.stderr)
    assert "(complete)" in run("check", str(path)).stdout          # its end record is still the end


def test_show_a_hand_edited_record_with_a_null_seq(tmp_path: Path) -> None:
    """`"seq": null` passes the reader's checks (seq is optional); show used to
    crash formatting it (TypeError traceback)."""
    path = info_only(tmp_path)
    lines = path.read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    victim = next(i for i, r in enumerate(recs) if r["type"] == "process")
    recs[victim]["seq"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    for args in (["show", str(path)], ["show", "--oneline", "--full", str(path)]):
        r = run(*args)
        assert r.exit_code == 0, r.stderr
        assert any(line.startswith("        ") and "process" in line for line in r.stdout.splitlines())
