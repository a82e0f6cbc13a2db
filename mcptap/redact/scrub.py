"""Scrub a capture's record stream (pure): ``mcptap scrub``, ``record
--redact`` and ``report`` all run records through one ``Scrubber``.

A scrubbed capture is still a capture (docs/capture-format.md, "Scrubbed
captures"):

* ``header.scrubbed``: the passes that ran, ``[{rules, key}]`` (rules as
  ``Rules.describe()``, ``key`` the public fingerprint of the HMAC key); the
  argv / URL target is scrubbed again with the same rules;
* ``message``: the parsed message is redacted (``Redactor.message``: the
  envelope ``jsonrpc``/``id``/``method`` never, so kinds, pairing and
  lifecycle stay), and its bytes rebuilt. Bytes that were kept verbatim
  (``raw``: CRLF, odd whitespace, BOM) keep their framing: each secret is
  replaced in place where its JSON encoding appears, and the result is
  re-parsed to prove it equals the redacted message; otherwise the bytes
  become the compact encoding plus the original terminator (``verbatim.rebuild``). Non-JSON bytes
  get the string patterns. Finding messages, ``session`` and transport facts
  are scanned too; ``offset`` is recomputed over the new bytes (stdio);
* ``stderr`` data, ``http`` heads/targets/endpoint URLs, ``process`` argv and
  every other string of any record (the header's too) get the patterns
  (credential header values a keyed placeholder); a field named like a secret
  (a context record's ``state…apiKey``) is redacted whole, as in a message;
  what is structure or mcptap's own words is kept by its place in the record,
  not by its name (``record_places``: a message's ``id`` stays, an SSE event's
  ``id`` gets the patterns; an ``http`` record's ``auth`` tag stays);
* a value judged secret anywhere (under a key, at a user path, by a pattern) is replaced
  in every later string of any record, with the same placeholder (``repeats.py``);
* ``end``: ``c2s``/``s2c``/``stderr`` ``{bytes, sha256, messages}`` are
  recomputed over the bytes the scrubbed capture holds (for stdio, exactly the
  scrubbed stream, with a directed ``gap``'s bytes in ``bytes`` as the recorder
  counts them), the source's are kept in ``original`` (so the owner of the
  source can still prove it).

The stream accounting (offsets, digests, chunks, the end record) is ``scrub_streams``.
Scrubbing twice gives the same capture as scrubbing once. ``hits`` collects
``(seq, Hit)`` for ``--dry-run``. ``finish(truncated)`` returns a trailing
``gap`` record that keeps a cut source marked ``capture.truncated``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mcptap.capture.format import decode_bytes, encode_bytes
from mcptap.capture.integrity import StreamTally
from mcptap.model import UNPARSED
from mcptap.redact.argv import scrub_argv, scrub_url
from mcptap.redact.engine import Hit, Redactor
from mcptap.redact.headers import is_secret_header, redact_header
from mcptap.redact.record_places import kept, listed, opaque
from mcptap.redact.repeats import Repeats
from mcptap.redact.scrub_streams import StreamAccount
from mcptap.redact.sessions import LegacySessionIds
from mcptap.redact.sse_raw import rewrite as rewrite_sse
from mcptap.redact.stderr_stream import Carry, ChunkCarries, Grouper, record_text, split
from mcptap.redact.verbatim import encode_exact as _encode
from mcptap.redact.verbatim import exact_message, rebuild, record_json, surrogate_escape
from mcptap.redact.verbatim import hides_values as _hidden_values


class Scrubber(StreamAccount):
    """Scrub one capture's records in order (see module doc). ``redactor``:
    the rules and key; ``collect``: keep every hit in ``hits`` (dry run). Each
    secret redacted is replaced wherever a later record repeats it
    (``Redactor.remembering``: a password argument in the server's stderr, a
    tool result, ``structuredContent``); ``known``: secrets replaced from the
    first record on (``learned``: those of a first pass over the whole capture)."""

    def __init__(self, redactor: Redactor, collect: bool = False, known: Repeats | None = None) -> None:
        self.redactor = redactor.remembering(known)
        self.collect = collect
        self.hits: list[tuple[int | None, Hit]] = []
        #: ``(seq, Hit)`` of each secret seen in a message's ``id`` or ``method``, which stay
        #: as sent (kinds, pairing, serve's matching): the caller warns (docs/redaction.md)
        self.kept: list[tuple[int | None, Hit]] = []
        self.count = 0
        self.transport = "stdio"
        self._digests = {"c2s": StreamTally(), "s2c": StreamTally(), "stderr": StreamTally()}
        self._last_seq = 0
        self._last_t = 0
        #: offline scrub/report: a ``chunk`` record is an error (the caller re-frames them
        #: into messages first, ``reannotate_views.framed``); live ``record --redact``: its bytes
        #: get the string patterns (keys and structure cannot be seen in unframed bytes)
        self.reject_chunks = False
        self._carry = Carry()
        self._legacy = LegacySessionIds(self.redactor.placeholder)
        self._chunk_carries = ChunkCarries()

    def _note(self, seq: int | None, hits: Iterable[Hit]) -> None:
        for h in hits:
            self.count += 1
            if self.collect:
                self.hits.append((seq, h))

    def pass_info(self) -> dict[str, Any]:
        """This pass, as recorded in ``header.scrubbed``."""
        return {"rules": self.redactor.rules.describe(), "key": self.redactor.keyer.fingerprint()}

    # -- records --------------------------------------------------------------------------
    def header(self, header: dict[str, Any]) -> dict[str, Any]:
        self.transport = header.get("transport", "stdio")
        passes = list(header.get("scrubbed") or [])
        info = self.pass_info()
        if not passes or passes[-1] != info:
            passes.append(info)
        # every field (a capture's name, the target's cwd and env…), the argv / URLs as at record time
        out = self._generic({k: v for k, v in header.items() if k != "scrubbed"}, None)
        out["scrubbed"] = passes
        return out

    def transform(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Any record, header included (``CaptureWriter.transform`` for
        ``record --redact``)."""
        return self.header(rec) if rec.get("type") == "header" else self.record(rec)

    def records(self, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The records after the header, scrubbed, in order. The stderr records of an
        unfinished line are scrubbed together with the rest of their line (a secret cut
        across two reads: ``stderr_stream``), the records between them held meanwhile."""
        group = Grouper()
        for rec in records:
            text = record_text(rec)
            if text is None and not group.open():
                yield self.record(rec)
            elif group.add(rec, text):
                yield from self._flush(group)
        yield from self._flush(group)

    def _flush(self, group: Grouper) -> Iterator[dict[str, Any]]:
        texts = [record_text(group.held[i]) or "" for i in group.stderr]
        done = dict(zip(group.stderr, zip(*split(self.redactor, texts), strict=True), strict=True)) if texts else {}
        for i, rec in enumerate(group.held):
            yield self.record(rec, done.get(i))
        group.clear()

    def record(self, rec: dict[str, Any], stderr: tuple[str, list[Hit]] | None = None) -> dict[str, Any]:
        """One record after the header, scrubbed (a new dict; ``rec`` untouched). A
        ``stderr`` record's text is scanned with the unfinished line before it (live:
        ``stderr_stream.Carry``), unless ``stderr`` gives its new text and hits. A legacy
        HTTP+SSE session id is a credential: its ``session`` fields get its placeholder."""
        self._legacy.learn(rec)
        return self._legacy.apply(self._record(rec, stderr))

    def _record(self, rec: dict[str, Any], stderr: tuple[str, list[Hit]] | None) -> dict[str, Any]:
        typ = rec.get("type")
        seq = rec.get("seq") if isinstance(rec.get("seq"), int) else None
        if seq is not None:
            self._last_seq = seq
        if isinstance(rec.get("t_us"), int):
            self._last_t = rec["t_us"]
        if typ == "message":
            return self._message(rec, seq)
        if typ == "end":
            return self._end(rec, seq)
        if typ == "chunk":
            return self._chunk(rec, seq)
        if typ == "stderr":
            return self._stderr(rec, seq, stderr)
        if typ == "gap":
            self._gap(rec)
        if (typ == "http" and rec.get("event") in ("request_body", "response_body") and rec.get("undecoded") is not None
                and ("body" in rec or "body_b64" in rec)):
            return self._unscannable(rec, seq)
        return self._generic(rec, seq)

    def _unscannable(self, rec: dict[str, Any], seq: int | None) -> dict[str, Any]:
        """An HTTP body stored still encoded (``undecoded``: a content-coding mcptap cannot
        read, or corrupt) cannot be scanned for secrets: it is left out, its size kept in
        ``body_removed`` (bytes, int), and the removal counted as a hit (rule
        ``undecoded:CODING``) so ``--dry-run`` and the summary show it."""
        try:
            size = len(decode_bytes(rec, "body") or b"")
        except ValueError:          # not base64: nothing readable, left out all the same
            size = 0
        out = self._generic({k: v for k, v in rec.items() if k not in ("body", "body_b64")}, seq)
        out["body_removed"] = size
        self._note(seq, [Hit("body", f"undecoded:{rec.get('content_encoding') or '?'}", "(removed)")])
        return out

    def _stderr(self, rec: dict[str, Any], seq: int | None, done: tuple[str, list[Hit]] | None) -> dict[str, Any]:
        text = record_text(rec)
        if text is None:      # no data, or not base64 (the reader reports it)
            return self._generic(rec, seq)
        new, hits = done if done is not None else self._carry.redact(self.redactor, text)
        self._note(seq, [Hit("stderr", h.rule, h.placeholder) for h in hits])
        rest = self._generic({k: v for k, v in rec.items() if k not in ("data", "data_b64")}, seq)
        data: dict[str, Any] = {}
        if new == text:
            data = {k: rec[k] for k in ("data", "data_b64") if k in rec}
        else:
            encode_bytes(new.encode("utf-8", "surrogateescape"), "data", data)
        out: dict[str, Any] = {}
        for k in rec:
            if k in ("data", "data_b64"):
                out.update(data)
            else:
                out[k] = rest[k]
        self._digests["stderr"].add(decode_bytes(out, "data") or b"")
        return out

    # -- parts ----------------------------------------------------------------------------
    def _argv(self, argv: list[Any], where: str, seq: int | None) -> list[Any]:
        strs = [a for a in argv if isinstance(a, str)]
        if len(strs) != len(argv):
            return argv
        return [self._text(a, f"{where}[{i}]", seq) for i, a in enumerate(scrub_argv(strs))]

    def _text(self, s: str, where: str, seq: int | None) -> str:
        out, hits = self.redactor.string(s)
        hits = [Hit(where, h.rule, h.placeholder) for h in hits]
        self._note(seq, hits)
        return out

    def _findings(self, fs: Any, seq: int | None) -> Any:
        if not isinstance(fs, list):
            return fs
        out = []
        for f in fs:
            if isinstance(f, dict):
                f = dict(f)
                if isinstance(f.get("message"), str):
                    f["message"] = self._text(f["message"], "findings.message", seq)
                if "data" in f:
                    f["data"], hits = self.redactor.value(f["data"], ("findings", "data"))
                    self._note(seq, hits)
            out.append(f)
        return out

    def _generic(self, rec: dict[str, Any], seq: int | None, place: tuple[str, ...] | None = None) -> dict[str, Any]:
        """``rec``'s fields scrubbed; ``place``: where ``rec`` is in its record (``record_places``;
        None: ``rec`` is a record, its place its type)."""
        place = place or (str(rec.get("type")),)
        out: dict[str, Any] = {}
        for k, v in rec.items():
            if k == "findings" or k == "unanswered":
                out[k] = self._findings(v, seq)
            elif k == "headers" and isinstance(v, list):
                out[k] = self._headers(v, seq)
            elif k == "argv" and isinstance(v, list):
                out[k] = self._argv(v, "argv", seq)
            elif k in ("target", "url", "path", "location") and isinstance(v, str):
                out[k] = self._text(scrub_url(v), k, seq)
            elif isinstance(v, str) and k.endswith("_b64") and not kept(place, k):
                # bytes stored as base64 (an HTTP request_body's body_b64):
                # scanned as the text they hold, stored again the way their new bytes need
                base = k[:-4] if k.endswith("_b64") else k
                try:
                    raw = decode_bytes({k: v}, base) or b""
                except ValueError:      # not base64: nothing readable (the reader reports it)
                    out[k] = v
                    continue
                text = raw.decode("utf-8", "surrogateescape")
                new = self._text(text, base, seq)
                if new != text:
                    tmp: dict[str, Any] = {}
                    encode_bytes(new.encode("utf-8", "surrogateescape"), base, tmp)
                    out.update(tmp)
                else:
                    out[k] = v
            elif kept(place, k) or isinstance(v, bool | int | float) or v is None:
                out[k] = v
            elif self.redactor.key_rule(k) is not None:
                # a record field named like a secret (a context record's ``state.client_caps.x.apiKey``):
                # all of it, as in a message
                nv, hits = self.redactor.member(k, v)
                self._note(seq, hits)
                out[k] = nv
            elif isinstance(v, str):
                url = ("://" in v or v.startswith("/")) and not opaque(place, k)
                out[k] = self._text(scrub_url(v) if url else v, k, seq)
            elif isinstance(v, dict):
                out[k] = self._generic(v, seq, (*place, k))
            elif isinstance(v, list) and listed((*place, k)):
                out[k] = [self._generic(x, seq, (*place, k)) if isinstance(x, dict) else self._value(x, k, seq) for x in v]
            else:
                out[k] = self._value(v, k, seq)
        return out

    def _value(self, v: Any, k: str, seq: int | None) -> Any:
        nv, hits = self.redactor.value(v, (k,))
        self._note(seq, hits)
        return nv

    def _headers(self, headers: list[Any], seq: int | None) -> list[Any]:
        out = []
        for pair in headers:
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair):
                name, value = pair
                if is_secret_header(name):
                    new = redact_header(name.lower(), value, self.redactor.placeholder)
                    if new != value:
                        self._note(seq, [Hit(f"headers.{name}", "header", new)])
                    value = new
                out.append([name, self._text(value, f"headers.{name}", seq)])
            else:
                out.append(pair)
        return out

    def _message(self, rec: dict[str, Any], seq: int | None) -> dict[str, Any]:
        out = {k: v for k, v in rec.items() if k not in ("json", "raw", "raw_b64")}
        eol = rec.get("eol", "\n").encode("ascii", "replace")
        raw = decode_bytes(rec, "raw")
        value: Any = rec["json"] if "json" in rec else None
        parsed = "json" in rec
        # a lone surrogate escape (a peer's "\ud800"): ``json`` holds U+FFFD in its place, an
        # id (no ``json`` then) the surrogate itself; redacted and written back with the escape
        lone = raw is not None and surrogate_escape(raw)
        if raw is None:
            raw = _encode(value) + eol
        elif not parsed or lone:
            v = exact_message(raw)
            if v is not UNPARSED:
                value, parsed = v, True
        new_raw = raw
        if parsed:
            red, hits = self.redactor.message(value)
            self._note(seq, hits)
            self._envelope(value, seq)
            # no hit, nothing changed: the record's bytes stay as they are (scrubbing twice = once)
            if red is not value and (hits or _differs(red, value)) or (raw != _encode(value) + eol and _hidden_values(raw)):
                new_raw = rebuild(raw, value, red, eol)
                value = red
        else:
            text = raw.decode("utf-8", "surrogateescape")
            new_text = self._text(text, "raw", seq)
            if new_text != text:
                new_raw = new_text.encode("utf-8", "surrogateescape")
        if "json" in rec:
            out["json"] = record_json(value) if lone else value
            if out["json"] is UNPARSED:
                del out["json"]
        if "json" not in out or new_raw != _encode(out["json"]) + eol:
            encode_bytes(new_raw, "raw", out)
        if "findings" in out:
            out["findings"] = self._findings(out["findings"], seq)
        if isinstance(out.get("session"), str):
            out["session"] = self._text(out["session"], "session", seq)
        if isinstance(out.get("transport"), dict):
            out["transport"] = self._transport(out["transport"], raw, new_raw, eol, seq)
        self._place(rec, out, len(raw), new_raw, True)
        return out

    def _envelope(self, value: Any, seq: int | None) -> None:
        """Secrets the patterns see in a message's ``id``/``method`` (never redacted) into ``kept``."""
        for m in value if isinstance(value, list) else (value,):
            if isinstance(m, dict):
                for k in ("id", "method"):
                    if isinstance(m.get(k), str) and len(m[k]) >= 6:
                        self.kept.extend((seq, Hit(k, h.rule, h.placeholder)) for h in self.redactor.string(m[k])[1])

    def _transport(self, tr: dict[str, Any], raw: bytes, new_raw: bytes, eol: bytes, seq: int | None) -> dict[str, Any]:
        """A message's ``transport``: its SSE event's own text (``sse.raw``, the
        payload a second time, HAR's response content) carries the scrubbed
        payload (``sse_raw.rewrite``); every other string the patterns."""
        sse = tr.get("sse")
        if not isinstance(sse, dict) or not isinstance(sse.get("raw"), str):
            return self._generic(tr, seq, ("message", "transport"))
        out = self._generic({**tr, "sse": {k: v for k, v in sse.items() if k != "raw"}}, seq, ("message", "transport"))
        payload = None
        if new_raw != raw:
            body = new_raw[:len(new_raw) - len(eol)] if eol and new_raw.endswith(eol) else new_raw
            payload = body.decode("utf-8", "replace")
        out["sse"]["raw"] = rewrite_sse(sse["raw"], payload, lambda s: self._text(s, "transport.sse.raw", seq))
        return out


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except RecursionError:      # too deep to compare: taken as changed
        return True


def learned(redactor: Redactor, header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Repeats:
    """The secrets a scrub of ``header`` and ``records`` (a whole capture) would find, for a
    second pass (``Scrubber(known=…)``) that replaces them also where they occur before the
    record that showed them secret (a tool result repeating a password that a later request
    carries under its key)."""
    first = Scrubber(redactor)
    first.header(header)
    for _ in first.records(records):
        pass
    return first.redactor.repeats


def record_scrub(redactors: list[Redactor]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``CaptureWriter.transform`` that scrubs every record written, header included, with
    one pass per redactor in order (the new header lists them as a scrubbed capture's does):
    ``replay``'s new capture and ``serve -o`` of a scrubbed capture, so neither holds a live
    secret (and ``diff`` against the capture compares placeholders)."""
    passes = [Scrubber(r) for r in redactors]

    def scrub(rec: dict[str, Any]) -> dict[str, Any]:
        for p in passes:
            rec = p.transform(rec)
        return rec

    return scrub
