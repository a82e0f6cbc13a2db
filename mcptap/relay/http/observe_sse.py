"""SSE events of an HTTP exchange as capture records (pure; part of ``HttpObserver``).

``SseObserver`` is the mixin ``relay/http/observe.py``'s ``HttpObserver`` uses for
``text/event-stream`` bodies: each event with data becomes a message frame (s2c,
``transport.sse``), an event without (priming, comment, id-only) an ``sse``
record, and the legacy ``endpoint`` event an ``sse`` record with its findings
(the URL's credentials scrubbed). Nothing here raises on peer input.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mcptap.model import UNPARSED, Direction, Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.skeleton import SKELETON_ABOVE, parse_message
from mcptap.protocol.sse import SSEEvent
from mcptap.protocol.sse_canonical import big_data, decoded, is_canonical
from mcptap.protocol.sse_rules import data_findings, endpoint_findings, sse_findings, too_large
from mcptap.recorder import Recorder
from mcptap.redact import scrub_text
from mcptap.relay.http import events as r
from mcptap.relay.http.observe_state import ObservedExchange
from mcptap.relay.http.sessions import SessionKeys

S2C = Direction.S2C


class SseObserver:
    """The SSE part of ``HttpObserver`` (see module doc); the attributes are the observer's."""

    rec: Recorder
    upstream: r.Upstream
    listen_authority: str
    listen_scheme: str
    record_secrets: bool
    _sessions: SessionKeys
    _pending_rewrites: dict[int, list[tuple[str, str]]]
    #: when a dict: each SSE message's (data bytes, parsed value) is appended, as recorded, to the
    #: list of its exchange, for a caller that hands the same messages on (replay's legacy link)
    #: without parsing them again
    parsed_sink: dict[int, list[tuple[bytes, Any]]] | None = None

    def _target(self, target: str) -> str:
        raise NotImplementedError

    def _transport(self, e: ObservedExchange, **extra: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _sse_event(self, e: ObservedExchange, ev: SSEEvent) -> None:
        e.events += 1
        if ev.id:
            e.ids.append(ev.id)
        fs = sse_findings(ev)
        if ev.cr:
            if e.cr_seen:      # once per stream: SDKs on sse-starlette end every line with CR LF
                fs = [f for f in fs if f.code != "sse.crlf"]
            e.cr_seen = True
        info: dict[str, Any] = {"event": ev.type, "offset": e.sse_base + ev.start, "bytes": ev.end - ev.start}
        if ev.id is not None:
            info["id"] = ev.id
        if ev.retry is not None:
            info["retry"] = ev.retry
        if ev.chunks > 1:
            info["chunks"] = ev.chunks
        if not ev.terminated:
            info["terminated"] = False
        if ev.dropped:
            info["dropped"] = ev.dropped       # bytes not held (``SSEParser``'s ``max_block``)
        if ev.type == "endpoint" and ev.data_lines:
            # several long data lines are left undecoded by the parser: the endpoint is their text
            self._endpoint(e, decoded(ev) if ev.data_cuts else ev, fs, info)
            return
        if ev.data_bytes is not None:
            big = big_data(ev) if ev.type != "endpoint" else None    # the long data line's bytes are the payload
            if big is not None:
                if big[2] is not None:
                    info["raw"] = big[2] if self.rec.writes_in_pieces else str(big[2])
                del ev
                self._sse_message(e, big[0], big[1], info, fs)
                return
            ev = decoded(ev)
        if ev.data_lines and ev.data != "":
            if not is_canonical(ev):
                info["raw"] = ev.raw.decode("utf-8", "replace")
            quote, text = ev.data[:40], ev.data
            del ev        # the caller holds no reference: a large event's bytes go before the text is encoded
            raw = text.encode("utf-8")
            del text      # and its text before its JSON is parsed
            self._sse_message(e, raw, quote, info, fs)
            return
        if ev.blank and not fs:
            return
        if ev.comments:
            info["comments"] = list(ev.comments)
        self._sse_record(e, info, fs)

    def _sse_read(self, e: ObservedExchange, data: bytes) -> None:
        """One read of an event stream's body (decoded), fed to the parser; its events recorded."""
        assert e.parser is not None
        e.sse_fed += len(data)
        if e.sse_cr and data == b"\n":
            e.sse_lone_lf = True
        self._sse_events(e, e.parser.receive_data(data))

    def _sse_events(self, e: ObservedExchange, evs: list[SSEEvent], client_closed: bool = False) -> bool:
        """Record events taken one by one off the list, so each is freed once
        recorded. ``client_closed``: the stream ends because the client went
        away, so an unfinished last event was cut by the client, not sent so.
        Returns whether there was such an event."""
        if e.resync and evs:
            self._resynced(e, evs)
        evs.reverse()
        cut = False
        while evs:
            ev = evs.pop()
            if e.sse_cr and ev.raw[:1] == b"\n":
                ev = own_bytes(ev, e.sse_lone_lf)
                if not ev.raw:
                    e.sse_cr = e.sse_lone_lf = False
                    continue        # (that LF alone, at the end of the stream)
            e.sse_lone_lf = False
            e.sse_cr = ev.last_cr if ev.dropped else ev.raw[-1:] == b"\r"
            if client_closed and not ev.terminated and not ev.blank:
                self._sse_cut(e, ev)
                cut = True
            else:
                self._sse_event(e, ev)
        return cut

    def _resynced(self, e: ObservedExchange, evs: list[SSEEvent]) -> None:
        """A stream cut by a gap (``observe_gap``): the first block after the
        hole is taken off ``evs`` and recorded as cut (it may be the rest of the
        event under way, or its start may be in the hole); framing goes on from
        the next event boundary."""
        first = evs.pop(0)
        e.resync = False
        e.sse_cr = False
        self._gap_cut(e, e.sse_base + first.start, first.end - first.start, first.terminated)

    def _gap_cut(self, e: ObservedExchange, offset: int, n: int, terminated: bool, dropped: int = 0) -> None:
        """An ``sse`` record for ``n`` bytes of a stream cut by a gap: no
        message, and no finding on the server (the ``gap`` record says what was
        lost) but ``sse.event_too_large`` when the part before the hole was
        already beyond what the tap holds (``dropped`` bytes not kept)."""
        e.events += 1
        info: dict[str, Any] = {"event": "message", "offset": offset, "bytes": n, "cut": "gap"}
        if not terminated:
            info["terminated"] = False
        if dropped:
            info["dropped"] = dropped
        self._sse_record(e, info, [too_large(n)] if dropped else [])

    def _sse_cut(self, e: ObservedExchange, ev: SSEEvent) -> None:
        """The unfinished event of a stream the client closed (an SDK client
        stops at its own event size limit): the server was still sending it,
        so its part is neither a message nor a framing fault of the server's;
        an ``sse`` record says how much of it came."""
        e.events += 1
        n = ev.end - ev.start
        info: dict[str, Any] = {"event": ev.type, "offset": e.sse_base + ev.start, "bytes": n, "terminated": False, "cut": "client_closed"}
        fs = [finding("sse.client_closed_mid_event", f"the client closed the stream inside an event, {n} bytes of it "
                                                     "received so far: the rest was never relayed (not judged as the server's data)",
                      {"bytes": n})]
        if ev.dropped:
            # already beyond what the tap holds (a cut endless event): said as for a complete one
            info["dropped"] = ev.dropped
            fs.append(too_large(n))
        del ev
        self._sse_record(e, info, fs)

    def _sse_message(self, e: ObservedExchange, raw: bytes, quote: str, info: dict[str, Any], fs: list[Finding]) -> None:
        # parsed once, here: the recorder gets the value (valid UTF-8 by construction);
        # a number beyond a double or a lone surrogate is left to the recorder, which flags it
        value, _, odd = parse_message(raw)
        if self.parsed_sink is not None and not odd and len(raw) <= SKELETON_ABOVE:
            self.parsed_sink.setdefault(e.id, []).append((raw, value))
        fs.extend(data_findings(value, quote))
        box = [UNPARSED if odd else value]
        del value     # only the recorder's frame holds it: it drops a large message's value once annotated
        self.rec.frame(S2C, raw, session=e.session, transport=self._transport(e, sse=info), extra=fs, value=box.pop())

    def _sse_record(self, e: ObservedExchange, info: dict[str, Any], fs: list[Finding], **extra: Any) -> None:
        fields: dict[str, Any] = {"event": "sse", "exchange": e.id, "conn": e.conn, "sse": info}
        if e.session is not None:
            fields["session"] = e.session
        fields.update(extra)
        self.rec.http(findings=fs, **fields)

    def _endpoint(self, e: ObservedExchange, ev: SSEEvent, fs: list[Finding], info: dict[str, Any]) -> None:
        rewritten = None
        pend = self._pending_rewrites.get(e.id)
        if pend:
            for i, (orig, new) in enumerate(pend):
                if orig == ev.data.strip() or orig == ev.data:
                    rewritten = new
                    del pend[i]
                    break
        # the origin the client addressed: the tap's (plain http), or for replay the server's own (maybe https)
        tap_origin = f"{self.listen_scheme}://{e.host or self.listen_authority}"
        efs, resolved = endpoint_findings(ev.data, tap_origin + e.target, tap_origin, self.upstream.origin, rewritten)
        if not self.record_secrets:
            # the findings quote the endpoint URL, whose query may carry a token
            efs = [dataclasses.replace(f, message=scrub_text(f.message),
                                       data={k: scrub_text(v) if isinstance(v, str) else v for k, v in f.data.items()} if f.data else f.data)
                   for f in efs]
        key = self._sessions.bind_endpoint(resolved, tap_origin)
        if key is not None:
            e.facts.session = key
            e.facts.legacy = True
        # the endpoint URL may carry a token in its query (legacy servers): scrubbed like targets
        endpoint = {"data": self._target(ev.data), "resolved": self._target(resolved)}
        if rewritten is not None:
            endpoint["rewritten"] = self._target(rewritten)
        self._sse_record(e, info, fs + efs, endpoint=endpoint)


def own_bytes(ev: SSEEvent, lone: bool = False) -> SSEEvent:
    """``ev`` without its first byte, the LF of a CR LF whose CR ended the
    event before it: the parser emits an event at its blank line's CR, so when
    a read ends between CR and LF the LF arrives as the first byte of the next
    block (protocol/sse.py). The record of each event then holds its own bytes
    whatever the reads were (``offset``, ``bytes`` and ``raw`` as in one read);
    the event before ends at its CR (its record was written when the CR came),
    and that LF lies between the two records' ranges. ``lone``: that LF came in a read
    of its own, which then brought none of the event's own bytes (``chunks``)."""
    drop = 1 if ev.data_bytes is not None else 0        # the offsets into raw move with it
    return dataclasses.replace(ev, raw=ev.raw[1:], start=ev.start + 1, data_at=max(ev.data_at - drop, 0),
                               data_cuts=tuple(c - 1 for c in ev.data_cuts), chunks=max(ev.chunks - lone, 1))
