"""UTF-8 validity of large byte strings without a decoded copy (pure).

``is_utf8(data)``: True when ``data`` decodes as UTF-8 (bytes, any length).
It decodes in 1 MiB pieces through an incremental decoder, so the peak memory
is one piece's text, not the whole string's: used for multi-MiB payloads
(capture/pieces.py, protocol/skeleton.py, protocol/sse_canonical.py).
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
