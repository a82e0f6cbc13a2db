"""Response fields that name URLs on the upstream's origin are pointed at the
tap, as ``Location`` is (relay/http/rewrite.py): ``Content-Location``,
``Refresh`` (a browser's timed redirect) and ``Link`` (RFC 8288). Only URLs on
the upstream's origin change; every other value, and every other part of a
``Refresh`` or ``Link`` value, passes as received. Each change is an
``auth_rewrite`` record with credentials as placeholders (sans-IO:
relay + observer + recorder, tests/sansio_tap.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcptap.relay.http.events import Upstream
from mcptap.relay.http.rewrite import location
from sansio_tap import SansIoTap, post, response

INIT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})
RESULT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                             "serverInfo": {"name": "s", "version": "1"}}})
UP = Upstream.parse("http://127.0.0.1:9000/mcp")
TAP = "127.0.0.1:7000"


def _fields(name: bytes, value: bytes, status: int = 200) -> tuple[bytes, list[tuple[str, str, str]]]:
    headers, changes = location(status, [(name, value)], UP, TAP)
    return headers[0][1], changes


@pytest.mark.parametrize(("name", "value", "want"), [
    (b"Content-Location", b"http://127.0.0.1:9000/mcp/r/1", b"http://127.0.0.1:7000/mcp/r/1"),
    (b"Content-Location", b"//127.0.0.1:9000/r", b"http://127.0.0.1:7000/r"),
    (b"Refresh", b"5; url=http://127.0.0.1:9000/login?next=%2F", b"5; url=http://127.0.0.1:7000/login?next=%2F"),
    (b"Refresh", b"0;URL='http://127.0.0.1:9000/a'", b"0;URL='http://127.0.0.1:7000/a'"),
    (b"Refresh", b'1, url="http://127.0.0.1:9000/b"', b'1, url="http://127.0.0.1:7000/b"'),
    (b"Refresh", b"3 http://127.0.0.1:9000/c", b"3 http://127.0.0.1:7000/c"),
    (b"Link", b'<http://127.0.0.1:9000/p?page=2>; rel="next", <http://other.example/x>; rel="alternate"',
     b'<http://127.0.0.1:7000/p?page=2>; rel="next", <http://other.example/x>; rel="alternate"'),
    (b"Link", b'</rel>; rel=x, <http://127.0.0.1:9000/q>; title="a, <http://127.0.0.1:9000/no>"',
     b'</rel>; rel=x, <http://127.0.0.1:7000/q>; title="a, <http://127.0.0.1:9000/no>"'),
])
def test_a_url_on_the_upstreams_origin_is_pointed_at_the_tap(name: bytes, value: bytes, want: bytes) -> None:
    got, changes = _fields(name, value)
    assert got == want
    assert changes == [(name.decode().lower(), value.decode(), want.decode())]


@pytest.mark.parametrize(("name", "value"), [
    (b"Content-Location", b"/mcp/r/1"),                              # relative: resolves against the tap already
    (b"Content-Location", b"http://other.example:9000/r"),          # another origin
    (b"Content-Location", b"https://127.0.0.1:9000/r"),              # another scheme: another origin
    (b"Content-Location", b"http://[::1/x"),                        # not a URL
    (b"Refresh", b"5"),                                              # no URL
    (b"Refresh", b"5; url=/login"),
    (b"Refresh", b"5; url=http://other.example/login"),
    (b"Refresh", b"soon; url=http://127.0.0.1:9000/x"),             # not a Refresh value: left alone
    (b"Link", b'</a>; rel=next, <http://other.example/b>; rel=prev'),
    (b"Link", b'<http://127.0.0.1:9000/unterminated; rel=next'),
    (b"Link", b'<urn:x>; title="<http://127.0.0.1:9000/only-in-a-string>"'),
    (b"Location", b"http://127.0.0.1:9000/mcp"),                     # Location: 201 and 3xx only (this is a 200)
])
def test_other_values_pass_unchanged(name: bytes, value: bytes) -> None:
    assert _fields(name, value) == (value, [])


def test_the_client_gets_the_tap_urls_and_the_capture_records_each_change(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", INIT))
    tap.upstream(response(200, [(b"Content-Type", b"application/json"),
                                (b"Content-Location", b"http://127.0.0.1:9000/mcp/r?code=SECRETCODE1"),
                                (b"Refresh", b"30; url=http://127.0.0.1:9000/login?access_token=SECRETTOKEN2"),
                                (b"Link", b'<http://127.0.0.1:9000/docs?client_secret=SECRET3>; rel="help", <http://other.example/x>; rel=alt')],
                          RESULT))
    down = bytes(tap.to_client)
    assert b"\r\nContent-Location: http://127.0.0.1:7000/mcp/r?code=SECRETCODE1\r\n" in down
    assert b"\r\nRefresh: 30; url=http://127.0.0.1:7000/login?access_token=SECRETTOKEN2\r\n" in down
    assert b'\r\nLink: <http://127.0.0.1:7000/docs?client_secret=SECRET3>; rel="help", <http://other.example/x>; rel=alt\r\n' in down
    recs = tap.records()
    rewrites = [(x["what"], x["original"].split("?")[0], x["rewritten"].split("?")[0]) for x in recs if x.get("event") == "auth_rewrite"]
    assert rewrites == [("content-location", "http://127.0.0.1:9000/mcp/r", "http://127.0.0.1:7000/mcp/r"),
                        ("refresh", "30; url=http://127.0.0.1:9000/login", "30; url=http://127.0.0.1:7000/login"),
                        ("link", "<http://127.0.0.1:9000/docs", "<http://127.0.0.1:7000/docs")]
    # credentials in those URLs are placeholders, in the rewrite records and in the response record alike
    assert "SECRET" not in (tmp_path / "c.jsonl").read_text()
    assert any(x["type"] == "message" and x["dir"] == "s2c" for x in recs)


@pytest.mark.parametrize("status", [103, 100, 102])
def test_an_informational_responses_urls_are_pointed_at_the_tap_too(tmp_path: Path, status: int) -> None:
    """A 103 Early Hints' ``Link`` (preload, preconnect) named the upstream's
    origin to the client while the final response's did not (docs/http-tap.md:
    "in any response")."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", INIT))
    tap.upstream(b"HTTP/1.1 %d Hint\r\nLink: <http://127.0.0.1:9000/x?code=SECRETCODE4>; rel=preload\r\n"
                 b"Content-Location: http://127.0.0.1:9000/y\r\nLocation: http://127.0.0.1:9000/z\r\n\r\n" % status)
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], RESULT))
    down = bytes(tap.to_client)
    hint = down[:down.index(b"\r\n\r\n") + 4]
    assert hint.startswith(b"HTTP/1.1 %d " % status)
    assert b"\r\nLink: <http://127.0.0.1:7000/x?code=SECRETCODE4>; rel=preload\r\n" in hint
    assert b"\r\nContent-Location: http://127.0.0.1:7000/y\r\n" in hint
    assert b"\r\nLocation: http://127.0.0.1:9000/z\r\n" in hint         # a Location only of a 201 or 3xx (RFC 9110 §10.2.2)
    recs = tap.records()
    assert [(x["what"], x["rewritten"].split("?")[0]) for x in recs if x.get("event") == "auth_rewrite"] == [
        ("link", "<http://127.0.0.1:7000/x"), ("content-location", "http://127.0.0.1:7000/y")]
    assert "SECRETCODE4" not in (tmp_path / "c.jsonl").read_text()
    assert any(x["type"] == "message" and x["dir"] == "s2c" for x in recs)
