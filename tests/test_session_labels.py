"""show/sessions.py on small synthesized records (the real-peer cases: tests/e2e/test_report_sessions.py):
each era and transport, refused exchanges, an initialize nobody answered."""

from __future__ import annotations

from typing import Any

from mcptap.show.sessions import Sessions

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}


def _msg(seq: int, kind: str, body: dict[str, Any], ex: int | None = None, **kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": "message", "seq": seq, "kind": kind, "json": {"jsonrpc": "2.0", **body}, **kw}
    if "method" in body:
        rec["method"] = body["method"]
    if ex is not None:
        rec["transport"] = {"exchange": ex}
    return rec


def _init(seq: int, name: str, version: str, ex: int | None = None, **kw: Any) -> dict[str, Any]:
    return _msg(seq, "request", {"id": seq, "method": "initialize",
                                 "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": name}}}, ex, **kw)


def _result(seq: int, pair: int, result: dict[str, Any], ex: int | None = None, **kw: Any) -> dict[str, Any]:
    return _msg(seq, "response", {"id": pair, "result": result}, ex, pair=pair, **kw)


def _run(transport: str, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    s = Sessions(transport)
    for r in recs:
        s.feed(r)
    return s.result()


def test_stdio_initialize() -> None:
    (s,) = _run("stdio", [_init(1, "c", "2025-06-18"),
                          _result(2, 1, {"protocolVersion": "2025-03-26", "serverInfo": {"name": "s"}, "capabilities": {}})])
    assert (s["label"], s["client"]["clientInfo"]["name"], s["server"]["serverInfo"]["name"], s["revision"], s["via"]) == \
        ("(stdio)", "c", "s", "2025-03-26", "initialize")


def test_2026_07_28_without_discover_takes_everything_from_meta() -> None:
    req = _msg(1, "request", {"id": 1, "method": "tools/list", "params": {"_meta": META}}, 1)
    res = _result(2, 1, {"tools": [], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}}}, 1)
    (s,) = _run("http", [req, res])
    assert (s["label"], s["client"]["clientInfo"]["name"], s["client"]["capabilities"], s["server"]["serverInfo"]["version"],
            s["revision"], s["via"]) == ("(no Mcp-Session-Id)", "c", {"sampling": {}}, "2", "2026-07-28", "request _meta")


def test_a_refused_request_claims_nothing_and_an_unanswered_http_initialize_starts_no_session() -> None:
    recs = [_init(1, "rebinding-page", "2024-11-05", 7),
            {"type": "http", "event": "end", "exchange": 7, "how": "host_rejected"},
            _init(2, "c", "2025-06-18", 8),        # answered 401 (OAuth): no JSON-RPC response
            {"type": "http", "event": "end", "exchange": 8, "how": "complete"},
            _init(3, "c", "2025-06-18", 9, session="abc"),
            _result(4, 3, {"protocolVersion": "2025-06-18", "serverInfo": {"name": "s"}}, 9, session="abc")]
    (s,) = _run("http", recs)
    assert (s["label"], s["client"]["clientInfo"]["name"], s["revision"]) == ("abc", "c", "2025-06-18")
    # without the refusal's end record the request would count (a capture cut before it)
    assert [x["client"]["clientInfo"]["name"] for x in _run("http", recs[:1])] == []      # unanswered HTTP initialize
    assert [x["client"]["clientInfo"]["name"] for x in _run("stdio", [recs[0]])] == ["rebinding-page"]
