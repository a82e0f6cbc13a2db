"""How a recorded HTTP exchange ended when it carried no JSON-RPC answer (pure, level 3;
serve/script.py's helper): what the mock sends instead of an answer.

A POST's exchange that the recorded server ended without a JSON-RPC message answering
what it carried — an HTTP refusal (401 with its ``WWW-Authenticate``, 403, 404 for an
expired session, 405, 5xx), a ``202`` (a notification's, or a request's whose answer came
on the GET stream or never), a ``200`` with a body that is not JSON-RPC, or the
connection closed with no response (``upstream_closed``, ``upstream_failed``,
``bad_response``; the tap's ``502`` when it sent one), or an event stream the server
ended with no message on it (a priming event at most) — is replayed as it ended: the
recorded status, headers (less the framing, ``Date``/``Server`` and the session id, which
the mock sets itself) and body (what the capture holds of it: a JSON body that is not
JSON-RPC, framed as a message; a body that is no message, a 401's text, from its ``response_body``
record, the first 64 KiB; a capture from before the tap kept those has none: sent empty), or the
connection closed. An exchange the recording cut (the tap stopped, the client went away, a
gap in the recording, a body mcptap could not decode) ended by no act of the server's: its
requests stay unanswered, as a recorded request with no answer does.

An event stream that carried messages but not the answer (a server that ended it to be polled
again, or broke off) is ended where the server ended it (``stream_ended``): after its last
message, ``"complete"`` (the stream's end) or ``"closed"`` (the connection closed mid-stream); its
request stays open, its answer, if the recording has one, going where it went (the GET stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcptap.serve.script_fields import status_field

#: ``end`` hows in which the recorded server ended the exchange itself (docs/http-tap.md)
SERVER_ENDED = ("complete", "upstream_closed", "upstream_failed", "bad_response")
#: response headers the mock does not copy: message framing and connection management (h11
#: sets its own), the body's coding (the capture holds the body decoded), fields about the
#: recorded server's moment, and the session id (the mock's own one is sent)
NOT_REPLAYED = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
                          "proxy-connection", "content-encoding", "date", "server", "mcp-session-id"})


@dataclass(frozen=True, slots=True)
class HttpEnding:
    """How to end a live POST instead of answering it: ``status`` None closes the connection
    with no response; else that status, ``headers`` (name, value) and ``body`` (bytes)."""

    status: int | None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    @property
    def json_body(self) -> bool:
        """The body is ``application/json`` (the tap frames such a body as a message record)."""
        return bool(self.body) and any(n.lower() == "content-type" and v.split(";")[0].strip().lower() == "application/json"
                                       for n, v in self.headers)


def replayed_headers(headers: Any) -> tuple[tuple[str, str], ...]:
    """The recorded response ``headers`` (``[[name, value]…]``) the mock sends again. A value
    the tap (or a scrub) stored as a keyed placeholder (``Set-Cookie: auth=«redacted:hmac:…»``)
    is left out: it was never the server's, and a client would store and send it back as one;
    so is one that is not a latin-1 string (the tap records header bytes as latin-1:
    ``relay/http/credentials.headers_json``; anything else was edited in)."""
    out = []
    for pair in headers if isinstance(headers, list) else ():
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], str):
            if pair[0].lower() not in NOT_REPLAYED and PLACEHOLDER not in pair[1] and _latin1(pair[0]) and _latin1(pair[1]):
                out.append((pair[0], pair[1]))
    return tuple(out)


#: what every keyed placeholder starts with (redact/keyed.py)
PLACEHOLDER = "«redacted:"


def _latin1(s: str) -> bool:
    return s.isascii() or max(map(ord, s)) < 0x100


def wire_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    """``(name, value)`` str pairs as the bytes they were recorded from (latin-1: h11 would
    encode str as ASCII and raise on a server's obs-text value, ``X-Note: café``)."""
    return [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]


def priming(sse: Any) -> dict[str, Any] | None:
    """The ``event``, ``id`` and ``retry`` of a recorded ``sse`` event that carried no message, when it
    has an id or a retry (a priming event: what lets the client resume the stream); else None."""
    if not isinstance(sse, dict) or sse.get("cut"):
        return None
    out = {k: sse[k] for k in ("event", "id") if isinstance(sse.get(k), str) and "\n" not in sse[k] and "\r" not in sse[k]}
    if isinstance(sse.get("retry"), int) and not isinstance(sse.get("retry"), bool) and sse["retry"] >= 0:
        out["retry"] = sse["retry"]
    return out if "id" in out or "retry" in out else None


def sse_bytes(event: dict[str, Any]) -> bytes:
    """A priming event (``priming``) as the bytes of an SSE event with empty data."""
    lines = [f"event: {event['event']}"] if "event" in event else []
    lines += [f"id: {event['id']}"] if "id" in event else []
    lines += [f"retry: {event['retry']}"] if "retry" in event else []
    return ("\n".join([*lines, "data: "]) + "\n\n").encode("utf-8")


#: the kind of the ``Emission`` that ends a POST's event stream there (``stream_ended``)
STREAM_END = "stream_end"


def stream_ended(facts: dict[str, Any]) -> str | None:
    """How the server ended the recorded POST event stream whose ``http`` facts are ``facts`` (as
    ``ending_of``'s) when it carried messages but no answer: ``"complete"``, ``"closed"`` (the
    connection closed, or broke, mid-stream), or None (answered, not such a stream, or cut by the
    recording: the tap stopped, the client left, a gap)."""
    if (facts.get("method") != "POST" or facts.get("ctype") != "text/event-stream" or not facts.get("messages")
            or facts.get("answered") or facts.get("cut") or facts.get("how") not in SERVER_ENDED):
        return None
    return "complete" if facts.get("how") == "complete" else "closed"


def ending_of(facts: dict[str, Any], body: bytes) -> HttpEnding | None:
    """How the recorded exchange whose ``http`` facts are ``facts`` (``method``, ``status``,
    ``headers``, ``ctype``, and from its end ``how``, ``sent_502``, ``cut``; ``messages``: how many
    server messages travelled on it, ``answered``: a JSON-RPC answer among them) ended, when the mock must end a live POST so (module
    docstring); ``body``: the bytes the capture holds of its response body (its framed lines, else its
    ``response_body`` record's). None: it is answered
    as the core says (an answer, or none while the recorded request had none)."""
    if facts.get("method") != "POST" or facts.get("answered") or facts.get("cut") or facts.get("how") not in SERVER_ENDED:
        return None
    status = status_field(facts.get("status"))
    if facts.get("ctype") == "text/event-stream" and facts.get("messages"):
        return None                 # an event stream that carried messages but no answer: the request stays open
    if facts.get("how") != "complete":
        # the server closed (or broke) the connection: what the client got was the tap's 502, or nothing
        return HttpEnding(502) if facts.get("sent_502") else HttpEnding(None)
    if status is None or status < 200:
        return None
    return HttpEnding(status, replayed_headers(facts.get("headers")), b"" if status in (204, 304) else body)


def refusal_key(method: str, target: str, session_header: bool = False) -> str:
    """The key a recorded answer to a GET, DELETE or legacy POST is replayed under (``Script.kind_answers``):
    the method, the path, whether the target names a session (legacy ``session_id``) and whether the request
    carried an ``Mcp-Session-Id`` header (``session_header``: its presence, not its value), so each request
    gets the answers its own kind got (``GET /mcp/304`` its 304, ``GET /mcp`` its 405, a GET without the
    session header the recorded ``400`` and one with it its event stream)."""
    u = urlsplit(target)
    q = parse_qs(u.query)
    named = "session" if q.get("session_id") or q.get("sessionId") else "-"
    return f"{method.upper()} {u.path} {named} {'sid' if session_header else '-'}"


@dataclass(frozen=True, slots=True)
class KindAnswer:
    """One recorded answer to a GET, DELETE or legacy POST (``Script.kind_answers``, in recorded order).
    ``ending``: its status, headers (``replayed_headers``) and body (a refusal's text); ``stream``: a GET
    answered ``200 text/event-stream`` (the mock opens an event stream instead of sending ``ending``);
    ``priming``: the events that stream began with before any message; ``last``: the recorded seq of the
    last server message it carried (None: none); ``how``: how the server ended it, ``"complete"`` or
    ``"closed"`` (mid-stream), or None (open when the recording ended, cut by the recording: the client
    left, the tap stopped, a gap; or ended after a later request of its session, as a server ends the
    session's GET stream at its DELETE: the mock ends it at that request, or not)."""

    ending: HttpEnding
    stream: bool = False
    priming: tuple[dict[str, Any], ...] = ()
    last: int | None = None
    how: str | None = None


def kind_answer(facts: dict[str, Any], headers: tuple[tuple[str, str], ...], default: int) -> KindAnswer:
    """The ``KindAnswer`` of the recorded exchange whose ``http`` facts are ``facts`` (as ``ending_of``'s, with
    ``last``: the seq of the last server message on it); ``headers``: its replayed headers; ``default``: the
    status when none was recorded (the connection closed before a response)."""
    status = status_field(facts.get("status")) or default
    stream = status == 200 and facts.get("ctype") == "text/event-stream"
    how = None
    if stream and not facts.get("cut") and facts.get("how") in SERVER_ENDED and facts.get("by_itself"):
        how = "complete" if facts.get("how") == "complete" else "closed"
    return KindAnswer(HttpEnding(status, headers, facts.get("body", b"")), stream, tuple(facts.get("priming", ())) if stream else (),
                      facts.get("last") if stream and facts.get("messages") else None, how)
