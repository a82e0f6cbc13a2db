"""HTTP session bookkeeping (protocol/session_book.py): each code once raised
and once not, on hand-built exchange facts. The handed cases B33/B34 run the
same rules through the real HTTP tap (tests/test_cases_http.py)."""

from __future__ import annotations

import json

from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.session_book import SessionBook

INIT = ("request",)


def post(methods=("tools/list",), session=None, meta=None, target="/mcp", status=None, sid=None) -> Exchange:
    h = [(b"accept", b"application/json, text/event-stream")]
    if session is not None:
        h.append((b"mcp-session-id", session.encode()))
    ex = Exchange("POST", target, h, session=session, body_kinds=("request",), methods=tuple(methods), meta_version=meta)
    if status is not None:
        ex.status = status
        ex.resp_headers = [(b"content-type", b"application/json")] + ([(b"mcp-session-id", sid.encode())] if sid else [])
    return ex


def codes(fs) -> list[str]:
    return [f.code for f in fs]


def started(book: SessionBook, sid: str = "s1", target: str = "/mcp") -> None:
    ex = post(("initialize",), target=target, status=200, sid=sid)
    fs, assigned = book.on_response(ex, None)
    assert assigned == sid and fs == []


def test_session_id_missing_after_assignment() -> None:
    book = SessionBook()
    assert book.on_request(post()) == []                       # nothing assigned yet: stateless traffic
    started(book)
    assert codes(book.on_request(post())) == ["http.session_id_missing"]
    assert book.on_request(post(session="s1")) == []           # near miss: echoed
    assert book.on_request(post(("initialize",))) == []        # a new session starts without one
    assert book.on_request(post(meta="2026-07-28")) == []      # 2026-07-28 has no sessions
    assert book.on_request(post(target="/healthz")) == []      # another endpoint


def test_session_id_reissued_and_new_session() -> None:
    book = SessionBook()
    started(book, "a1")
    fs, assigned = book.on_response(post(("initialize",), session="a1", status=200, sid="b2"), "a1")
    assert codes(fs) == ["http.session_id_reissued"] and assigned == "b2"
    # near miss: the same id echoed on an ordinary request
    fs, assigned = book.on_response(post(session="a1", status=200, sid="a1"), "a1")
    assert fs == [] and assigned is None
    # a fresh initialize without a session id after a 404: a new session, not a reissue
    book.on_response(post(session="a1", status=404), "a1")
    assert book.ended("a1")
    fs, _ = book.on_response(post(("initialize",), status=200, sid="c3"), None)
    assert codes(fs) == ["lifecycle.new_session"]
    assert json.dumps(fs[0].data) == '{"session": "c3"}'
