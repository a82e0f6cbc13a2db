"""Percent-encoded text as the patterns should read it (pure).

A secret inside a URL's query value or a form body is often percent-encoded once more
(``?next=%2Fhome%3Fpassword%3Dhunter2``, ``Authorization%3A%20Bearer%20…``,
``redirect=https%3A%2F%2Fh%2Fcb%3Fcode%3D…``): no pattern matched it as written.
``view(text)`` is the text decoded (``%XX`` of an ASCII byte becomes that character, ``+``
a space, as in a form) with, for each character of the view, where it came from in
``text``, so a secret found in the view is replaced where it is written. ``%XX`` of a
byte beyond ASCII stays as written (part of a UTF-8 sequence; and a placeholder's ``«»``
cannot be forged by encoding them).
"""

from __future__ import annotations

import re
from array import array

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_DECODE = re.compile(r"%([0-9A-Fa-f]{2})|\+")


def view(text: str) -> tuple[str, array[int]] | None:
    """``(decoded, at)``: ``at[i]`` is the offset in ``text`` of the view's character
    ``i`` (``at[len(decoded)] == len(text)``); None when ``text`` has no ``%XX`` escape.
    Linear in ``text``."""
    if _ESCAPE.search(text) is None:
        return None
    parts: list[str] = []
    at: array[int] = array("q")
    pos = 0
    for m in _DECODE.finditer(text):
        hexa = m.group(1)
        if hexa is None:
            ch = " "
        else:
            b = int(hexa, 16)
            if b >= 0x80:
                continue      # copied as written with the text after it
            ch = chr(b)
        if m.start() > pos:
            parts.append(text[pos:m.start()])
            at.extend(range(pos, m.start()))
        parts.append(ch)
        at.append(m.start())
        pos = m.end()
    parts.append(text[pos:])
    at.extend(range(pos, len(text) + 1))
    return "".join(parts), at
