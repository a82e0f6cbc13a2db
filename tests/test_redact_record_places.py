"""A record field is structure (or mcptap's own vocabulary) by its place in the record, not by its
name: the JSON-RPC ``id`` of a message stays for pairing, but an SSE event's ``id`` (peer text,
``transport.sse.id`` / an ``sse`` record's ``sse.id``) gets the patterns, with the placeholder the
``Last-Event-ID`` header carrying the same value gets; the HTTP tap's ``auth`` tag (``prm``,
``as_meta``…) stays, though a field named ``auth`` elsewhere is a secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcptap.redact import placeholder
from mcptap.redact.default import default_redactor
from mcptap.redact.scrub import Scrubber
from sansio_tap import HOST, SansIoTap, post, response

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PH = placeholder(GHP)


def _scrub(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    s = Scrubber(default_redactor())
    return [s.header(recs[0]), *s.records(recs[1:])]


def _sse_capture(path: Path) -> list[dict[str, Any]]:
    """A POST answered on an SSE stream whose events carry the token in their ids (a priming
    event, an event with a comment and an event type, the answer), then the client's GET
    resuming with ``Last-Event-ID``."""
    tap = SansIoTap(path)
    tap.client(post(b"/mcp", b'{"jsonrpc":"2.0","id":"req-7","method":"ping"}'))
    body = (f"id: prime-{GHP}\ndata:\n\n"
            f": keep-alive {GHP}\nevent: kind-{GHP}\nid: ev0-{GHP}\n\n"
            f"id: ev-{GHP}\nevent: message\r\ndata: " '{"jsonrpc":"2.0","id":"req-7","result":{}}' "\r\n\r\n").encode()
    tap.upstream(response(200, [(b"Content-Type", b"text/event-stream")], body))
    tap.cid = None
    tap.client(b"GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nLast-Event-ID: ev-%s\r\n\r\n"
               % (HOST, GHP.encode()))
    tap.upstream(response(204, []))
    return tap.records()


def test_sse_event_ids_get_the_patterns_the_json_rpc_id_stays(tmp_path: Path) -> None:
    recs = _sse_capture(tmp_path / "cap.jsonl")
    assert GHP in json.dumps(recs)       # recorded plainly: the tap itself scrubs credentials, not patterns
    out = _scrub(recs)
    assert GHP not in json.dumps(out, ensure_ascii=False)
    get = next(r for r in out if r.get("event") == "request" and r.get("method") == "GET")
    (last,) = [v for n, v in get["headers"] if n.lower() == "last-event-id"]
    assert last == f"ev-{PH}"
    msgs = [r for r in out if r["type"] == "message"]
    answer = next(r for r in msgs if r["dir"] == "s2c")
    # the same value, the same placeholder: the event the client resumes from is still found
    assert answer["transport"]["sse"]["id"] == last
    assert {r["id"] for r in msgs} == {"req-7"} and answer["pair"] == msgs[0]["seq"]
    sse = [r["sse"] for r in out if r.get("event") == "sse"]
    assert [s["id"] for s in sse] == [f"prime-{PH}", f"ev0-{PH}"]
    assert sse[1]["event"] == f"kind-{PH}" and sse[1]["comments"] == [f"keep-alive {PH}"]
    assert _scrub(out) == out            # scrubbing twice is once


def test_a_json_rpc_id_shaped_like_a_token_stays_for_pairing(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl")
    tap.client(post(b"/mcp", b'{"jsonrpc":"2.0","id":"' + GHP.encode() + b'","method":"ping"}'))
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], b'{"jsonrpc":"2.0","id":"' + GHP.encode() + b'","result":{}}'))
    msgs = [r for r in _scrub(tap.records()) if r["type"] == "message"]
    assert [m["id"] for m in msgs] == [GHP, GHP] and msgs[1]["pair"] == msgs[0]["seq"]


AUTH_KINDS = ("prm", "as_meta", "as", "mcp")


def test_the_http_taps_own_vocabulary_stays_a_field_named_auth_elsewhere_is_a_secret() -> None:
    """The tap's ``auth`` tag, an exchange's ``how``, a connection's ``side``, an ``auth_rewrite``'s
    ``what`` and a cut SSE event's ``cut`` are mcptap's words: kept where the tap writes them. The
    same names elsewhere (a context record's state, a note, an SSE event's ``event``) are peer text."""
    recs: list[dict[str, Any]] = [{"type": "header", "format": "mcptap-capture", "version": 1, "transport": "http"}]
    for i, kind in enumerate(AUTH_KINDS):
        recs += [{"type": "http", "seq": 4 * i + 1, "t_us": i, "event": "request", "exchange": i, "conn": 1, "auth": kind,
                  "method": "GET", "target": "/.well-known/oauth-protected-resource/mcp"},
                 {"type": "http", "seq": 4 * i + 2, "t_us": i, "event": "auth_rewrite", "exchange": i, "conn": 1, "auth": kind,
                  "what": "www-authenticate", "original": "Bearer x", "rewritten": "Bearer y"},
                 {"type": "http", "seq": 4 * i + 3, "t_us": i, "event": "end", "exchange": i, "conn": 1, "auth": kind,
                  "how": "client_closed"},
                 {"type": "http", "seq": 4 * i + 4, "t_us": i, "event": "conn_close", "conn": 1, "side": "upstream", "idle": False}]
    recs += [{"type": "http", "seq": 17, "t_us": 9, "event": "sse", "exchange": 9, "conn": 2,
              "sse": {"event": "message", "offset": 0, "bytes": 9, "terminated": False, "cut": "client_closed", "auth": "s3cr3t-value"}},
             {"type": "context", "seq": 18, "t_us": 9, "state": {"phase": "operating", "auth": "s3cr3t-value"}},
             {"type": "note", "seq": 19, "t_us": 9, "source": "x", "auth": "s3cr3t-value"}]
    s = Scrubber(default_redactor())
    out = [s.header(recs[0]), *s.records(recs[1:])]
    assert out[1:-3] == recs[1:-3]
    assert out[-3]["sse"] == {**recs[-3]["sse"], "auth": out[-3]["sse"]["auth"]}
    assert "s3cr3t-value" not in json.dumps(out)


def test_the_end_records_never_answered_requests_keep_their_json_rpc_envelope() -> None:
    pending = {"seq": 3, "dir": "c2s", "id": GHP, "method": "tools/call", "session": f"s-{GHP}"}
    end = {"type": "end", "seq": 4, "t_us": 9, "pending": [pending], "cancelled_unanswered": [pending]}
    (out,) = Scrubber(default_redactor()).records([end])
    for key in ("pending", "cancelled_unanswered"):
        assert out[key] == [{**pending, "session": f"s-{PH}"}]     # the id pairs with its message; the session is peer text
