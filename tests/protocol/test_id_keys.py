"""Pairing keys of JSON-RPC ids (protocol/jsonrpc.id_key): integers and
strings are their own keys (no allocation on the hot path), every other id a
tagged tuple. The equivalence they define must stay the one of the tagged
form the pairing table always used: ``1`` = ``1.0``, ``"1"`` ≠ ``1``,
``true`` ≠ ``1``, ``null`` its own (property test against that form)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcptap.model import Direction
from mcptap.protocol.jsonrpc import id_key, loose_id_key
from mcptap.protocol.pairing import Pairing, Pending


def tagged_key(v: Any) -> tuple[str, Any]:
    """The tagged form of the key (the reference)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("n", v)
    if isinstance(v, float):
        return ("n", int(v)) if v.is_integer() else ("f", v)
    if isinstance(v, str):
        return ("s", v)
    return ("o", repr(v))


ids = st.one_of(st.integers(), st.integers(-3, 3).map(str), st.text(max_size=3), st.booleans(), st.none(),
                st.floats(allow_nan=False), st.integers(-3, 3).map(float), st.lists(st.integers(0, 2), max_size=2))


@given(ids, ids)
def test_same_key_exactly_when_the_tagged_keys_are_equal(a: Any, b: Any) -> None:
    assert (id_key(a) == id_key(b)) == (tagged_key(a) == tagged_key(b))
    if id_key(a) == id_key(b):
        assert hash(id_key(a)) == hash(id_key(b))


@given(ids, ids)
def test_a_response_pairs_exactly_when_the_tagged_keys_are_equal(req: Any, resp: Any) -> None:
    pairing = Pairing()
    pairing.request(Pending(1, 0, Direction.C2S, req, "tools/call"), unique_per_session=True)
    p, _ = pairing.response(None, Direction.S2C, resp)
    exact = tagged_key(req) == tagged_key(resp)
    assert (p is not None) == (exact or loose_id_key(req) == loose_id_key(resp))
    if exact:
        assert p is not None and p.seq == 1


def test_the_hot_path_keys() -> None:
    assert id_key(7) == 7 and id_key("7") == "7" and id_key(7.0) == 7
    assert id_key(True) != id_key(1) and id_key(None) != id_key("None")
