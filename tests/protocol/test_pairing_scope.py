"""Pairing scopes: stdio is one session; HTTP pairs by Mcp-Session-Id, and
sessionless (stateless) HTTP by exchange, so independent clients reusing ids
are not flagged."""

from __future__ import annotations

from mcptap.model import Direction, Frame
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.framing import parse_json

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
