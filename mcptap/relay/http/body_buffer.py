"""A body the HTTP observer collects chunk by chunk (pure).

``bytes(bytearray)`` copies: a 64 MiB POST or JSON response collected in a
bytearray was held twice at the moment it became the message's bytes. A
``BodyBuffer`` collects in an ``io.BytesIO``, whose ``getvalue`` hands its own
buffer over as ``bytes`` without a copy (CPython), so the body is held once.
"""

from __future__ import annotations

import io


class BodyBuffer:
    """Bytes appended with ``+=``; ``take()`` returns them all (and empties the
    buffer), ``value()`` returns them and keeps them, ``head(n)`` the first ``n``."""

    __slots__ = ("_io",)

    def __init__(self) -> None:
        self._io = io.BytesIO()

    def __iadd__(self, data: bytes) -> BodyBuffer:
        self._io.write(data)
        return self

    def __len__(self) -> int:
        return self._io.tell()

    def __bool__(self) -> bool:
        return self._io.tell() > 0

    def take(self) -> bytes:
        data = self._io.getvalue()       # the BytesIO's own buffer (no copy) ...
        self._io = io.BytesIO()          # ... which it no longer writes to
        return data

    def value(self) -> bytes:
        return self._io.getvalue()

    def head(self, n: int) -> bytes:
        return self._io.getvalue()[:n]
