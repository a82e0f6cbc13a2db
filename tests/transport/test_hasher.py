"""transport/hasher.py: the background digest equals hashlib's for any mix of sizes."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.transport import hasher
from mcptap.transport.hasher import BackgroundSha

sizes = st.lists(st.sampled_from([0, 1, 100, hasher.OFFLOAD_FROM - 1, hasher.OFFLOAD_FROM, 200_000]), max_size=20)


@settings(max_examples=60, deadline=None)
@given(sizes, st.integers(0, 255))
def test_same_digest_as_hashlib_in_order(lengths: list[int], seed: int) -> None:
    ref, bg, other = hashlib.sha256(), BackgroundSha(), BackgroundSha()
    for i, n in enumerate(lengths):
        data = bytes((seed + i + k) % 251 for k in range(min(n, 300))) * (n // 300 + 1)
        data = data[:n]
        ref.update(data)
        bg.update(data)
        other.update(data[::-1])          # a second stream interleaved on the same worker
    assert bg.hexdigest() == ref.hexdigest()
    assert bg.done == bg.submitted


def test_a_full_queue_waits_for_the_worker(monkeypatch) -> None:
    monkeypatch.setattr(hasher, "QUEUE_LIMIT", 1)
    ref, bg = hashlib.sha256(), BackgroundSha()
    for k in range(50):
        data = bytes([k]) * 100_000
        ref.update(data)
        bg.update(data)
    assert bg.hexdigest() == ref.hexdigest()
