"""Make peer-controlled text safe to print on a terminal (level 0, pure).

A peer decides method names, tool names, error messages, stderr, ids and
session ids. Printed raw, an ``ESC [1A ESC [2K CR`` in a method name moves the
cursor up and erases the finding about it: a server could hide its own
misbehaviour from ``show`` and ``check``. Every human-readable renderer passes
peer text through :func:`escape_controls` before it reaches a line, and adds
its own colour codes only afterwards.

What is escaped: every character of the Unicode general categories Cc
(C0 and C1 controls, DEL: U+009B is a one-byte CSI on some terminals; TAB, CR
and LF too), Cf (format characters: the bidirectional controls U+061C,
U+200E/F, U+202A–U+202E, U+2066–U+2069 of "Trojan Source", zero-width
characters, the BOM, soft hyphen, tag characters), Zl/Zp (the line and
paragraph separators), Co (private use), Cn (unassigned code points and the
noncharacters such as U+FFFE/U+FFFF) and Cs: lone surrogates (a peer's JSON
escape ``"\\ud800"``; how Python holds a file name's bytes that are not UTF-8,
U+DC80–U+DCFF, PEP 383), which no terminal encoding can write. They become
Python-style escapes: ``\\x1b``, ``\\x9b``, ``\\r``, ``\\n``, ``\\t``,
``\\u202e``, ``\\U000e0001``, a lone surrogate ``\\ud800`` / ``\\udcff``, as
JSON and ``id_text`` write it. Text from the operating system (file names)
goes through :func:`escape_os` instead, where ``\\x`` is always one byte (a
file name's ``\\xff``) and ``\\u`` a character (``\\u009b``): a file name's
undecodable byte and a peer's lone surrogate never look alike. So are the characters
that draw nothing but are letters or marks (``INVISIBLE``: the Hangul
fillers U+115F, U+1160, U+3164, U+FFA0 and the braille blank U+2800, which
pass for an empty or a space-padded name; the combining grapheme joiner and
the other default-ignorable marks; the variation selectors U+FE00–U+FE0D and
U+E0100–U+E01EF, in which a tool description can hide a message a model reads
and a terminal does not show). Other text, including non-ASCII letters and
emoji (with their presentation selectors U+FE0E/U+FE0F), is left as it is.

The categories come from a table (``_TABLE``, Unicode ``UNICODE_VERSION``,
printed by ``scripts/escape_table.py``) rather than ``unicodedata`` at run
time: the check is one regular expression search in C, and a table of an
older Unicode than the running Python's still escapes every character the
newer one puts in these categories (a newly assigned format character was
unassigned before), at worst escaping a few newly assigned letters too.
"""

from __future__ import annotations

import re
from bisect import bisect_right

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

#: The code points of the categories escaped (module doc): ``XXXX`` or ``XXXX-YYYY``, hex.
UNICODE_VERSION = "14.0.0"
_TABLE = (
    "0000-001f 007f-009f 00ad 0378-0379 0380-0383 038b 038d 03a2 0530 0557-0558 058b-058c 0590 05c8-05cf 05eb-05ee "
    "05f5-0605 061c 06dd 070e-070f 074b-074c 07b2-07bf 07fb-07fc 082e-082f 083f 085c-085d 085f 086b-086f 088f-0897 "
    "08e2 0984 098d-098e 0991-0992 09a9 09b1 09b3-09b5 09ba-09bb 09c5-09c6 09c9-09ca 09cf-09d6 09d8-09db 09de "
    "09e4-09e5 09ff-0a00 0a04 0a0b-0a0e 0a11-0a12 0a29 0a31 0a34 0a37 0a3a-0a3b 0a3d 0a43-0a46 0a49-0a4a 0a4e-0a50 "
    "0a52-0a58 0a5d 0a5f-0a65 0a77-0a80 0a84 0a8e 0a92 0aa9 0ab1 0ab4 0aba-0abb 0ac6 0aca 0ace-0acf 0ad1-0adf "
    "0ae4-0ae5 0af2-0af8 0b00 0b04 0b0d-0b0e 0b11-0b12 0b29 0b31 0b34 0b3a-0b3b 0b45-0b46 0b49-0b4a 0b4e-0b54 "
    "0b58-0b5b 0b5e 0b64-0b65 0b78-0b81 0b84 0b8b-0b8d 0b91 0b96-0b98 0b9b 0b9d 0ba0-0ba2 0ba5-0ba7 0bab-0bad "
    "0bba-0bbd 0bc3-0bc5 0bc9 0bce-0bcf 0bd1-0bd6 0bd8-0be5 0bfb-0bff 0c0d 0c11 0c29 0c3a-0c3b 0c45 0c49 0c4e-0c54 "
    "0c57 0c5b-0c5c 0c5e-0c5f 0c64-0c65 0c70-0c76 0c8d 0c91 0ca9 0cb4 0cba-0cbb 0cc5 0cc9 0cce-0cd4 0cd7-0cdc 0cdf "
    "0ce4-0ce5 0cf0 0cf3-0cff 0d0d 0d11 0d45 0d49 0d50-0d53 0d64-0d65 0d80 0d84 0d97-0d99 0db2 0dbc 0dbe-0dbf "
    "0dc7-0dc9 0dcb-0dce 0dd5 0dd7 0de0-0de5 0df0-0df1 0df5-0e00 0e3b-0e3e 0e5c-0e80 0e83 0e85 0e8b 0ea4 0ea6 "
    "0ebe-0ebf 0ec5 0ec7 0ece-0ecf 0eda-0edb 0ee0-0eff 0f48 0f6d-0f70 0f98 0fbd 0fcd 0fdb-0fff 10c6 10c8-10cc "
    "10ce-10cf 1249 124e-124f 1257 1259 125e-125f 1289 128e-128f 12b1 12b6-12b7 12bf 12c1 12c6-12c7 12d7 1311 "
    "1316-1317 135b-135c 137d-137f 139a-139f 13f6-13f7 13fe-13ff 169d-169f 16f9-16ff 1716-171e 1737-173f 1754-175f "
    "176d 1771 1774-177f 17de-17df 17ea-17ef 17fa-17ff 180e 181a-181f 1879-187f 18ab-18af 18f6-18ff 191f 192c-192f "
    "193c-193f 1941-1943 196e-196f 1975-197f 19ac-19af 19ca-19cf 19db-19dd 1a1c-1a1d 1a5f 1a7d-1a7e 1a8a-1a8f "
    "1a9a-1a9f 1aae-1aaf 1acf-1aff 1b4d-1b4f 1b7f 1bf4-1bfb 1c38-1c3a 1c4a-1c4c 1c89-1c8f 1cbb-1cbc 1cc8-1ccf "
    "1cfb-1cff 1f16-1f17 1f1e-1f1f 1f46-1f47 1f4e-1f4f 1f58 1f5a 1f5c 1f5e 1f7e-1f7f 1fb5 1fc5 1fd4-1fd5 1fdc "
    "1ff0-1ff1 1ff5 1fff 200b-200f 2028-202e 2060-206f 2072-2073 208f 209d-209f 20c1-20cf 20f1-20ff 218c-218f "
    "2427-243f 244b-245f 2b74-2b75 2b96 2cf4-2cf8 2d26 2d28-2d2c 2d2e-2d2f 2d68-2d6e 2d71-2d7e 2d97-2d9f 2da7 2daf "
    "2db7 2dbf 2dc7 2dcf 2dd7 2ddf 2e5e-2e7f 2e9a 2ef4-2eff 2fd6-2fef 2ffc-2fff 3040 3097-3098 3100-3104 3130 318f "
    "31e4-31ef 321f a48d-a48f a4c7-a4cf a62c-a63f a6f8-a6ff a7cb-a7cf a7d2 a7d4 a7da-a7f1 a82d-a82f a83a-a83f "
    "a878-a87f a8c6-a8cd a8da-a8df a954-a95e a97d-a97f a9ce a9da-a9dd a9ff aa37-aa3f aa4e-aa4f aa5a-aa5b aac3-aada "
    "aaf7-ab00 ab07-ab08 ab0f-ab10 ab17-ab1f ab27 ab2f ab6c-ab6f abee-abef abfa-abff d7a4-d7af d7c7-d7ca d7fc-f8ff "
    "fa6e-fa6f fada-faff fb07-fb12 fb18-fb1c fb37 fb3d fb3f fb42 fb45 fbc3-fbd2 fd90-fd91 fdc8-fdce fdd0-fdef "
    "fe1a-fe1f fe53 fe67 fe6c-fe6f fe75 fefd-ff00 ffbf-ffc1 ffc8-ffc9 ffd0-ffd1 ffd8-ffd9 ffdd-ffdf ffe7 ffef-fffb "
    "fffe-ffff 1000c 10027 1003b 1003e 1004e-1004f 1005e-1007f 100fb-100ff 10103-10106 10134-10136 1018f "
    "1019d-1019f 101a1-101cf 101fe-1027f 1029d-1029f 102d1-102df 102fc-102ff 10324-1032c 1034b-1034f 1037b-1037f "
    "1039e 103c4-103c7 103d6-103ff 1049e-1049f 104aa-104af 104d4-104d7 104fc-104ff 10528-1052f 10564-1056e 1057b "
    "1058b 10593 10596 105a2 105b2 105ba 105bd-105ff 10737-1073f 10756-1075f 10768-1077f 10786 107b1 107bb-107ff "
    "10806-10807 10809 10836 10839-1083b 1083d-1083e 10856 1089f-108a6 108b0-108df 108f3 108f6-108fa 1091c-1091e "
    "1093a-1093e 10940-1097f 109b8-109bb 109d0-109d1 10a04 10a07-10a0b 10a14 10a18 10a36-10a37 10a3b-10a3e "
    "10a49-10a4f 10a59-10a5f 10aa0-10abf 10ae7-10aea 10af7-10aff 10b36-10b38 10b56-10b57 10b73-10b77 10b92-10b98 "
    "10b9d-10ba8 10bb0-10bff 10c49-10c7f 10cb3-10cbf 10cf3-10cf9 10d28-10d2f 10d3a-10e5f 10e7f 10eaa 10eae-10eaf "
    "10eb2-10eff 10f28-10f2f 10f5a-10f6f 10f8a-10faf 10fcc-10fdf 10ff7-10fff 1104e-11051 11076-1107e 110bd "
    "110c3-110cf 110e9-110ef 110fa-110ff 11135 11148-1114f 11177-1117f 111e0 111f5-111ff 11212 1123f-1127f 11287 "
    "11289 1128e 1129e 112aa-112af 112eb-112ef 112fa-112ff 11304 1130d-1130e 11311-11312 11329 11331 11334 1133a "
    "11345-11346 11349-1134a 1134e-1134f 11351-11356 11358-1135c 11364-11365 1136d-1136f 11375-113ff 1145c "
    "11462-1147f 114c8-114cf 114da-1157f 115b6-115b7 115de-115ff 11645-1164f 1165a-1165f 1166d-1167f 116ba-116bf "
    "116ca-116ff 1171b-1171c 1172c-1172f 11747-117ff 1183c-1189f 118f3-118fe 11907-11908 1190a-1190b 11914 11917 "
    "11936 11939-1193a 11947-1194f 1195a-1199f 119a8-119a9 119d8-119d9 119e5-119ff 11a48-11a4f 11aa3-11aaf "
    "11af9-11bff 11c09 11c37 11c46-11c4f 11c6d-11c6f 11c90-11c91 11ca8 11cb7-11cff 11d07 11d0a 11d37-11d39 11d3b "
    "11d3e 11d48-11d4f 11d5a-11d5f 11d66 11d69 11d8f 11d92 11d99-11d9f 11daa-11edf 11ef9-11faf 11fb1-11fbf "
    "11ff2-11ffe 1239a-123ff 1246f 12475-1247f 12544-12f8f 12ff3-12fff 1342f-143ff 14647-167ff 16a39-16a3f 16a5f "
    "16a6a-16a6d 16abf 16aca-16acf 16aee-16aef 16af6-16aff 16b46-16b4f 16b5a 16b62 16b78-16b7c 16b90-16e3f "
    "16e9b-16eff 16f4b-16f4e 16f88-16f8e 16fa0-16fdf 16fe5-16fef 16ff2-16fff 187f8-187ff 18cd6-18cff 18d09-1afef "
    "1aff4 1affc 1afff 1b123-1b14f 1b153-1b163 1b168-1b16f 1b2fc-1bbff 1bc6b-1bc6f 1bc7d-1bc7f 1bc89-1bc8f "
    "1bc9a-1bc9b 1bca0-1ceff 1cf2e-1cf2f 1cf47-1cf4f 1cfc4-1cfff 1d0f6-1d0ff 1d127-1d128 1d173-1d17a 1d1eb-1d1ff "
    "1d246-1d2df 1d2f4-1d2ff 1d357-1d35f 1d379-1d3ff 1d455 1d49d 1d4a0-1d4a1 1d4a3-1d4a4 1d4a7-1d4a8 1d4ad 1d4ba "
    "1d4bc 1d4c4 1d506 1d50b-1d50c 1d515 1d51d 1d53a 1d53f 1d545 1d547-1d549 1d551 1d6a6-1d6a7 1d7cc-1d7cd "
    "1da8c-1da9a 1daa0 1dab0-1deff 1df1f-1dfff 1e007 1e019-1e01a 1e022 1e025 1e02b-1e0ff 1e12d-1e12f 1e13e-1e13f "
    "1e14a-1e14d 1e150-1e28f 1e2af-1e2bf 1e2fa-1e2fe 1e300-1e7df 1e7e7 1e7ec 1e7ef 1e7ff 1e8c5-1e8c6 1e8d7-1e8ff "
    "1e94c-1e94f 1e95a-1e95d 1e960-1ec70 1ecb5-1ed00 1ed3e-1edff 1ee04 1ee20 1ee23 1ee25-1ee26 1ee28 1ee33 1ee38 "
    "1ee3a 1ee3c-1ee41 1ee43-1ee46 1ee48 1ee4a 1ee4c 1ee50 1ee53 1ee55-1ee56 1ee58 1ee5a 1ee5c 1ee5e 1ee60 1ee63 "
    "1ee65-1ee66 1ee6b 1ee73 1ee78 1ee7d 1ee7f 1ee8a 1ee9c-1eea0 1eea4 1eeaa 1eebc-1eeef 1eef2-1efff 1f02c-1f02f "
    "1f094-1f09f 1f0af-1f0b0 1f0c0 1f0d0 1f0f6-1f0ff 1f1ae-1f1e5 1f203-1f20f 1f23c-1f23f 1f249-1f24f 1f252-1f25f "
    "1f266-1f2ff 1f6d8-1f6dc 1f6ed-1f6ef 1f6fd-1f6ff 1f774-1f77f 1f7d9-1f7df 1f7ec-1f7ef 1f7f1-1f7ff 1f80c-1f80f "
    "1f848-1f84f 1f85a-1f85f 1f888-1f88f 1f8ae-1f8af 1f8b2-1f8ff 1fa54-1fa5f 1fa6e-1fa6f 1fa75-1fa77 1fa7d-1fa7f "
    "1fa87-1fa8f 1faad-1faaf 1fabb-1fabf 1fac6-1facf 1fada-1fadf 1fae8-1faef 1faf7-1faff 1fb93 1fbcb-1fbef "
    "1fbfa-1ffff 2a6e0-2a6ff 2b739-2b73f 2b81e-2b81f 2cea2-2ceaf 2ebe1-2f7ff 2fa1e-2ffff 3134b-e00ff e01f0-10ffff "
)


#: Letters and marks that draw nothing (module doc; Unicode's Default_Ignorable_Code_Point
#: outside Cf, and U+2800), escaped though their categories are not in the table.
INVISIBLE = "034f 115f-1160 17b4-17b5 180b-180d 180f 2800 3164 fe00-fe0d ffa0 e0100-e01ef"


def _ranges() -> list[tuple[int, int]]:
    out = []
    for tok in "".join(_TABLE).split() + INVISIBLE.split():
        a, _, b = tok.partition("-")
        out.append((int(a, 16), int(b or a, 16)))
    return sorted(out)


def _class(ranges: list[tuple[int, int]]) -> str:
    return "[" + "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"


_RANGES = _ranges()
#: The escaped characters below U+10000 (a bitmap: fast), and every character
#: beyond, which ``_astral`` then judges.
_FAST = re.compile(_class([(a, min(b, 0xFFFF)) for a, b in _RANGES if a <= 0xFFFF] + [(0x10000, 0x10FFFF)]))
_ASTRAL = [(a, b) for a, b in _RANGES if b > 0xFFFF]
_ASTRAL_STARTS = [a for a, _ in _ASTRAL]


def __getattr__(name: str) -> re.Pattern[str]:
    """``CONTROLS``: a regular expression of exactly the characters escaped
    (module doc), for tests and callers that want one. Compiled on first use
    (some ms: every command starts faster without it); slow on text with many
    characters beyond U+FFFF, so the functions here use ``_FAST`` instead."""
    if name == "CONTROLS":
        pattern = globals()["CONTROLS"] = re.compile(_class(_RANGES))
        return pattern
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ranges() -> list[tuple[int, int]]:
    """The code points escaped (module doc) as sorted inclusive ``(first,
    last)`` ranges: for ports of these rules (the HTML report's viewer,
    show/assets/report.js)."""
    return list(_RANGES)


def _astral(n: int) -> bool:
    """True when code point ``n`` (beyond U+FFFF) is one to escape."""
    i = bisect_right(_ASTRAL_STARTS, n) - 1
    return i >= 0 and n <= _ASTRAL[i][1]


def _one(m: re.Match[str]) -> str:
    return _escaped(m.group())


def _escaped(c: str) -> str:
    """The escape of character ``c`` (one :func:`escape_controls` escapes):
    ``\\xNN`` below U+0100, else ``\\uXXXX`` (a lone surrogate too, as JSON
    and ``id_text`` write it) or ``\\UXXXXXXXX``."""
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def _os_escaped(c: str) -> str:
    """The escape of character ``c`` in OS text (:func:`escape_os`): a byte
    ``\\xNN`` (an ASCII control, or one that is not UTF-8, U+DC80–U+DCFF),
    any other character ``\\uXXXX`` / ``\\UXXXXXXXX`` (U+009B: ``\\u009b``)."""
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    if n < 0x80 or 0xDC80 <= n <= 0xDCFF:
        return f"\\x{n & 0xFF:02x}"
    return f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def _fast_one(m: re.Match[str]) -> str:
    c = m.group()
    return c if ord(c) > 0xFFFF and not _astral(ord(c)) else _escaped(c)


def _fast_os(m: re.Match[str]) -> str:
    c = m.group()
    return c if ord(c) > 0xFFFF and not _astral(ord(c)) else _os_escaped(c)


def is_control(c: str) -> bool:
    """True when the one character ``c`` is one :func:`escape_controls` escapes."""
    return _FAST.match(c) is not None and (ord(c) <= 0xFFFF or _astral(ord(c)))


def escape_controls(text: str) -> str:
    """``text`` with every terminal control, format, bidi, private-use and
    unassigned character replaced by a visible escape (``"a\\x1b[2K"`` →
    ``"a\\\\x1b[2K"``, ``"\\ufffe"`` → ``"\\\\ufffe"``). Pure, total (any ``str``),
    idempotent on its own output; text without such characters is returned
    unchanged (the same object)."""
    if _FAST.search(text) is None:
        return text
    out = _FAST.sub(_fast_one, text)
    return text if out == text else out         # (only characters beyond U+FFFF that are kept)


def escape_os(text: str) -> str:
    """:func:`escape_controls` for text from the operating system (file
    names, argv, mcptap's own messages about them: ``cli/errors.say``),
    which Python decodes with ``surrogateescape`` (PEP 383): a byte that is not
    UTF-8 is ``\\xff`` there, and so every ``\\x`` means one byte of the
    name (``\\x1b``, ``\\xff``) and every ``\\u`` one character
    (U+009B ``\\u009b``). In peer text (:func:`escape_controls`) a lone
    surrogate is ``\\udcff``, as the peer's JSON escape: the two never look
    alike. Pure, total, idempotent; the same object when nothing is escaped."""
    if _FAST.search(text) is None:
        return text
    out = _FAST.sub(_fast_os, text)
    return text if out == text else out


def has_controls(text: str) -> bool:
    """True when ``text`` holds a character :func:`escape_controls` escapes."""
    return any(ord(c) <= 0xFFFF or _astral(ord(c)) for c in _FAST.findall(text))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as :func:`escape_controls`
    writes it (``"x\\ud800"`` → ``"x\\\\ud800"``), every other character
    kept: a peer's name quoted in a finding's message of a JSON output, which
    then stays strict JSON (orjson, serde_json read it) and exact. Pure,
    total; the same object when ``text`` holds none."""
    return text if _SURROGATE.search(text) is None else _SURROGATE.sub(_one, text)


def escape_xml(text: str, os_text: bool = False) -> str:
    """``escape_controls(text)`` (``os_text``: :func:`escape_os`, for file
    names) that is also valid XML 1.0 character data (JUnit reports): the
    characters XML cannot hold are escaped already. The XML serializer
    still escapes ``<``, ``&`` and quotes."""
    return escape_os(text) if os_text else escape_controls(text)


#: a backslash and the character after it: :func:`escape_name` doubles the backslash when that
#: character would read as the start of an escape (``\\x``, ``\\u``, ``\\U``, ``\\t``, ``\\n``, ``\\r``,
#: another backslash) or is itself escaped by :func:`escape_os` (a control, a byte that is not UTF-8:
#: ``\\`` + LF would otherwise show as the literal name ``\\n``)
_NAME_BACKSLASH = re.compile(r"\\(?=(.))", re.S)


def _name_backslash(m: re.Match[str]) -> str:
    nxt = m.group(1)
    return "\\\\" if nxt in "\\xuUtnr" or escape_os(nxt) != nxt else "\\"


def escape_name(path: str) -> str:
    """A file name or path as every output shows it, text and JSON alike: in
    :func:`escape_os`'s form (a byte that is not UTF-8 ``\\xff``, a control
    ``\\x1b``, ``\\t``, U+009B ``\\u009b``: the bytes stay readable, where
    U+FFFD lost them), with a backslash doubled when what follows it would
    read as such an escape or is escaped itself (a name written ``a\\xff.jsonl``
    literally is shown ``a\\\\xff.jsonl``; ``a\\`` + LF ``a\\\\\\n``): the name can be
    told from another and read back exactly. Valid UTF-8 (strict JSON, HTML) and safe on a terminal. Pure,
    total; the same object for a plain name."""
    if "\\" in path:
        path = _NAME_BACKSLASH.sub(_name_backslash, path)
    return escape_os(path)


def text_path(path: str) -> str:
    """``path`` as text that UTF-8 JSON, HTML and terminals accept: the bytes
    of a file name that are not UTF-8 (held as lone surrogates by Python, PEP
    383) become U+FFFD (``"n\\udcff.jsonl"`` → ``"n\\ufffd.jsonl"``); other
    paths come back unchanged."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:      # a surrogate that no file name decoding makes
        return path.encode("utf-8", "replace").decode("utf-8")


#: Text output quotes a run of more than ``WORD`` characters without a space
#: (a peer's 50 KB method name, id or session id) as its first ``WORD``
#: characters, ``…`` and its full length: ``"aaaa…(50,000 chars)"``.
WORD = 120
#: and cuts a piece of text that is still longer than ``LINE`` characters
#: (many short words) after its last whole word that fits: ``"… …(60,000 chars in all)"``.
LINE = 1000
_RUNS = re.compile("[^ ]+| +")
_LONG_RUN = re.compile(f"[^ ]{{{WORD + 1}}}")


def _head(text: str, limit: int) -> str:
    """The escaped form of ``text``'s first characters, at most ``limit``
    characters long, never ending inside an escape."""
    out: list[str] = []
    n = 0
    for c in text:
        piece = _escaped(c) if is_control(c) else c
        if n + len(piece) > limit:
            break
        out.append(piece)
        n += len(piece)
    return "".join(out)


def shown(text: str, word: int = WORD, line: int = LINE) -> str:
    """``escape_controls(text)`` made fit for a line of human-readable output
    (show, check, diff, replay, report, record's live lines): each run of
    more than ``word`` characters without a space becomes its first ``word``
    characters (escaped) + ``"…(N chars)"`` (N: the run's length, in
    characters); if the result is still longer than ``line`` characters, it
    ends after the last whole run that fits, with ``"…(N chars in all)"``.
    So the result is at most ``line + 30`` characters (``word`` ≤ ``line``)
    and holds no control character. Machine formats (JSON, SARIF, JUnit)
    keep the exact values and do not use it. Pure, total; a short text
    without controls is returned unchanged (the same object)."""
    if len(text) <= word and not has_controls(text):
        return text
    if (len(text) <= line and word == WORD and _LONG_RUN.search(text) is None
            and not has_controls(text)):
        return text         # the common finding message: one scan in C each
    out: list[str] = []
    n = 0
    for m in _RUNS.finditer(text):
        run = m.group()
        if run[0] != " " and len(run) > word:
            piece = f"{_head(run, word)}…({len(run):,} chars)"
        else:
            piece = escape_controls(run)
        if n + len(piece) > line:
            out.append(f"…({len(text):,} chars in all)")
            break
        out.append(piece)
        n += len(piece)
    return "".join(out)


#: a Python repr of bytes inside a library's message: ``bytearray(b'…')`` or ``b'…'`` (``"…"`` when
#: the bytes hold a ``'``), as h11 quotes the request or status line it could not read
_BYTES_REPR = re.compile(r"""bytearray\((b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*")\)|(?<![\w'"])(b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*")""")


def _bytes_shown(m: re.Match[str]) -> str:
    import ast

    try:
        data = ast.literal_eval(m.group(1) or m.group(2))
    except (ValueError, SyntaxError):
        return m.group(0)
    return escape_os(bytes(data).decode("utf-8", "surrogateescape")) if isinstance(data, bytes) else m.group(0)


def unrepr_bytes(text: str) -> str:
    """``text`` (a library's message about a peer's bytes, h11's ``illegal request line:
    bytearray(b'POST /mcp\\x1b]0;T\\x07 HTTP/1.1')``) with each Python bytes repr in it
    replaced by the bytes themselves as :func:`escape_os` writes them: ``illegal request
    line: POST /mcp\\x1b]0;T\\x07 HTTP/1.1`` (UTF-8 as text, every control and each byte
    that is not UTF-8 a ``\\xNN`` escape), no ``bytearray(b'…')`` wrapper. Pure, total;
    the same object when it holds no such repr."""
    if "b'" not in text and 'b"' not in text:
        return text
    return _BYTES_REPR.sub(_bytes_shown, text)
