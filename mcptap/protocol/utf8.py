"""UTF-8 validity of large byte strings without a decoded copy (pure).

``is_utf8(data)``: True when ``data`` decodes as UTF-8 (bytes, any length).
It decodes in 1 MiB pieces through an incremental decoder, so the peak memory
is one piece's text, not the whole string's: used for multi-MiB payloads
(capture/pieces.py, protocol/skeleton.py, protocol/sse_canonical.py).
``LazyText(parts)``: the text of some bytes, made only when asked for (the
capture writer encodes it in pieces instead).
"""

from __future__ import annotations

import codecs

#: bytes decoded at a time
PIECE = 1 << 20


def is_utf8(data: bytes | bytearray | memoryview) -> bool:
    """``data`` decodes as UTF-8 (checked in ``PIECE``-byte pieces)."""
    if isinstance(data, (bytes, bytearray)) and data.isascii():
        return True
    dec = codecs.getincrementaldecoder("utf-8")()
    with memoryview(data) as view:
        try:
            for k in range(0, len(view), PIECE):
                dec.decode(view[k:k + PIECE], False)
            dec.decode(b"", True)
        except UnicodeDecodeError:
            return False
    return True


class LazyText:
    """The text of ``parts`` (bytes, each decoded on its own, U+FFFD for bad
    bytes), not made until asked for: ``str(lazy)``, or ``text_pieces`` (the
    JSON string body in pieces, ``capture.pieces``), which never holds it whole.
    An SSE event's exact bytes in its message record (``transport.sse.raw``)
    around a multi-MiB payload the record holds already (``sse_canonical.big_data``)."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[bytes | bytearray | memoryview, ...]) -> None:
        self.parts = parts

    def __str__(self) -> str:
        return "".join(str(p, "utf-8", "replace") for p in self.parts)

    def __len__(self) -> int:
        """Bytes of the parts (an upper bound of the text's length)."""
        return sum(map(len, self.parts))

    def __repr__(self) -> str:
        return f"LazyText({len(self)} bytes)"
