"""protocol/skeleton.py ``_literal_ok``: a long string literal is accepted
exactly when orjson accepts it, whatever the pieces it is checked in; ASCII
pieces that need no escape are accepted without orjson's parse."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.protocol import skeleton

#: the bytes that decide a literal: controls, DEL, backslash escapes (valid and not), quotes, UTF-8 and invalid bytes
_ALPHABET = [b"a", b"Z", b" ", b"\x00", b"\x1f", b"\x7f", b"\t", b"\n", b"\\", b'\\"', b"\\n", b"\\u0041", b"\\ud800",
             b"\\x", b'"', "é".encode(), "😀".encode(), b"\xff", b"\xc3"]


def _orjson_ok(body: bytes) -> bool:
    try:
        orjson.loads(b'"' + body + b'"')
    except orjson.JSONDecodeError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(_ALPHABET), max_size=40), piece=st.integers(1, 9), pad=st.integers(0, 3))
def test_accepted_exactly_as_orjson_accepts_the_whole(parts: list[bytes], piece: int, pad: int) -> None:
    body = b"".join(parts)
    raw = b"x" * pad + b'"' + body + b'"' + b"}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(skeleton, "PIECE", piece)
        got = skeleton._literal_ok(raw, pad, pad + len(body) + 2)
    # accepted only where orjson accepts the whole literal (a refusal where it would not is the
    # piece check's own caution: a piece cut inside an escape, ``_safe_cut``; the other test pins it)
    if got:
        assert _orjson_ok(body)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=64), piece=st.integers(1, 9))
def test_any_bytes_same_verdict_as_the_orjson_piece_check(body: bytes, piece: int) -> None:
    raw = b'"' + body.replace(b'"', b"'") + b'"'

    def by_orjson(raw: bytes, s: int, e: int) -> bool:
        # the check before the fast path: every piece through orjson
        pos, end = s + 1, e - 1
        while pos < end:
            cut = skeleton._safe_cut(raw, pos + skeleton.PIECE, end)
            if cut is None:
                return False
            if not _orjson_ok(raw[pos:cut]):
                return False
            pos = cut
        return True

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(skeleton, "PIECE", piece)
        assert skeleton._literal_ok(raw, 0, len(raw)) == by_orjson(raw, 0, len(raw))


def test_plain_ascii_pieces_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = orjson.loads

    class Counting:
        JSONDecodeError = orjson.JSONDecodeError
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(data: object) -> object:
            calls.append(1)
            return real(data)        # type: ignore[arg-type]

    monkeypatch.setattr(skeleton, "orjson", Counting)
    monkeypatch.setattr(skeleton, "PIECE", 16)
    raw = b'{"data":"' + b"x" * 200 + b'"}'
    assert skeleton._literal_ok(raw, 8, len(raw) - 1)
    assert calls == []
    bad = b'{"data":"' + b"x" * 100 + b"\x01" + b"x" * 99 + b'"}'
    assert not skeleton._literal_ok(bad, 8, len(bad) - 1)
    assert len(calls) == 1       # the piece with the control character: refused by orjson
    calls.clear()
    escaped = b'{"data":"' + b"x" * 100 + b"\\n" + b"x" * 98 + b'"}'
    assert skeleton._literal_ok(escaped, 8, len(escaped) - 1)
    assert len(calls) == 1       # only the piece with the escape
