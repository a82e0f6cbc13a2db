"""Pairing scopes: stdio is one session; HTTP pairs by Mcp-Session-Id, and
sessionless (stateless) HTTP by exchange, so independent clients reusing ids
are not flagged."""

from __future__ import annotations

from mcptap.model import Direction, Frame, Phase
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import parse_json
from mcptap.protocol.pairing import DONE_WINDOW

C2S, S2C = Direction.C2S, Direction.S2C
META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'


def feed(ann, d, text, seq, session=None, exchange=None):
    raw = text.encode()
    v, bad = parse_json(raw)
    return ann.feed(Frame(raw, 0, True, v, bad), seq, seq, d, session, {"exchange": exchange} if exchange is not None else None)


def test_two_stateless_clients_reusing_an_id_pair_by_exchange() -> None:
    ann = Annotator("http")
    a = feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}', 1, exchange=1)
    b = feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}', 2, exchange=2)
    rb = feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}', 3, exchange=2)
    ra = feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}', 4, exchange=1)
    assert a.codes == [] and b.codes == []
    assert (rb.pair, ra.pair) == (2, 1)
    assert "jsonrpc.ambiguous_pairing" not in rb.codes + ra.codes
    assert ann.pending() == []


def test_same_session_reusing_an_id_in_flight_is_still_flagged() -> None:
    ann = Annotator("http")
    feed(ann, C2S, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 1, session="s1", exchange=1)
    b = feed(ann, C2S, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 2, session="s1", exchange=2)
    assert "jsonrpc.duplicate_id_in_flight" in b.codes


def test_stateless_clients_of_both_eras_do_not_mix_their_lifecycles() -> None:
    """A 2026-07-28 client and a handshake-era client on one stateless endpoint."""
    ann = Annotator("http")
    a = feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}', 1, exchange=1)
    b = feed(ann, C2S,
             '{"jsonrpc":"2.0","id":1,"method":"initialize",'
             '"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}', 2, exchange=2)
    c = feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}', 3,
             exchange=2)
    d = feed(ann, C2S, '{"jsonrpc":"2.0","method":"notifications/initialized"}', 4, exchange=3)
    e = feed(ann, S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}', 5, exchange=4)
    codes = [m.codes for m in (a, b, c, d)]
    assert not any("lifecycle.wrong_era" in cs or any(x.startswith("lifecycle.message_before") for x in cs) for cs in codes), codes
    assert c.pair == 2
    assert not any(x.startswith("lifecycle.") for x in e.codes)


def test_an_ended_stateless_exchange_leaves_no_state_and_keeps_the_sessions_window() -> None:
    """A flood of stateless POSTs (each its own scope) must neither grow the
    annotator nor push a session's answered requests out of the done window:
    a duplicate answer in the session is still recognised after 2x the window
    of stateless exchanges, and one inside a stateless exchange before it ends."""
    ann = Annotator("http")
    feed(ann, C2S, '{"jsonrpc":"2.0","id":7,"method":"tools/list"}', 1, session="s1", exchange=1)
    feed(ann, S2C, '{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}', 2, session="s1", exchange=1)
    ann.exchange_ended(1)
    seq = 3
    for ex in range(2, 2 + 2 * DONE_WINDOW):
        feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}', seq, exchange=ex)
        feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}', seq + 1, exchange=ex)
        if ex == 2:
            again = feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}', seq + 2, exchange=ex)
            assert "jsonrpc.response_for_completed_id" in again.codes
        ann.exchange_ended(ex)
        seq += 3
    dup = feed(ann, S2C, '{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}', seq, session="s1", exchange=9999999)
    assert "jsonrpc.response_for_completed_id" in dup.codes
    assert ann.session(("exchange", 5)).phase == ann.session(("exchange", 6)).phase      # fresh, not kept
    assert len(ann.pairing._done.d) == 1 and not ann.pairing._scoped.d


def test_an_open_request_of_an_ended_stateless_exchange_is_still_reported() -> None:
    ann = Annotator("http")
    feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}', 1, exchange=1)
    ann.exchange_ended(1)
    assert [p.seq for p in ann.pending()] == [1]
    assert [f.code for f in ann.finish(2)] == ["jsonrpc.unanswered_request"]


def test_answered_requests_do_not_keep_their_params() -> None:
    """Memory stays flat over a long session: the done window keeps an
    answered request for duplicate answers, late cancels and id reuse, not
    its params (a 20 KB argument per call here: 4096 of them would hold 80 MB)."""
    import tracemalloc

    ann = Annotator("http")
    big = "x" * 20_000
    tracemalloc.start()
    try:
        for i in range(2 * DONE_WINDOW):
            feed(ann, C2S, f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"t":"{big}"}}}}}}',
                 2 * i + 1, session="s1", exchange=i)
            feed(ann, S2C, f'{{"jsonrpc":"2.0","id":{i},"result":{{"content":[]}}}}', 2 * i + 2, session="s1", exchange=i)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 8 << 20, f"{held / 2**20:.1f} MiB held after {2 * DONE_WINDOW} answered calls"
    last = 2 * DONE_WINDOW - 1
    c = feed(ann, C2S, f'{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{last}}}}}', 10**6, session="s1", exchange=10**6)
    assert "cancel.after_response" in c.codes


def test_an_ended_stateless_exchange_takes_the_tokens_its_tasks_kept() -> None:
    """A task-creating call keeps its progress token alive after the answer
    (until the task is terminal); in a stateless exchange nothing can use it
    once the exchange ended, so it goes then, while a session's stays."""
    ann = Annotator("http")
    call = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000},'
            '"_meta":{"progressToken":"pt"}}}')
    made = '{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working","createdAt":"2025-11-25T00:00:00Z","ttl":60000}}}'
    for ex in range(1, 301):
        feed(ann, C2S, call, 2 * ex, exchange=ex)
        feed(ann, S2C, made, 2 * ex + 1, exchange=ex)
        if ex == 1:
            p = feed(ann, S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","progress":1}}', 3, exchange=1)
            assert "progress.unknown_token" not in p.codes and p.link == 2       # the task keeps its token while the exchange lasts
        ann.exchange_ended(ex)
    assert not ann.pairing._tokens and not ann.pairing._tasks
    feed(ann, C2S, call, 1000, session="s1", exchange=1000)
    feed(ann, S2C, made, 1001, session="s1", exchange=1000)
    ann.exchange_ended(1000)
    p = feed(ann, S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","progress":1}}', 1002,
             session="s1", exchange=1001)
    assert p.link == 1000 and "progress.unknown_token" not in p.codes


SAMPLE = '{"jsonrpc":"2.0","id":%s,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}'
SAMPLED = '{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}'


def test_a_client_answer_in_its_own_post_pairs_with_the_sessionless_server_request() -> None:
    """HTTP without Mcp-Session-Id (one logical client, handshake era): the
    server asks on the response stream of a tools/call POST, the client
    answers in another POST; the server's stream may even have ended (2025-11-25
    polling) before the answer. The answer pairs, nothing stays open."""
    ann = Annotator("http")
    feed(ann, C2S, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{}}}', 1, exchange=3)
    feed(ann, S2C, SAMPLE % 1, 2, exchange=3)
    feed(ann, S2C, SAMPLE % 2, 3, exchange=7)                 # on the GET stream
    ann.exchange_ended(3)
    a = feed(ann, C2S, SAMPLED % 1, 4, exchange=4)
    ann.exchange_ended(4)
    b = feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"User rejected"}}', 5, exchange=5)
    again = feed(ann, C2S, SAMPLED % 1, 6, exchange=6)
    r = feed(ann, S2C, '{"jsonrpc":"2.0","id":5,"result":{"content":[]}}', 7, exchange=3)
    assert (a.pair, b.pair, r.pair) == (2, 3, 1) and a.codes == [] and b.codes == [] and r.codes == []
    assert again.codes == ["jsonrpc.response_for_completed_id"]
    nxt = feed(ann, S2C, SAMPLE % 1, 8, exchange=9)           # unique among open requests: a later request may take the id again
    assert "jsonrpc.id_reused" not in nxt.codes
    assert feed(ann, C2S, SAMPLED % 1, 9, exchange=10).pair == 8
    assert ann.pending() == [] and ann.finish(10) == []


def test_two_open_sessionless_server_requests_with_one_id_are_ambiguous() -> None:
    ann = Annotator("http")
    feed(ann, S2C, SAMPLE % 1, 1, exchange=1)
    second = feed(ann, S2C, SAMPLE % 1, 2, exchange=2)
    answer = feed(ann, C2S, SAMPLED % 1, 3, exchange=3)
    assert "jsonrpc.duplicate_id_in_flight" in second.codes
    assert answer.pair == 1 and answer.codes == ["jsonrpc.ambiguous_pairing"]
    assert feed(ann, C2S, SAMPLED % 1, 4, exchange=4).pair == 2


def test_a_2026_server_request_is_not_paired_across_exchanges() -> None:
    """2026-07-28 has no server-to-client requests: one is flagged, and an
    answer in another exchange (another stateless client's) answers nothing."""
    ann = Annotator("http")
    feed(ann, C2S, f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ask","arguments":{{}},{META}}}}}', 1, exchange=1)
    req = feed(ann, S2C, SAMPLE % 1, 2, exchange=1)
    answer = feed(ann, C2S, SAMPLED % 1, 3, exchange=2)
    assert "lifecycle.wrong_era" in req.codes
    assert answer.pair is None and "jsonrpc.unmatched_response" in answer.codes
    assert [p.seq for p in ann.pending()] == [1, 2]


def test_a_sessionless_client_cancels_in_its_own_post_a_request_of_another_exchange() -> None:
    """Handshake era without Mcp-Session-Id: the client's notifications/cancelled
    travels in a POST of its own and names the request another exchange carries:
    it is cancelled (so not reported unanswered when its stream closes). Two
    open requests with that id (independent clients) stay undecided, and a
    2026-07-28 client cancels by closing the stream, not across exchanges."""
    ann = Annotator("http")
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"timeout"}}'
    feed(ann, C2S, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}', 1, exchange=1)
    c = feed(ann, C2S, cancel % 5, 2, exchange=2)
    assert c.codes == ["cancel.request"] and c.link == 1
    assert ann.pending() == [] and ann.finish(3) == []

    ann = Annotator("http")
    feed(ann, C2S, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}', 1, exchange=1)
    feed(ann, C2S, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}', 2, exchange=2)
    feed(ann, C2S, f'{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"slow","arguments":{{}},{META}}}}}', 3, exchange=3)
    assert feed(ann, C2S, cancel % 5, 4, exchange=4).codes == ["cancel.unknown_request"]
    assert feed(ann, C2S, cancel % 6, 5, exchange=5).codes == ["cancel.unknown_request"]
    assert [p.seq for p in ann.pending()] == [1, 2, 3]


INIT = ('{"jsonrpc":"2.0","id":1,"method":"initialize",'
        '"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
INIT_OK = '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
LOG = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}'


def test_sessionless_exchanges_after_a_handshake_share_its_lifecycle_and_capabilities() -> None:
    """Stateless server, handshake-era client: the exchanges after initialize
    carry its phase and revision, and a notifications/message from a server
    that did not declare logging is flagged as on a stateful session; ids
    still pair per exchange, and a 2026-07-28 exchange keeps its own era."""
    ann = Annotator("http")
    feed(ann, C2S, INIT, 1, exchange=1)
    feed(ann, S2C, INIT_OK, 2, exchange=1)
    ann.exchange_ended(1)
    note = feed(ann, C2S, '{"jsonrpc":"2.0","method":"notifications/initialized"}', 3, exchange=2)
    ann.exchange_ended(2)
    call = feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}', 4, exchange=3)
    other = feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 5, exchange=4)     # another POST reusing id 2
    log = feed(ann, S2C, LOG, 6, exchange=3)
    res = feed(ann, S2C, '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}', 7, exchange=3)
    modern = feed(ann, C2S, f'{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{META}}}}}', 8, exchange=5)
    assert note.codes == [] and call.codes == [] and other.codes == []
    assert (call.phase, call.revision) == (Phase.OPERATING, "2025-06-18")
    assert "capability.not_negotiated" in log.codes
    assert res.pair == 4 and not res.codes
    assert (modern.phase, modern.revision) == (Phase.STATELESS, "2026-07-28") and modern.codes == []


def test_sessionless_exchanges_before_any_handshake_stay_standalone() -> None:
    """Without an initialize seen (the tap joined late, or a 2026-07-28
    client), an exchange has no lifecycle to follow: nothing is flagged."""
    ann = Annotator("http")
    call = feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}', 1, exchange=1)
    log = feed(ann, S2C, LOG, 2, exchange=1)
    assert call.codes == [] and log.codes == [] and call.phase is None
