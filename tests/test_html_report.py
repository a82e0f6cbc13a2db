"""``mcptap report``: one self-contained HTML file (mcptap/show/html.py), checked
as a file and rendered in real headless Chromium (Debian package ``chromium``;
``.ci/run`` installs it; without it the browser tests skip)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.filters.operators import operator_table
from mcptap.model import Direction
from mcptap.recorder import Recorder
from scripted import c2s, handshake, note, record, req, res, s2c
from test_scrub import ALL, secret_session

ROOT = Path(__file__).resolve().parents[1]
JS = (ROOT / "mcptap" / "show" / "assets" / "report.js").read_text()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian package 'chromium'; .ci/run installs it)")


def run(*args: str):
    return CliRunner().invoke(mcptap, list(args), catch_exceptions=False)


def dom(html: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran (chromium --dump-dom)."""
    url = html.resolve().as_uri() + (("#" + fragment) if fragment else "")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-dev-shm-usage", "--no-first-run", "--virtual-time-budget=5000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def dump(page: str) -> dict:
    m = re.search(r'<pre id="dump">(.*?)</pre>', page, re.S)
    assert m, "the page did not run its script"
    return json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&"))


def test_report_is_one_file_without_external_resources_or_secrets(tmp_path) -> None:
    src = secret_session(tmp_path / "s.jsonl")
    r = run("report", str(src), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output
    html = (tmp_path / "r.html").read_text()
    assert not any(s in html or json.dumps(s)[1:-1] in html for s in ALL)
    assert "default-src 'none'" in html
    for bad in (r"<script[^>]+src=", r"<link\b", r"<img\b", r"@import", r"url\((?!#)", r"\bfetch\(", "XMLHttpRequest", "WebSocket",
                r"<iframe", r"https?://(?!www\.w3\.org/2000/svg)"):
        assert not re.search(bad, html), bad
    assert "</script>" not in html.split('id="mcptap-data">', 1)[1].split("</script>", 1)[0]
    raw = run("report", str(src), "-o", str(tmp_path / "raw.html"), "--no-scrub")
    assert raw.exit_code == 0 and "NOT scrubbed" in raw.output and ALL[0] in (tmp_path / "raw.html").read_text()
    # a capture scrubbed already is not said to be "NOT scrubbed"
    assert run("scrub", str(src), "-o", str(tmp_path / "scrubbed.jsonl")).exit_code == 0
    again = run("report", str(tmp_path / "scrubbed.jsonl"), "-o", str(tmp_path / "again.html"), "--no-scrub")
    assert again.exit_code == 0 and "already scrubbed" in again.output and "NOT" not in again.output, again.output


def test_every_filter_operator_has_a_browser_implementation() -> None:
    table = operator_table()
    for op in table["unary"]:
        assert f'"{op}":' in JS, f"report.js has no implementation of {op}"
    assert set(table["nullary"]) == set(table["kinds"]) | set(table["dirs"])


def test_payload_cannot_break_out_of_the_data_script(tmp_path) -> None:
    evil = "</script><script>document.title='pwned'</script><!--"
    src = record(tmp_path / "e.jsonl", handshake() + [c2s(req(2, "tools/call", {"name": evil, "arguments": {}})), s2c(res(2))])
    run("report", str(src), "-o", str(tmp_path / "e.html"))
    html = (tmp_path / "e.html").read_text()
    assert evil not in html and html.count("</script>") == 2


SCENARIO = handshake() + [
    c2s(req(2, "tools/list")), s2c(res(2, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})),
    c2s(req(3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 7}})),
    s2c(note("notifications/progress", {"progressToken": 7, "progress": 1, "total": 2})),
    s2c(res(3, {"content": [{"type": "text", "text": "hi"}]})),
    c2s(req("x", "ping")), s2c(res(99)), s2c(res("x")),
    c2s(req(4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2.5}})),
    s2c(b'{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"boom"}}\r\n'),
    ("err", b"server log line with Boom\n"),
]
EXPRS = ["~req", "~resp", "~err", "~notif", "~c2s & ~req", "~s2c", "~m tools/", "~m ^tools/call$", "~tool echo", "~tool e*",
         "~id 3", '~id x', "~phase operating", "~f jsonrpc", "~f 'framing.*'", "~sev warn", "~sev error", "~lat >=0ms", "~lat <1us",
         "~t boom", "boom", "~j params.name=echo", "~j params.arguments.b>2", "~j error.code=-32000", "~j 'result.content[*].type=text'",
         "~j params._meta.progressToken", "~j id!=3", "~j params.name~=^ec", "!(~m ^notifications/)", "~req | ~err", "(~c2s) ~m tools",
         "~session *", "~j result.tools[0].name=echo", "~tool e-*", "~session a-b?", "~f 'jsonrpc.unmatched_[a-z]*'", "~tool [!a]*", "~m 'tools\\-?list'",
         "~j params.name~=^e\\-?c", '~j "params.name=echo"', "~j params.name='echo'"]


@needs_chromium
def test_browser_renders_methods_findings_and_filters_like_show(tmp_path) -> None:
    src = record(tmp_path / "c.jsonl", SCENARIO)
    assert run("report", str(src), "-o", str(tmp_path / "c.html")).exit_code == 0
    frag = "dump&filters=" + urllib.parse.quote(json.dumps(EXPRS + ["~nope", "~lat banana", "(~req"]))
    page = dom(tmp_path / "c.html", frag)
    assert 'data-ready="' in page and "tools/call echo" in page and "tools/list" in page
    for code in ("jsonrpc.unmatched_response", "framing.crlf"):
        assert f'data-code="{code}"' in page
    assert "Client" in page and "<svg" in page and "session" in page
    got = dump(page)["filters"]
    for expr in EXPRS:
        p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "show", str(src), "--format", "json", "--filter", expr],
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 2:       # show rejects it: so does the browser, at the same column
            assert isinstance(got[expr], dict) and f"column {got[expr]['col']}:" in p.stderr, (expr, got[expr], p.stderr)
            continue
        want = [r["seq"] for r in map(json.loads, p.stdout.splitlines()) if r.get("type") not in ("header", "end", "summary")]
        assert got[expr] == want, expr
    assert "unknown filter" in got["~nope"]["error"] and "latency must look like" in got["~lat banana"]["error"]
    assert got["(~req"]["col"] == 6


@needs_chromium
def test_browser_filter_box_and_lazy_rendering_on_a_long_capture(tmp_path) -> None:
    steps = handshake()
    for i in range(2, 5002):
        steps += [c2s(req(i, "tools/call", {"name": "echo" if i % 2 else "add", "arguments": {"n": i}})), s2c(res(i))]
    src = record(tmp_path / "long.jsonl", steps)
    assert run("report", str(src), "-o", str(tmp_path / "long.html")).exit_code == 0
    page = dom(tmp_path / "long.html", "dump&filter=" + urllib.parse.quote("~tool echo & ~resp"))
    assert 'data-shown="2500"' in page and len(dump(page)["shown"]) == 2500
    assert page.count('class="row ') < 120            # only the rows on screen exist
    page = dom(tmp_path / "long.html", "dump&filter=" + urllib.parse.quote("~lat banana"))
    assert "latency must look like" in page and 'data-filter-error="' in page


@needs_chromium
def test_browser_scrubbed_report_of_secrets(tmp_path) -> None:
    src = secret_session(tmp_path / "s.jsonl")
    run("report", str(src), "-o", str(tmp_path / "s.html"))
    page = dom(tmp_path / "s.html", "dump")
    assert "tools/call deploy" in page and "framing.non_jsonrpc_line" in page and "scrubbed" in page
    assert not any(s in page for s in ALL)


def _embedded(html: str) -> dict:
    data = html.split('id="mcptap-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(data)


def test_the_streamed_report_carries_what_report_data_gathers(tmp_path) -> None:
    """write_report streams rows, then the spooled payloads, then the rest:
    the same data as the in-memory report_data (payloads with "<" and
    U+2028, findings)."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.check.reannotated import Reannotated
    from mcptap.show.html import report_data

    steps = SCENARIO + [c2s(req(5, "tools/call", {"name": "</script>\u2028<!--", "arguments": {}})), s2c(res(5))]
    src = record(tmp_path / "c.jsonl", steps)
    assert run("report", str(src), "-o", str(tmp_path / "c.html"), "--no-scrub").exit_code == 0
    html = (tmp_path / "c.html").read_text()
    assert "\u2028" not in html and html.count("</script>") == 2
    stream = CaptureStream(str(src))
    want = report_data(stream.header, Reannotated(stream.header, iter(stream), str(src), lambda: stream.truncated), str(src))
    got = _embedded(html)
    assert got == json.loads(json.dumps(want))
    assert len(got["rows"]) == len(got["payloads"]) > 10 and got["findings"]["warn"]


def test_report_to_standard_output(tmp_path) -> None:
    src = record(tmp_path / "c.jsonl", SCENARIO)
    r = CliRunner().invoke(mcptap, ["report", str(src), "-o", "-"], catch_exceptions=False)
    assert r.exit_code == 0
    assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    assert len(_embedded(r.stdout)["rows"]) > 10


def test_report_into_a_fifo_and_through_a_symlink(tmp_path) -> None:
    """A FIFO (or device) is written in place, never replaced by a regular
    file; through a symlink the target is replaced and the link stays."""
    import os
    import stat
    import threading

    src = record(tmp_path / "c.jsonl", SCENARIO)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert run("report", str(src), "-o", str(fifo)).exit_code == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and got[0].rstrip().endswith(b"</html>")
    target = tmp_path / "target.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert run("report", str(src), "-o", str(link)).exit_code == 0
    assert link.is_symlink() and target.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "fifo", "link.html", "target.html"]


def _stop_read(how: str) -> None:
    import os
    import signal

    from mcptap.errors import CaptureReadError

    if how == "read error":
        raise CaptureReadError("disk gone midway")
    os.kill(os.getpid(), signal.SIGTERM)        # timeout, a closed terminal (SIGHUP): as Ctrl-C


@pytest.mark.parametrize("how", ["read error", "SIGTERM"])
def test_a_report_stopped_midway_leaves_the_old_output_and_no_temporary_file(tmp_path, monkeypatch, how) -> None:
    import signal

    from mcptap.show import html as html_mod

    src = record(tmp_path / "c.jsonl", SCENARIO)
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    out.write_text("the report of yesterday")
    real = html_mod._Report.row
    calls = {"n": 0}

    def stopping(self, rec):
        calls["n"] += 1
        if calls["n"] == 5:
            _stop_read(how)
        return real(self, rec)

    monkeypatch.setattr(html_mod._Report, "row", stopping)
    r = CliRunner().invoke(mcptap, ["report", str(src), "-o", str(out)])
    assert r.exit_code != 0
    if how == "read error":
        assert r.exit_code == 2 and "disk gone midway" in r.output
    assert out.read_text() == "the report of yesterday"
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL         # handlers restored


@needs_chromium
def test_the_payload_pane_keeps_numbers_as_the_peer_sent_them(tmp_path) -> None:
    """The pane pretty-printed through JSON.parse: an id beyond 2^53 showed as
    18446744073709552000 and 1e400 as null, while the row said the truth
    (found by a breaker helper). #seq=N opens a message."""
    raw = (b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping","params":{"big":12345678901234567890123,'
           b'"e":1e400,"s":"a\\u00e9\\"b","list":[],"o":{},"n":[1,{"k":null}]}}\n')
    src = tmp_path / "big.jsonl"
    rec = Recorder(CaptureWriter.open(str(src)), "stdio", {"argv": ["x"]}, clock=lambda: 1000, started="2026-01-01T00:00:00.000000Z")
    rec.stdio_bytes(Direction.C2S, raw)
    rec.close()
    assert run("report", str(src), "-o", str(tmp_path / "big.html"), "--no-scrub").exit_code == 0
    got = dump(dom(tmp_path / "big.html", "seq=1&dump"))["payload"]
    assert got == json.dumps(json.loads(raw), indent=2).replace("Infinity", "1e400")
    assert '"id": 18446744073709551617' in got and '"big": 12345678901234567890123' in got and '"e": 1e400' in got


@needs_chromium
def test_a_scrubbed_report_gives_the_bytes_the_tap_forwarded(tmp_path) -> None:
    """Placeholders are longer than the secrets they replace: the traffic line
    gave the scrubbed bytes as the traffic (found by a breaker helper)."""
    src = secret_session(tmp_path / "s.jsonl")
    end = json.loads(src.read_text().splitlines()[-1])
    assert run("report", str(src), "-o", str(tmp_path / "r.html")).exit_code == 0
    page = dom(tmp_path / "r.html")
    sent = re.search(r"c2s (\d+) messages, (\d+) bytes(?: \((\d+) as scrubbed\))?", page)
    assert sent is not None and int(sent.group(2)) == end["c2s"]["bytes"], sent and sent.group(0)
    assert sent.group(3) is not None and int(sent.group(3)) != end["c2s"]["bytes"]


def test_a_report_of_standard_input_needs_an_output_name(tmp_path, monkeypatch) -> None:
    """``report -`` once wrote ./report.html silently (replacing the report of
    another capture); stdin has no name to derive one from, so -o is required
    (as for scrub), and nothing is read or written without it."""
    src = record(tmp_path / "c.jsonl", SCENARIO)
    work = tmp_path / "work"
    work.mkdir()
    (work / "report.html").write_text("the report of another capture")
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "report", "-"], cwd=work, input=src.read_bytes(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "mcptap: report: " in err and "give -o FILE.html" in err, err
    assert sorted(p.name for p in work.iterdir()) == ["report.html"]
    assert (work / "report.html").read_text() == "the report of another capture"
    monkeypatch.chdir(work)
    named = CliRunner().invoke(mcptap, ["report", "-", "-o", "r.html"], input=src.read_bytes())
    assert named.exit_code == 0, named.output
    assert (work / "r.html").read_text().startswith("<!DOCTYPE html>")
    piped = CliRunner().invoke(mcptap, ["report", "-", "-o", "-"], input=src.read_bytes())
    assert piped.exit_code == 0 and piped.output.startswith("<!DOCTYPE html>")


def test_a_report_of_a_pipe_or_descriptor_needs_an_output_name(tmp_path) -> None:
    """``report <(cat cap.jsonl)`` wrote ``63.html`` (the name of /dev/fd/63): a pipe, FIFO or
    descriptor has no name to derive the report's from either, so -o is required as for ``-``."""
    import os

    src = record(tmp_path / "c.jsonl", SCENARIO)
    work = tmp_path / "work"
    work.mkdir()
    fifo = work / "cap.fifo"
    os.mkfifo(fifo)
    r, w = os.pipe()
    try:
        for path, fds in ((f"/dev/fd/{r}", (r,)), (str(fifo), ())):
            proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "report", path], cwd=work, capture_output=True,
                                  timeout=60, pass_fds=fds, stdin=subprocess.DEVNULL)
            err = proc.stderr.decode()
            assert proc.returncode == 2 and proc.stdout == b"", err
            assert err.count("\n") == 1 and "(a pipe or descriptor)" in err and "give -o FILE.html" in err, err
    finally:
        os.close(r)
        os.close(w)
    assert sorted(p.name for p in work.iterdir()) == ["cap.fifo"]
    assert subprocess.run([sys.executable, "-m", "mcptap.cli.main", "report", str(src)], cwd=work, capture_output=True,
                          timeout=60).returncode == 0
    assert (work / "c.html").exists()          # a regular file still names its report
