"""A finding quotes peer text cut short (``jsonrpc.invalid_error_object``'s error object,
``framing.non_jsonrpc_line``'s preview, a schema error, an SSE event's data): the cut used to
fall inside a secret, and the piece left (38 characters of a 40-character token) matched no
rule, so it stayed in clear after ``record --redact``, ``scrub`` and ``report``. A cut now
never ends inside a word (``protocol.excerpt``), and the beginning of a known secret right
before the cut marker ``…`` is replaced (``redact.repeat_match``). Real ``mcptap record`` of a
tiny stdio server (found by a breaker helper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.redact.repeat_match import find

TOKEN = "QWERTYUIOPasdfghjkl1234567890zxcvbnmQWER"
SPACED = "kq7 zorbly wimbat flunge quorpix ninety3"

#: answers every request with an error object lacking its code, quoting a secret: the
#: token given after ``--token`` (argv) or the ``password`` argument of the request
BAD_ERROR = """
import sys, json
tok = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "s", "version": "1"}}}
    else:
        out = {"error": {"message": "bad tok " + (tok or m["params"]["arguments"]["password"])}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], **out}) + "\\n")
    sys.stdout.flush()
"""

#: writes a log line on stdout quoting the request's password after 63 characters
STDOUT_LOG = """
import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "tools/call":
        pw = m["params"]["arguments"]["password"]
        sys.stdout.write("DEBUG connecting to the database server on host db01 now using " + pw + " ok\\n")
        r = {"content": [{"type": "text", "text": "ok"}]}
    else:
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n")
    sys.stdout.flush()
"""


def _client(password: str) -> bytes:
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "login", "arguments": {"user": "bob", "password": password}}}]
    return b"".join(json.dumps(m).encode() + b"\n" for m in msgs)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "MCPTAP_REDACT_KEY": "00112233445566778899aabbccddeeff", "MCPTAP_CONFIG_DIR": str(tmp_path / "cfg")}


def _mcptap(tmp_path: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcptap", *args], input=stdin, capture_output=True,
                          env=_env(tmp_path), timeout=60, check=False)


def _record(tmp_path: Path, server: str, password: str, *extra: str, redact: bool) -> Path:
    srv = tmp_path / "srv.py"
    srv.write_text(server)
    cap = tmp_path / "cap.jsonl"
    out = _mcptap(tmp_path, "record", *(["--redact"] if redact else []), "-o", str(cap), "--",
                  sys.executable, str(srv), *extra, stdin=_client(password))
    assert out.returncode == 0, out.stderr
    return cap


def _no_piece(text: str, secret: str) -> None:
    for i in range(len(secret) - 7):
        assert secret[i:i + 8] not in text, f"{secret[i:i + 8]!r} of the secret in clear"


def test_record_redact_argv_token_quoted_in_a_bad_error_object(tmp_path: Path) -> None:
    cap = _record(tmp_path, BAD_ERROR, "x", "--token", TOKEN, redact=True)
    text = cap.read_text()
    assert "jsonrpc.invalid_error_object" in text
    _no_piece(text, TOKEN)


@pytest.mark.parametrize("password", [TOKEN, SPACED])
def test_scrub_and_report_of_a_password_quoted_in_a_bad_error_object(tmp_path: Path, password: str) -> None:
    cap = _record(tmp_path, BAD_ERROR, password, redact=False)
    assert "jsonrpc.invalid_error_object" in cap.read_text()
    out = tmp_path / "out.jsonl"
    assert _mcptap(tmp_path, "scrub", str(cap), "-o", str(out)).returncode == 0
    _no_piece(out.read_text(), password)
    html = tmp_path / "r.html"
    assert _mcptap(tmp_path, "report", str(cap), "-o", str(html)).returncode == 0
    _no_piece(html.read_text(), password)


@pytest.mark.parametrize("password", ["Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3", SPACED])
def test_record_redact_password_in_a_stdout_line_preview(tmp_path: Path, password: str) -> None:
    cap = _record(tmp_path, STDOUT_LOG, password, redact=True)
    text = cap.read_text()
    assert "framing.non_jsonrpc_line" in text
    _no_piece(text, password)
    assert "now using " in text          # the preview keeps the text before the secret


def test_a_cut_never_ends_inside_a_word() -> None:
    from mcptap.protocol.excerpt import cut
    assert cut("bad tok QWERTYUIOP", 12) == "bad tok …"
    assert cut("{'message': 'x'}", 60) == "{'message': 'x'}"
    assert cut("a b c", 3) == "a …"                     # a cut at a break stays where it is
    assert cut("abcdef", 4) == "…"                      # one word: nothing of it
    ph = "«redacted:hmac:0123456789ab»"
    assert cut("k=" + ph + " more", 10) == "k=" + ph + "…"    # never inside a placeholder


def test_a_known_secrets_beginning_at_a_cut_marker() -> None:
    assert find("using kq7 zorbly …", [SPACED]) == [(6, 17, SPACED)]
    assert find("using kq7 …", [SPACED]) == [(6, 10, SPACED)]
    assert find("using kq7…", [SPACED]) == []                 # under MIN_REPEATED characters
    assert find("using xkq7 zorbly …", [SPACED]) == []          # a piece of another word (under WORDLESS)
    assert find("using kq7 zorbly and more", [SPACED]) == []     # no cut there


@pytest.mark.parametrize("text,value", [("q=%3Dsk_abcdefgh%20", "sk_abcdefgh"), ("u%3AHunter2Pass%40x", "Hunter2Pass"),
                                        ("a%2fHunter2Pass", "Hunter2Pass")])
def test_a_percent_escape_before_a_short_secret_is_no_letter(text: str, value: str) -> None:
    assert [v for _, _, v in find(text, [value])] == [value]
    assert find("x" + text.replace("%", ""), [value]) == []     # a real letter before it still is


def test_an_sse_events_quote_drops_a_word_it_cuts() -> None:
    from mcptap.protocol.sse_rules import data_findings
    data = '{"note": "x", "k": "' + TOKEN + '"}'
    (f,) = data_findings(json.loads(data), data[:40])
    assert f.code == "sse.data_not_jsonrpc" and '"k": "…' in f.message
    _no_piece(f.message, TOKEN)
