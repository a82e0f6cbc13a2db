"""records/refusals.py: an old HTTP capture's tap refusals (no ``refused`` marker) found from
the tap's own ``end`` record, with a bounded look-ahead that keeps the records' order."""

from __future__ import annotations

from typing import Any

from mcptap.records.refusals import mark_refusals, refused_how


def _req(ex: int, **kw: Any) -> dict[str, Any]:
    return {"type": "http", "event": "request", "exchange": ex, "method": "POST", "target": "/mcp", **kw}


def _msg(ex: int, seq: int, d: str = "c2s") -> dict[str, Any]:
    return {"type": "message", "seq": seq, "dir": d, "kind": "request", "transport": {"exchange": ex, "method": "POST", "path": "/mcp"}}


def _end(ex: int, how: str) -> dict[str, Any]:
    return {"type": "http", "event": "end", "exchange": ex, "how": how}


def _resp(ex: int) -> dict[str, Any]:
    return {"type": "http", "event": "response", "exchange": ex, "status": 200}


def test_a_refused_exchange_is_marked_among_others_in_order() -> None:
    records = [_req(1), _req(2), _msg(2, 3), _msg(1, 4), _resp(2), _end(1, "host_rejected"), _msg(2, 7, "s2c"), _end(2, "complete")]
    out = list(mark_refusals(records))
    assert [r.get("seq", r.get("event")) for r in out] == [r.get("seq", r.get("event")) for r in records]
    assert [refused_how(r) for r in out] == ["host_rejected", None, None, "host_rejected", None, None, None, None]
    assert "refused" not in records[0] and "refused" not in records[3]["transport"]     # copies marked, not the records given


def test_each_refusal_of_the_table_and_no_other_end() -> None:
    for how, marked in (("request_rejected", True), ("auth_not_fronted", True), ("upstream_failed", False), ("client_closed", False)):
        out = list(mark_refusals([_req(5), _end(5, how)]))
        assert refused_how(out[0]) == (how if marked else None)


def test_an_end_past_the_window_is_not_a_refusal_and_records_are_not_held_longer() -> None:
    others = [{"type": "gap", "seq": i} for i in range(10)]
    out = list(mark_refusals([_req(1), *others, _end(1, "host_rejected")], window=4))
    assert refused_how(out[0]) is None and len(out) == 12
    it = mark_refusals(iter([_req(1), *others]), window=4)
    assert next(it) == _req(1)      # released once the window passed, before the input ends


def test_a_marked_capture_passes_through() -> None:
    records = [_req(1, refused="host_rejected"), _end(1, "host_rejected"), _req(2), _resp(2)]
    assert list(mark_refusals(records)) == records
