"""The exact secrets mcptap redacted from the server's argv, replaced wherever
they reappear in a capture (pure, level 1).

``record -- CMD`` stores the server's argv with its secrets as keyed
placeholders (``redact.argv.scrub_argv``). A server that echoes its argv (a
usage error, a traceback, a "starting with …" log line) would put the same
values in clear into stderr records, messages or process records. Those values
are known before the server starts, so one precomputed set of needles is
searched in each encoded record line (``bytes.__contains__``: a C substring
search per secret, nothing else for a line without one) and each hit becomes
the same placeholder the argv got.

A value is found by the rule ``Repeats`` uses for a scrub's secrets (``redact.repeat_match``):
at least MIN_LEN characters, not a common word (``--token none`` leaves every later "none"
alone), never as a piece of a longer word or number (``--api-key 1234`` leaves
``12345678`` alone), never inside a placeholder.

Only the recorder's copy changes, never the relayed bytes: so the ``end``
record's digests stay provable, they are then recomputed over the bytes the
capture holds, with the relayed streams' digests kept in ``original`` (as
``scrub`` does, docs/capture-format.md). A value split across two stderr reads
is caught by ``take``: the recorder keeps back the end of a read where a secret may
begin or go on (``repeat_match.safe_cut``: the beginning of a secret, a secret or a
word at the very end, since the next read may make it a piece of a longer word; at
most twice the longest secret and a placeholder's length) until the next read, a
process event or the end, so any split of the stream into reads stores what one read would.
"""

from __future__ import annotations

import codecs
import difflib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from mcptap.capture.dumps import dumps, encode_deep
from mcptap.capture.format import decode_bytes, encode_bytes
from mcptap.capture.integrity import StreamTally
from mcptap.protocol.jsonparse import exact_json
from mcptap.records import message_bytes
from mcptap.redact.keyed import MIN_REPEATED, PLACEHOLDER
from mcptap.redact.original import place_original
from mcptap.redact.repeat_match import MARK, repeatable, replace, safe_cut
from mcptap.redact.urlview import form_decode

#: shorter values are not searched elsewhere: they would replace unrelated text
MIN_LEN = MIN_REPEATED
_STREAMS = ("c2s", "s2c", "stderr")
#: stderr bytes held back at most (``KnownSecrets.hold``)
HOLD_MOST = 1 << 20
#: a quote cut short in a finding (``repeat_match.MARK``): a line with one is searched for a secret's beginning
_MARK = MARK.encode()


def redacted_values(argv: Sequence[str], shown: Sequence[str], placeholder: Callable[[str], str] | None = None) -> dict[str, str]:
    """``{secret: placeholder}`` for the text each placeholder of ``shown``
    (``scrub_argv(argv)``, argument for argument) stands for in ``argv``.
    An argument with one placeholder gives the text around which it differs; with
    several, each piece is kept only when ``placeholder(piece)`` gives its
    placeholder back (the keyed HMAC proves the alignment). Values shorter
    than MIN_LEN, common words and blanks are left out (``repeat_match.repeatable``).
    The password of URL user info (``://user:PASS@``) is also
    searched alone, with ``placeholder(PASS)`` (a server says "bad password PASS", not
    "user:PASS"; given ``placeholder`` only), and so is a percent-encoded query value's decoded
    text when its placeholder is the one shown (``scrub_url`` redacts the decoded value). Never raises."""
    out: dict[str, str] = {}
    for orig, new in zip(argv, shown, strict=False):
        if orig == new or not isinstance(orig, str) or not isinstance(new, str):
            continue
        for value, ph in _pieces(orig, new):
            many = len(PLACEHOLDER.findall(new)) > 1
            decoded = form_decode(value)       # a URL's encoded query value: its placeholder is the decoded text's
            if repeatable(value) and (
                    not many or placeholder is None or ph in (placeholder(value), placeholder(decoded))):
                out.setdefault(value, ph)
                if decoded != value and repeatable(decoded) and placeholder is not None and placeholder(decoded) == ph:
                    out.setdefault(decoded, ph)     # as a server repeats it, decoded
                password = _userinfo_password(orig, value)
                if password is not None and placeholder is not None and repeatable(password):
                    out.setdefault(password, placeholder(password))
    return out


def _userinfo_password(orig: str, value: str) -> str | None:
    """``PASS`` when ``value`` is the ``user:PASS`` of a URL's user info in ``orig``
    (at least MIN_LEN characters), else None."""
    user, colon, password = value.partition(":")
    if not colon or len(password) < MIN_LEN or "@" in value or f"://{value}@" not in orig:
        return None
    return password


def _pieces(orig: str, new: str) -> list[tuple[str, str]]:
    marks = list(PLACEHOLDER.finditer(new))
    if not marks:
        return []
    rx, at = [], 0
    for m in marks:
        rx.append(re.escape(new[at:m.start()]) + "(.+?)")
        at = m.end()
    rx.append(re.escape(new[at:]))
    hit = re.fullmatch("".join(rx), orig, re.DOTALL)
    if hit is not None:
        return [(hit.group(i + 1), m.group(0)) for i, m in enumerate(marks)]
    # the scrubbed argument is not the original with pieces swapped (a JSON
    # option re-encoded): the replaced spans the diff finds, each exactly one placeholder
    sm = difflib.SequenceMatcher(None, orig, new, autojunk=False)
    return [(orig[i1:i2], new[j1:j2]) for op, i1, i2, j1, j2 in sm.get_opcodes()
            if op == "replace" and PLACEHOLDER.fullmatch(new[j1:j2])]


def _inner(value: str) -> bytes:
    return orjson.dumps(value)[1:-1]          # as the text of a JSON string


def _forms(value: str) -> list[str]:
    """``value`` as the text of a JSON string, in each way a peer's encoder may write it:
    fewest escapes (orjson, JavaScript), non-ASCII as ``\\u00e4`` (Python's ``json.dumps``),
    as ``\\u00E4`` (upper-case hex), and each with ``/`` as ``\\/`` (PHP, some Java)."""
    least = _inner(value).decode()
    ascii_ = json.dumps(value)[1:-1]
    upper = re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m.group(0)[2:].upper(), ascii_)
    out: list[str] = []
    for f in (least, ascii_, upper):
        for g in (f, f.replace("/", "\\/")):
            if g not in out:
                out.append(g)
    return out


class KnownSecrets:
    """Replace ``secrets`` (``{secret: placeholder}``) in record lines: the
    CaptureWriter's ``line_filter`` (``line(rec, line) -> line``). ``replaced``:
    records changed so far. ``stdio``: the end record's digests are recomputed over
    the bytes the capture holds (a stdio capture's are verified against its records);
    an HTTP capture's count the wire and only their message counts are checked, which
    a replacement does not change: its end record keeps them."""

    def __init__(self, secrets: dict[str, str], stdio: bool = True) -> None:
        self.stdio = stdio
        secrets = {k: v for k, v in secrets.items() if repeatable(k)}
        order = sorted(secrets, key=len, reverse=True)     # a longer secret before one inside it
        #: a secret in an encoded line: in a string once (stderr text, a raw line's bytes) and
        #: twice JSON-escaped (inside a message's raw JSON string); ``_quick``: the same as bytes,
        #: a C substring search apiece before anything else
        self._line: dict[str, str] = {}
        #: the same one level down: in the text a stderr or message record holds
        self._held: dict[str, str] = {}
        for s in order:
            ph = secrets[s]
            forms = _forms(s)
            self._line.setdefault(forms[0], ph)
            self._held.setdefault(s, ph)
            for once in forms:          # escaped by the peer, then once more as a record's string
                self._line.setdefault(_inner(once).decode(), ph)
                self._held.setdefault(once, ph)
        self._line_order = sorted(self._line, key=len, reverse=True)
        self._held_order = sorted(self._held, key=len, reverse=True)
        self._held_quick = [n.encode("utf-8", "surrogateescape") for n in self._held_order]
        self._quick = [n.encode() for n in self._line_order]
        self.replaced = 0
        self.tallies = {k: StreamTally() for k in _STREAMS}
        self._carry = b""

    def __bool__(self) -> bool:
        return bool(self._line)

    def replace_in(self, data: bytes, encoded: bool = False) -> bytes:
        """``data`` (bytes a record holds: UTF-8 or not) with every secret replaced;
        ``encoded``: JSON text (a message's bytes), see ``repeat_match.find``."""
        if not any(n in data for n in self._held_quick):
            return data
        text = data.decode("utf-8", "surrogateescape")
        new = replace(text, self._held_order, self._held, encoded)
        return data if new == text else new.encode("utf-8", "surrogateescape")

    def _replace_line(self, data: bytes) -> bytes | None:
        """An encoded line (or JSON text) with every secret replaced; None when none is there."""
        if not any(n in data for n in self._quick) and _MARK not in data:     # a finding's quote cut short: its piece
            return None
        text = data.decode("utf-8", "surrogateescape")
        new = replace(text, self._line_order, self._line, encoded=True)
        return None if new == text else new.encode("utf-8", "surrogateescape")

    def value(self, value: Any) -> Any:
        """A JSON value (a live answer, as ``replay`` reports it) with every secret in its
        strings and keys replaced; ``value`` itself when it holds none."""
        new = self._replace_line(dumps(value))
        return value if new is None else exact_json(new)

    def hold(self, data: bytes) -> int:
        """How many bytes at the end of ``data`` (a stream's text from a safe cut on) to keep
        back until the next piece of the stream: an unfinished UTF-8 character and what
        ``repeat_match.safe_cut`` leaves after its cut. 0 for a read that ends in a newline
        or a space and no secret's beginning."""
        if not data or not self._held:
            return 0
        dec = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        text = dec.decode(data, False)
        pending = len(dec.getstate()[0])
        cut = safe_cut(text, self._held_order)
        keep = pending + (len(text[cut:].encode("utf-8", "surrogateescape")) if cut < len(text) else 0)
        # a stream with no safe cut for this long (a secret repeated overlapping itself, over and
        # over) is recorded as it comes rather than held without end
        return keep if keep <= HOLD_MOST else 0

    def take(self, data: bytes, final: bool = False) -> bytes:
        """The stderr bytes to record now: what was held back, then ``data``,
        less an end where a secret may begin or go on (held for the next
        call). ``final``: the stream ended, nothing is held."""
        data = self._carry + data if self._carry else data
        keep = 0 if final else self.hold(data)
        self._carry = data[len(data) - keep:] if keep else b""
        return data[:len(data) - keep] if keep else data

    def line(self, rec: dict[str, Any], line: bytes) -> bytes:
        """One encoded record line (newline included), secrets replaced; tallies
        the bytes it holds (message, chunk, stderr) and fixes the end record."""
        replaced = self._replace_line(line)
        hit = replaced is not None
        if replaced is not None:
            line = replaced
        if b'_b64":' in line:
            # bytes stored as base64 (a non-UTF-8 body, message or stderr read) hold the secret
            # encoded: searched in the bytes themselves
            held = self._in_b64(exact_json(line) if hit else rec)
            if held is not None:
                line, hit = dumps(held, newline=True), True
        if hit:
            self.replaced += 1
        if not self.stdio:
            return line
        if hit:
            new = exact_json(line)          # what a reader gets back (integers beyond 64 bits exact)
            moved = _resized(rec, new)
            if moved is not None:
                new = place_original(new, moved)
                line = dumps(new, newline=True)
            rec = new
        typ = rec.get("type")
        if typ == "message" and rec.get("dir") in self.tallies:
            self.tallies[rec["dir"]].add(message_bytes(rec) or b"")
        elif typ == "chunk" and rec.get("dir") in self.tallies:
            self.tallies[rec["dir"]].add(decode_bytes(rec, "data") or b"", message=False)
        elif typ == "stderr":
            self.tallies["stderr"].add(decode_bytes(rec, "data") or b"")
        elif typ == "end" and self.replaced and self.stdio:
            end = self._end(rec)
            try:
                return orjson.dumps(end, option=orjson.OPT_APPEND_NEWLINE)
            except (TypeError, orjson.JSONEncodeError):
                return encode_deep(end, nonfinite=b"null") + b"\n"    # a peer's id beyond 64 bits among the pending
        return line

    def _in_b64(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        """``rec`` with every secret replaced in the bytes of its ``…_b64`` fields (stored again
        as ``encode_bytes`` stores them), or None: none there."""
        out: dict[str, Any] = {}
        changed = False
        for k, v in rec.items():
            if k.endswith("_b64") and isinstance(v, str):
                try:
                    data = decode_bytes({k: v}, k[:-4]) or b""
                except ValueError:          # not base64: the reader reports it
                    out[k] = v
                    continue
                new = self.replace_in(data, encoded=rec.get("type") != "stderr")
                if new != data:
                    encode_bytes(new, k[:-4], out)
                    changed = True
                    continue
            out[k] = v
        return out if changed else None

    def _end(self, end: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in end.items() if k != "original"}
        original = end.get("original") or {k: end[k] for k in _STREAMS if k in end}
        for k in _STREAMS:
            if k in out:
                out[k] = self.tallies[k].json()
        out["original"] = original
        return out


def known_secrets(argv: Iterable[str], shown: Iterable[str], placeholder: Callable[[str], str] | None = None,
                  stdio: bool = True) -> KnownSecrets | None:
    """A KnownSecrets for the values ``scrub_argv`` took out of ``argv`` (or ``scrub_url``
    out of an HTTP tap's or replay's URL: ``stdio`` False), or None (none)."""
    ks = KnownSecrets(redacted_values(list(argv), list(shown), placeholder), stdio)
    return ks if ks else None


def _resized(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int] | None:
    """``{offset, bytes}``: where the bytes of stdio message or chunk record ``before``
    were forwarded, when replacing secrets made ``after`` hold another length; None
    when it did not, or ``before`` says so already (``original``, from the scrub rules).
    ``recover`` takes the forwarded stream's end from it: without it, offset plus the
    length held would repeat or skip the spill's bytes after a placeholder."""
    typ = before.get("type")
    if typ not in ("message", "chunk") or "original" in before or type(before.get("offset")) is not int:
        return None
    if typ == "message":
        was, now = message_bytes(before), message_bytes(after)
    else:
        was, now = decode_bytes(before, "data"), decode_bytes(after, "data")
    if was is None or now is None or len(was) == len(now):
        return None
    return {"offset": before["offset"], "bytes": len(was)}
