"""An HTTP message's SSE event bytes (``transport.sse.raw``) after its payload
was scrubbed (pure).

The tap keeps an event's exact text when it differs from the SDK layout (CR LF
line ends, ``data:`` without a space, comments, several data lines); that text
holds the message's payload a second time, and ``export --format har`` uses it
as the response content. So it must say what the scrubbed message says:
``rewrite`` puts the scrubbed payload in its ``data`` lines (each line keeps its
own ``data:`` prefix and line end) and passes every other line (``id``,
``event``, comments) through the string patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: one SSE line and its end (CR LF, LF or CR; none at the end of the text)
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
#: a data line's prefix: the field name, its colon and the one space a reader drops
_DATA = re.compile(r"\ufeff?data(?::[ ]?|$)")


def rewrite(raw: str, payload: str | None, other: Callable[[str], str]) -> str:
    """``raw`` (one SSE event's text) with its data lines carrying ``payload``
    (the event's data as the scrubbed message holds it; None: keep the data
    lines as they are) and every other line passed through ``other``. When
    ``payload`` has as many lines as the event has data lines, each line is
    replaced in place; otherwise all of it goes where the first data line was
    (with that line's prefix and end) and the other data lines are dropped.
    An event without a data line is passed through ``other`` whole."""
    lines: list[tuple[str, str]] = []
    pos = 0
    while pos < len(raw):
        m = _LINE.match(raw, pos)
        assert m is not None      # the pattern matches anywhere (possibly empty)
        lines.append((m.group(1), m.group(2)))
        pos = m.end()
    data = [i for i, (body, _) in enumerate(lines) if _DATA.match(body)]
    if not data:
        return other(raw)
    new = payload.split("\n") if payload is not None else None
    slot = {i: n for n, i in enumerate(data)}
    out: list[str] = []
    for i, (body, end) in enumerate(lines):
        m = _DATA.match(body)
        if m is None:
            out.append(other(body) + end)
        elif new is None:
            out.append(body + end)
        elif len(new) == len(data):
            out.append(body[:m.end()] + new[slot[i]] + end)
        elif i == data[0]:
            prefix = body[:m.end()] if body[m.end() - 1:m.end()] in (":", " ") else body + ":"
            out.extend(prefix + piece + (end if n == len(new) - 1 else end or "\n") for n, piece in enumerate(new))
    return "".join(out)
