"""Ids in finding messages and in the timeline are JSON text, the same in
both: null (not None), "abc" (JSON string escapes, not a Python repr), a
number beyond any double (1e400) as 1e400 (not inf, and not null). A result
with id null is its own finding (jsonrpc.result_id_null), not an "error"."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.model import Direction, Frame
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import parse_json
from mcptap.protocol.jsonrpc import show_id
from scripted import c2s, handshake, record, s2c

C2S, S2C = Direction.C2S, Direction.S2C
PYTHON_REPR = re.compile(r"\bNone\b|NoneType|\binf\b|'")


def feed(ann, d, text, seq):
    raw = text.encode()
    v, bad = parse_json(raw)
    return ann.feed(Frame(raw, 0, True, v, bad), seq, seq, d)


def test_show_id_is_json_text() -> None:
    assert [show_id(v) for v in (None, True, 7, 1.5, "a\x1bb", 'x"y', [1], float("inf"), float("-inf"), 10**30)] == \
        ["null", "true", "7", "1.5", '"a\\u001bb"', '"x\\"y"', "[1]", "1e400", "-1e400", str(10**30)]


def test_finding_messages_show_ids_as_json() -> None:
    ann = Annotator("stdio")
    out = []
    lines = [(C2S, '{"jsonrpc":"2.0","id":null,"method":"tools/list"}'), (C2S, '{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}'),
             (C2S, '{"jsonrpc":"2.0","id":"a\\u001bb","method":"ping"}'), (C2S, '{"jsonrpc":"2.0","id":1.5,"method":"ping"}'),
             (S2C, '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}'), (S2C, '{"jsonrpc":"2.0","id":"1.5","result":{}}'),
             (S2C, '{"jsonrpc":"2.0","id":-1e400,"result":{}}'), (C2S, '{"jsonrpc":"2.0","id":1e400,"method":"ping"}'),
             (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t\'","progress":1}}')]
    for seq, (d, text) in enumerate(lines, 1):
        out += [f.message for f in feed(ann, d, text, seq).findings]
    out += [f.message for f in ann.eof(S2C, 100)]
    assert not [m for m in out if PYTHON_REPR.search(m.replace("t'", ""))], out
    for want in ("tools/list: request id null must be a string or an integer", "tools/list: request id 1e400 (number) must be",
                 'request(s) null, 1e400, "a\\u001bb", 1.5 stay unanswered', 'response id "1.5" (string) answers request #4 whose id is 1.5 (number)',
                 "response id -1e400 matches no request", "id 1e400 already in flight", 'progress token "t\'" belongs to no active request',
                 'id=1e400, #3 ping id="a\\u001bb"'):
        assert any(want in m for m in out), (want, out)


def test_a_result_with_id_null_is_not_called_an_error() -> None:
    ann = Annotator("stdio")
    feed(ann, C2S, '{"jsonrpc":"2.0","id":2,"method":"ping"}', 1)
    r = feed(ann, S2C, '{"jsonrpc":"2.0","id":null,"result":{}}', 2)
    n = feed(ann, S2C, '{"jsonrpc":"2.0","result":{}}', 3)
    e = feed(ann, S2C, '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}', 4)
    assert r.codes == ["jsonrpc.result_id_null"] and r.findings[0].message.startswith("result with id null answers no request")
    assert "request(s) 2 stay unanswered" in r.findings[0].message
    assert n.codes == ["jsonrpc.result_id_null"] and n.findings[0].message.startswith("result with no id answers no request")
    assert e.codes == ["jsonrpc.error_id_null"] and e.findings[0].message.startswith("error -32603 with id null answers no request")


def test_timeline_and_findings_show_the_same_id(tmp_path: Path) -> None:
    """`show`: a 1e400 id is 1e400 on the message's line and in its findings
    (the record's ``id`` is null: JSON has no infinity), and "3" a JSON string."""
    cap = record(tmp_path / "c.jsonl", handshake() + [c2s(b'{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}\n'),
                                                      c2s(b'{"jsonrpc":"2.0","id":"3","method":"ping"}\n'),
                                                      s2c(b'{"jsonrpc":"2.0","id":1e400,"result":{"tools":[]}}\n')])
    out = CliRunner().invoke(mcptap, ["show", "--no-color", str(cap)], catch_exceptions=False).output
    line4 = next(x for x in out.splitlines() if x.split()[:1] == ["4"])
    line6 = next(x for x in out.splitlines() if x.split()[:1] == ["6"])
    assert "tools/list id=1e400" in line4 and "tools/list id=1e400" in line6, out
    assert "request id 1e400 (number)" in out and "response id 1e400 (number)" in out
    assert 'ping id="3"' in out and "ping id=\"3\" from the client was never answered" in out
    assert not PYTHON_REPR.search(out), out
