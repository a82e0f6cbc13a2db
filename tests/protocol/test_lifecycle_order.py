"""The order of the handshake's messages: the client's
notifications/initialized before the initialize response is early (flagged
on the notification), and it was sent, so the client operating afterwards is
not "initialized missing"; when that initialize fails, the early notification
initialized nothing."""

from __future__ import annotations

from mcptap.model import Direction, Frame, Phase
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import parse_json

C2S, S2C = Direction.C2S, Direction.S2C
INIT = '{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
INITED = '{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
NOTE = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def feed(ann, d, text, seq):
    raw = text.encode()
    v, bad = parse_json(raw)
    return ann.feed(Frame(raw, 0, True, v, bad), seq, seq, d)


def test_initialized_before_the_initialize_response_is_early_not_missing() -> None:
    ann = Annotator("stdio")
    feed(ann, C2S, INIT % 1, 1)
    early = feed(ann, C2S, NOTE, 2)
    feed(ann, S2C, INITED % 1, 3)
    call = feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 4)
    asked = feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"method":"roots/list"}', 5)
    assert early.codes == ["lifecycle.initialized_early"] and "#1" in early.findings[0].message
    assert call.codes == [] and call.phase is Phase.OPERATING
    assert "lifecycle.server_request_before_initialized" not in asked.codes


def test_an_early_initialized_of_a_failed_initialize_initializes_nothing() -> None:
    ann = Annotator("stdio")
    feed(ann, C2S, INIT % 1, 1)
    assert feed(ann, C2S, NOTE, 2).codes == ["lifecycle.initialized_early"]
    feed(ann, S2C, '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unsupported"}}', 3)
    feed(ann, C2S, INIT % 2, 4)
    feed(ann, S2C, INITED % 2, 5)
    call = feed(ann, C2S, '{"jsonrpc":"2.0","id":3,"method":"tools/list"}', 6)
    assert call.codes == ["lifecycle.initialized_missing"]


def test_initialized_after_the_response_is_in_order() -> None:
    ann = Annotator("stdio")
    feed(ann, C2S, INIT % 1, 1)
    feed(ann, S2C, INITED % 1, 2)
    assert feed(ann, C2S, NOTE, 3).codes == []
    assert feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', 4).codes == []
