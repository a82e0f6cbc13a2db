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
from urllib.parse import unquote_plus

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
#: a ``name=`` of a URL query, fragment (OAuth's ``#access_token=``) or form body: after ``?``/``&``/``#``
#: (``;`` as some servers split)
FORM_PAIR_BEFORE = "?&;#"
#: a whole form body (``a=1&b=2``): its first pair is a form pair too
_FORM_BODY = re.compile(r"[^\s=&]+=[^\s&]*(?:&[^\s=&]+=[^\s&]*)+")


def form_decode(value: str) -> str:
    """A query or form value as the server reads it (``%XX`` decoded as UTF-8, ``+`` a space):
    the secret whose placeholder it gets, so one secret has one placeholder whether it is
    written in a URL, a form body or plainly in a message. ``value`` itself without escapes."""
    return unquote_plus(value) if "%" in value or "+" in value else value


def in_form_pair(text: str, name_start: int) -> bool:
    """True when the ``name=`` at ``name_start`` of ``text`` is a pair of a URL query or form
    body: after ``?``/``&``/``;``/``#``, or first in a text that is a whole form body (``a=1&b=2``)."""
    if name_start > 0:
        return text[name_start - 1] in FORM_PAIR_BEFORE
    return _FORM_BODY.fullmatch(text) is not None
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
