"""HTTP session bookkeeping through protocol/http_judge.py (the rules the
live tap and `check --full` share): each code raised once and not raised by
its near miss, with a real Annotator for the JSON-RPC side."""

from __future__ import annotations

from mcptap.model import Direction, Frame
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.http_judge import End, HttpJudge
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.jsonparse import parse_json

ACCEPT = (b"accept", b"application/json, text/event-stream")
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
INIT_OK = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'


class Session:
    """A scripted Streamable HTTP session: exchanges through one judge."""

    def __init__(self, endpoint: str | None = None) -> None:
        self.ann = Annotator("http")
        self.judge = HttpJudge(self.ann, endpoint)
        self.ex = 0
        self.seq = 0

    def _feed(self, d: Direction, raw: bytes, session, ex: int, status: int | None = None) -> list[str]:
        self.seq += 1
        tr = {"exchange": ex, **({"status": status} if status is not None else {})}
        return [f.code for f in self.ann.feed(Frame(raw, 0, True, parse_json(raw)[0]), self.seq, self.seq, d, session, tr).findings]

    def exchange(self, method: str, body: bytes | None, status: int, *, session=None, assign=None, reply: bytes | None = None,
                 target: str = "/mcp", how: str = "complete", reused: bool = False, started: bool = True,
                 accept: tuple[bytes, bytes] = ACCEPT, resp_extra: tuple[tuple[bytes, bytes], ...] = ()) -> list[str]:
        self.ex += 1
        h = [accept] + ([(b"mcp-session-id", session.encode())] if session else []) \
            + ([(b"content-type", b"application/json")] if method == "POST" else [])
        facts = Exchange(method, target, h, session=session)
        codes: list[str] = []
        if body is not None:
            from mcptap.protocol.http_judge import body_facts
            facts.body_kinds, facts.methods, facts.meta_version = body_facts(parse_json(body)[0])
            codes += [f.code for f in self.judge.request(self.ex, facts)]
            codes += self._feed(Direction.C2S, body, session if session is not None else assign, self.ex)
        else:
            codes += [f.code for f in self.judge.request(self.ex, facts)]
        if started:
            facts.status = status
            ctype = [(b"content-type", b"application/json")] if reply is not None else []
            facts.resp_headers = ctype + ([(b"mcp-session-id", assign.encode())] if assign else []) + list(resp_extra)
            if facts.session is None and assign and facts.is_initialize:
                facts.session = assign
            fs, _ = self.judge.response(self.ex, facts, session)
            codes += [f.code for f in fs]
            if reply is not None:
                codes += self._feed(Direction.S2C, reply, facts.session, self.ex, status)
        codes += [f.code for f in self.judge.end(self.ex, facts, End(how, "", started, reused))]
        return codes

    def start(self) -> None:
        assert self.exchange("POST", INIT, 200, assign="s1", reply=INIT_OK) == []
        assert self.exchange("POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 202, session="s1") == []


def test_session_rejected_not_404() -> None:
    s = Session()
    s.start()
    got = s.exchange("POST", b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 400, session="s1",
                     reply=b'{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Session not found"}}')
    assert "http.session_rejected_not_404" in got
    # near miss: the same rejection with 404 is what the spec asks for
    s = Session()
    s.start()
    got = s.exchange("POST", b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 404, session="s1",
                     reply=b'{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Session not found"}}')
    assert "http.session_rejected_not_404" not in got and "lifecycle.session_terminated" in got
    # near miss: a 400 about something else on a live session
    s = Session()
    s.start()
    got = s.exchange("POST", b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}', 400, session="s1",
                     reply=b'{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool x"}}')
    assert "http.session_rejected_not_404" not in got
    # near miss: a duplicate initialize on the live session rejected with 400 (cases/B33, reference SDKs)
    s = Session()
    s.start()
    got = s.exchange("POST", INIT.replace(b'"id":1', b'"id":3'), 400, session="s1",
                     reply=b'{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: session already initialized"}}')
    assert "http.session_rejected_not_404" not in got and "lifecycle.reinitialize" in got


def test_a_404_is_judged_by_who_ended_the_session() -> None:
    """A 404 said "the server ended the session" also on a session the client
    had ended itself with DELETE, or on an id the server never assigned (an
    invented or mistyped one): those are the client's faults, and the 404 is
    the right answer (found by a breaker helper)."""
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    s = Session()
    s.start()
    assert s.exchange("DELETE", None, 200, session="s1") == []
    got = s.exchange("POST", ping, 404, session="s1")
    assert "http.session_used_after_delete" in got and "lifecycle.session_terminated" not in got
    s = Session()
    s.start()
    for sid in ("bogus", "S1"):          # invented, and the real id in the wrong case
        got = s.exchange("POST", ping.replace(b"2", b"3" if sid == "S1" else b"2", 1), 404, session=sid)
        assert "http.session_id_unknown" in got and "lifecycle.session_terminated" not in got, (sid, got)
    # the server ending its own session is still that
    s = Session()
    s.start()
    got = s.exchange("POST", ping, 404, session="s1")
    assert got.count("lifecycle.session_terminated") == 1 and "http.session_id_unknown" not in got
    # a capture that never saw the id assigned (the tap started mid-session) cannot tell: as before
    s = Session()
    assert "lifecycle.session_terminated" in s.exchange("POST", ping, 404, session="s9")


def test_get_stream_refused_with_400_and_only_on_the_mcp_endpoint() -> None:
    s = Session()
    s.start()
    assert "http.get_stream_refused_not_405" in s.exchange("GET", None, 400, session="s1")
    assert "http.get_stream_refused_not_405" not in s.exchange("GET", None, 405, session="s1")
    # /healthz is not the MCP endpoint: no GET-stream rules there
    got = s.exchange("GET", None, 404, session="s1", target="/healthz", accept=(b"accept", b"*/*"))
    assert not [c for c in got if c.startswith("http.get_")]
    got = s.exchange("GET", None, 404, target="/", accept=(b"accept", b"*/*"))
    assert not [c for c in got if c.startswith("http.get_")]
    assert "http.get_accept_missing_event_stream" in s.exchange("GET", None, 405, session="s1", accept=(b"accept", b"*/*"))


def test_request_lost_on_a_closed_connection_then_retried_is_a_reuse() -> None:
    s = Session()
    s.start()
    body = b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}'
    got = s.exchange("POST", body, 0, session="s1", how="upstream_closed", reused=True, started=False)
    assert "http.request_lost_on_closed_connection" in got
    got = s.exchange("POST", body, 200, session="s1", reply=b'{"jsonrpc":"2.0","id":5,"result":{"tools":[]}}')
    assert "jsonrpc.id_reused" in got and "jsonrpc.duplicate_id_in_flight" not in got
    assert not s.ann.pending()


def test_declared_method_refused_at_http_level() -> None:
    """A request for a capability the server declared, refused with an HTTP
    error and no JSON-RPC answer: refused at HTTP level (info) and
    capability.declared_but_unsupported; under authorization (401) only the former."""
    def run(status: int) -> list[str]:
        s = Session()
        s.exchange("POST", INIT, 200, assign="s1",
                   reply=INIT_OK.replace(b'{"tools":{}}', b'{"tools":{},"logging":{}}'))
        s.exchange("POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 202, session="s1")
        return s.exchange("POST", b'{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}', status, session="s1")
    got = run(404)
    assert "http.request_refused" in got and "capability.declared_but_unsupported" in got
    got = run(401)
    assert "http.request_refused" in got and "capability.declared_but_unsupported" not in got


def test_a_stateless_exchange_leaves_no_state_once_it_ends() -> None:
    """The live observer and `check --full` both end an exchange through
    HttpJudge.end: a sessionless POST's scope (its own session) goes with it."""
    s = Session()
    for _ in range(50):
        s.exchange("POST", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 200, reply=b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert not s.ann._exchanges.d and not s.ann.pairing._done.d
    s.start()                       # a session's state and answered requests stay
    assert "s1" in s.ann.sessions() and len(s.ann.pairing._done.d) == 1


def test_a_post_answered_by_a_redirect_is_not_unanswered() -> None:
    """An SDK server at /mcp answers POST /mcp/ with 307 to /mcp: the initialize
    was answered at HTTP level (http.redirected, naming the Location without its
    query), not left unanswered; the client's retry at the new URL pairs normally."""
    s = Session()
    got = s.exchange("POST", INIT, 307, resp_extra=((b"location", b"http://127.0.0.1:9/mcp?token=x"),), target="/mcp/")
    assert got == ["http.redirected"] and not s.ann.pending()
    s.start()       # the client follows it: the handshake at /mcp is clean
    # a request redirected in the session and sent again with its id is no reuse (legacy revisions forbid reuse)
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":7}}}'
    assert s.exchange("POST", call, 308, session="s1", resp_extra=((b"location", b"/mcp"),)) == ["http.redirected"]
    assert s.exchange("POST", call, 200, session="s1", reply=b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}') == []
    # near miss: the same id after a real answer is a reuse
    assert "jsonrpc.id_reused" in s.exchange("POST", call, 200, session="s1", reply=b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}')
    # near misses: 304 is not a redirect; a 200 without a JSON-RPC answer leaves the request unanswered
    for status in (304, 200):
        s = Session()
        got = s.exchange("POST", INIT, status, resp_extra=((b"location", b"/mcp"),))
        assert "http.redirected" not in got and s.ann.pending(), status


def test_the_redirect_finding_quotes_the_location_without_its_query() -> None:
    from mcptap.protocol.http_answers import redirected_finding
    from mcptap.protocol.pairing import Pending
    f = redirected_finding(307, "http://h:1/mcp?token=SECRET#x", [Pending(2, 1, Direction.C2S, 1, "initialize", None)])
    assert "SECRET" not in f.message and "'http://h:1/mcp'" in f.message and f.data["location"] == "http://h:1/mcp"


def test_a_sessionless_exchange_does_not_claim_before_initialize() -> None:
    """A 2025-11-25 server may assign no Mcp-Session-Id: each exchange is its own
    scope, so a tools/list after the client's initialize (in another exchange)
    was shown as sent before initialize (found by a breaker helper). The
    exchanges after the handshake are the operating ones of that one logical
    client; initialize itself still is before_initialize."""
    ann = Annotator("http")
    feed = [(Direction.C2S, INIT, 1), (Direction.S2C, INIT_OK, 1),
            (Direction.C2S, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 2),
            (Direction.C2S, b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 3),
            (Direction.S2C, b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}', 3)]
    msgs = [ann.feed(Frame(raw, 0, True, parse_json(raw)[0]), n, n, d, None, {"exchange": ex}) for n, (d, raw, ex) in enumerate(feed, 1)]
    assert [m.phase.value if m.phase else None for m in msgs] == ["before_initialize", "initializing", "operating", "operating", "operating"]
    assert [f.code for m in msgs for f in m.findings] == []


def test_a_request_sent_again_after_an_authorization_refusal_is_not_a_reuse() -> None:
    """tools/call id=5 refused 401 (token expired): the SDK re-authorizes and sends it again
    with id 5. The 401 is a refusal (http.request_refused) but the request never reached the
    JSON-RPC layer: as a redirected one, its id is free for the re-send (was jsonrpc.id_reused)."""
    call = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":9}}}'
    ok = b'{"jsonrpc":"2.0","id":5,"result":{"content":[]}}'
    for status in (401, 403, 407, 408, 429):
        s = Session()
        s.start()
        assert "http.request_refused" in s.exchange("POST", call, status, session="s1"), status
        assert not s.ann.pending()
        assert s.exchange("POST", call, 200, session="s1", reply=ok) == [], status
    # near miss: after a refusal that is an answer (the server handled it: 404, 500) the same id is a reuse
    for status in (404, 500):
        s = Session()
        s.start()
        s.exchange("POST", call, status, session="s1")
        assert "jsonrpc.id_reused" in s.exchange("POST", call, 200, session="s1", reply=ok), status


def _legacy_session_abandoned(server_sends: bool) -> list[str]:
    """Legacy HTTP+SSE: a tools/call POSTed (202), the server sending progress for it on the
    session's GET stream (or nothing), then the client closes that stream."""
    s = Session()
    get = Exchange("GET", "/sse", [(b"accept", b"text/event-stream")], session="s1", legacy=True)
    s.judge.request(1, get)
    get.status, get.resp_headers = 200, [(b"content-type", b"text/event-stream")]
    s.judge.response(1, get, "s1")
    s.ex = 1

    def post(body: bytes) -> list[str]:
        s.ex += 1
        facts = Exchange("POST", "/messages?sessionId=s1", [(b"content-type", b"application/json")], session="s1", legacy=True)
        codes = [f.code for f in s.judge.request(s.ex, facts)] + s._feed(Direction.C2S, body, "s1", s.ex)
        facts.status = 202
        codes += [f.code for f in s.judge.response(s.ex, facts, "s1")[0]]
        return codes + [f.code for f in s.judge.end(s.ex, facts, End("complete", "", True))]

    codes = post(INIT.replace(b"2025-06-18", b"2024-11-05")) + s._feed(Direction.S2C, INIT_OK.replace(b"2025-06-18", b"2024-11-05"), "s1", 1)
    codes += post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    codes += post(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":7}}}')
    if server_sends:
        codes += s._feed(Direction.S2C, b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}', "s1", 1)
    codes += [f.code for f in s.judge.end(1, get, End("client_closed", "", True, sse=True))]
    return codes + [f.code for f in s.ann.finish(99)]


def test_a_legacy_client_that_leaves_a_stream_the_server_still_sends_on_abandoned_its_request() -> None:
    """The client closed its HTTP+SSE stream while the server was still sending progress for
    a tools/call: abandoned by the client (warn), not unanswered by the server (was
    jsonrpc.unanswered_request, an error). Left idle, the request stays unanswered."""
    got = _legacy_session_abandoned(True)
    assert "http.client_abandoned_request" in got and "jsonrpc.unanswered_request" not in got, got
    got = _legacy_session_abandoned(False)
    assert "http.client_abandoned_request" not in got and "jsonrpc.unanswered_request" in got, got


def test_a_client_that_closes_a_post_stream_the_server_still_sends_on_abandoned_its_request() -> None:
    """Streamable HTTP, handshake era: progress on the POST's SSE stream, then the client
    closes it: http.client_abandoned_request, not sse.stream_closed_without_response (which
    an idle stream keeps)."""
    for server_sends in (True, False):
        s = Session()
        s.start()
        s.ex += 1
        facts = Exchange("POST", "/mcp", [ACCEPT, (b"mcp-session-id", b"s1"), (b"content-type", b"application/json")], session="s1")
        body = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":7}}}'
        s.judge.request(s.ex, facts)
        s._feed(Direction.C2S, body, "s1", s.ex)
        facts.status, facts.resp_headers = 200, [(b"content-type", b"text/event-stream")]
        s.judge.response(s.ex, facts, "s1")
        if server_sends:
            s._feed(Direction.S2C, b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}', "s1", s.ex, 200)
        got = [f.code for f in s.judge.end(s.ex, facts, End("client_closed", "", True, sse=True))] + [f.code for f in s.ann.finish(99)]
        assert ("http.client_abandoned_request" in got) is server_sends, got
        assert ("sse.stream_closed_without_response" in got) is not server_sends, got
