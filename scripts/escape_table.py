"""Print ``mcptap/escape.py``'s ``_TABLE``: the code point ranges of the Unicode
general categories Cc, Cf, Cs, Co, Cn, Zl and Zp, from this Python's
``unicodedata`` (paste it over the table and its ``UNICODE_VERSION`` when
moving the table to a newer Unicode; tests/test_escape.py checks it)."""

from __future__ import annotations

import sys
import unicodedata

CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def ranges() -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = None
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) in CATEGORIES:
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return out


def table() -> str:
    toks = [f"{a:04x}" if a == b else f"{a:04x}-{b:04x}" for a, b in ranges()]
    lines, line = [], ""
    for t in toks:
        if len(line) + len(t) + 1 > 110:
            lines.append(line)
            line = ""
        line += t + " "
    lines.append(line)
    return f'UNICODE_VERSION = "{unicodedata.unidata_version}"\n_TABLE = (\n' + "".join(f'    "{x}"\n' for x in lines) + ")\n"


if __name__ == "__main__":
    sys.stdout.write(table())
