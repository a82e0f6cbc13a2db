"""Findings about how a payload was framed (pure): stdio line facts (multi-line
JSON, CR LF, BOM, invalid UTF-8, size, unterminated last line) and payloads
that are not JSON at all. Appended to the annotated ``Message``'s findings."""

from __future__ import annotations

import orjson

from mcptap.model import UNPARSED, Direction, Frame, Message
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut

S2C = Direction.S2C

#: bytes decoded for a line's preview: its first 80 characters and one more (``excerpt.cut``)
_PREVIEW_BYTES = 81 * 4


def framing_findings(frame: Frame, msg: Message, large_message: int) -> None:
    raw = frame.raw
    out = msg.findings
    d = msg.direction._value_
    if frame.lines > 1 and frame.value is not UNPARSED:
        out.append(finding("framing.multiline_json",
                           f"one JSON message spread over {frame.lines} {d} lines; a strict newline framer sees {frame.lines} garbage lines and no message",
                           {"lines": frame.lines}))
    if raw.endswith(b"\r\n"):
        out.append(finding("framing.crlf", f"{d} line ends in CR LF"))
    if raw.startswith(b"\xef\xbb\xbf"):
        out.append(finding("framing.bom", f"{d} message starts with a UTF-8 byte order mark"))
    if frame.invalid_utf8:
        offs = list(frame.invalid_utf8)
        out.append(finding("framing.invalid_utf8",
                           f"invalid UTF-8 at byte offsets {offs} of the {d} line ({', '.join(f'0x{raw[o]:02X}' for o in offs[:8])})",
                           {"offsets": offs}))
    if len(raw) > large_message:
        out.append(finding("framing.large_message", f"{len(raw)} bytes on one {d} line (hosts and bridges have limits of 64 KiB, 1 MiB, 4 MiB)",
                           {"bytes": len(raw)}))
    if not frame.terminated:
        if frame.value is UNPARSED and cut_json(raw):
            out.append(finding("framing.unterminated_line", f"{d} stream ended in the middle of a JSON message: {len(raw)} bytes of it "
                               "and no newline (the sender stopped or died while writing it)", {"bytes": len(raw), "cut": True}))
        else:
            out.append(finding("framing.unterminated_line", f"{d} stream ended with {len(raw)} bytes after the last newline"))


def cut_json(raw: bytes) -> bool:
    """True when ``raw`` is the start of a JSON object or array that ends too
    soon: what a sender that died mid-write leaves (not stray output)."""
    text = raw.strip(b"\r\n \t")
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    return _json_error(text).startswith("unexpected end of data")


def non_json_findings(frame: Frame, msg: Message, transport: str) -> None:
    d = msg.direction._value_
    if transport != "stdio":
        msg.findings.append(finding("sse.data_not_jsonrpc" if (msg.transport or {}).get("sse") else "jsonrpc.invalid_message",
                                    f"{d} payload is not JSON"))
        return
    text = frame.raw.strip(b"\r\n \t")
    if not text:
        msg.findings.append(finding("framing.empty_line", f"blank {d} line"))
        return
    where = f"phase {msg.phase.value}" if msg.phase else "start"
    if _too_deep(text):
        msg.findings.append(finding("framing.nesting_too_deep", f"{d} line is JSON nested deeper than 1024 levels ({where}): "
                                    "relayed, not analysed (most JSON parsers refuse it)", {"bytes": len(frame.raw)}))
        return
    if not frame.terminated and cut_json(frame.raw):
        return      # a message cut short at the end of the stream: framing.unterminated_line says so
    who = "server MUST NOT write non-MCP output to stdout" if msg.direction is S2C else "client MUST NOT write non-MCP input to stdin"
    n = frame.raw.count(b"\n") + (0 if frame.terminated else 1)
    what = f"{n} {d} lines are" if n > 1 else f"{d} line is"
    msg.findings.append(finding("framing.non_jsonrpc_line", f"{what} not JSON ({where}): {who}",
                                {"preview": cut(frame.raw[:_PREVIEW_BYTES].decode("utf-8", "replace"), 80), "lines": n}))


def _too_deep(text: bytes) -> bool:
    """True when ``text`` failed to parse only because it nests deeper than
    the parser's limit (orjson: 1024 levels); cheap for lines that cannot be JSON."""
    return _json_error(text).startswith("depth limit exceeded")


def _json_error(text: bytes) -> str:
    """orjson's error for ``text`` when it starts like a JSON object or array
    and does not parse; "" otherwise (not parsed at all when it cannot be JSON)."""
    if text[:1] not in (b"{", b"["):
        return ""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return str(exc)
    return ""
