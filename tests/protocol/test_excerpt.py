"""Excerpts of peer text in finding messages never cut a keyed placeholder
(protocol/excerpt.py): findings are made again from scrubbed captures, where a
cut ``«redacted:hmac:…»`` would read as another value."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcptap.compare.paths import short
from mcptap.protocol.excerpt import CLOSE, OPEN, clip
from mcptap.protocol.sse import parse_all
from mcptap.protocol.sse_rules import sse_findings
from mcptap.show.values import shorten

PH = "«redacted:hmac:0123456789ab»"


def test_a_cut_inside_a_placeholder_keeps_it_whole() -> None:
    text = "debug api_key=" + PH + " tail"
    for n in range(len("debug api_key=") + 1, len("debug api_key=") + len(PH)):
        assert clip(text, n) == "debug api_key=" + PH
    assert clip(text, 5) == "debug"
    assert clip(text, len("debug api_key=" + PH) + 2) == "debug api_key=" + PH + " t"
    assert clip("a«redacted:never closed" + "x" * 200, 5) == "a«red"      # no closing mark near: a plain cut
    assert short("k=" + PH + "zzzzzzzz", 10) == "'k=" + PH + "…"
    assert shorten("x" * 3 + PH + "y" * 40, 8) == "xxx" + PH + "…"


@given(st.lists(st.one_of(st.text(max_size=30).map(lambda s: s.replace("«", "").replace("»", "")), st.just(PH)), max_size=8),
       st.integers(min_value=0, max_value=200))
def test_clip_is_a_prefix_that_never_ends_inside_a_placeholder(parts: list[str], n: int) -> None:
    text = "".join(parts)
    out = clip(text, n)
    assert text.startswith(out)
    assert len(out) >= min(n, len(text))
    assert out.count(OPEN) == out.count(CLOSE)


def test_an_sse_comment_finding_of_a_scrubbed_stream_shows_its_placeholder_whole() -> None:
    events = parse_all((": debug api_key=" + PH + "\ndata: {}\n\n").encode())
    (f,) = [f for ev in events for f in sse_findings(ev) if f.code == "sse.comment"]
    assert PH in f.message, f.message
