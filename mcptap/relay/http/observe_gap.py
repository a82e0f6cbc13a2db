"""Exchanges cut by a gap in the recording (pure; part of ``HttpObserver``).

When batches of relay facts were not recorded (the recorder process fell
behind past the relay's spill bound, or was told to hurry at the end:
``transport/http_recorder_child.py``), the bytes after the hole must not be
read as if they followed the bytes before it: an SSE event, a JSON body or a
request body spliced across the hole is garbage mcptap made, not the peer's.
``GapObserver.lost(exchanges)`` marks each exchange the lost batches carried
(``ObservedExchange.gap``) and cuts what it was reading there:

* an SSE stream: the part of the event under way is an ``sse`` record
  (``cut: "gap"``, ``terminated: false``), never a message; the parser starts
  afresh and the first block after the hole (the rest of the cut event, or
  an event whose start the hole may hold) is one more such record, so events
  are framed again from the next event boundary (a blank line), as a stdio
  stream is from the next line start (``Recorder.lost``). Unless the stream
  is certainly at an event boundary after the hole: the LOST frame carries
  the last bytes of each exchange's response body in the hole
  (``fact_codec.body_tails``), and when they end with a blank line, or the
  hole held none of its body and nothing of an event was under way before
  it, the first block after it is an event like any other. A compressed body
  cannot be resumed mid-stream: it is counted, no longer analysed;
* a JSON response body or a request body under way is not framed (its part is
  no message): a request body goes into a ``request_body`` http record;
* the exchange's ``end`` http record says ``gap: true``, and its end is judged
  without what the hole may have held (``http_judge.End.gap``).

A fact that ends an exchange can be in the hole too: its ``ResponseEnded``, or
the ``ConnClosed`` that ends one answered before its request body ended (a
LOST frame names no exchange for a connection's close). The relay never says
it again, so at the end of the relay's facts ``close_out`` ends every exchange
still open after a gap: one answered early with that answer's end, any other
with ``how: "gap"``; both with ``gap: true``. So every exchange has its ``end``
record (the HAR export's ``_mcp.how``).

Offsets in ``sse`` facts after the hole count the bytes recorded (the hole's
are not known per exchange). Nothing here raises on peer input.
"""

from __future__ import annotations

from collections.abc import Collection

from mcptap.protocol.sse import SSEParser
from mcptap.protocol.sse_canonical import LAZY_DATA_ABOVE
from mcptap.relay.http import events as r
from mcptap.relay.http.observe_sse import SseObserver
from mcptap.relay.http.observe_state import ObservedExchange


class GapObserver(SseObserver):
    """The gap part of ``HttpObserver`` (see module doc; the SSE stream's
    resynchronisation is ``SseObserver._resynced``); the attributes are the observer's."""

    _ex: dict[int, ObservedExchange]
    #: relay facts were lost (a gap): the end of an exchange may have been among them
    _gapped = False

    def _finish(self, e: ObservedExchange, it: r.ResponseEnded) -> None: ...   # HttpObserver's

    def lost(self, exchanges: Collection[int] | None, tails: dict[int, bytes] | None = None) -> None:
        """Relay facts of ``exchanges`` (None: of any exchange) were not
        recorded: cut each open one there (module doc). ``tails``: the last
        bytes of each one's response body in the hole, an exchange not named
        having none there (None: not known). Call before the gap records, so
        what came before the hole is recorded before them."""
        self._gapped = True
        for e in list(self._ex.values()):
            if exchanges is None or e.id in exchanges:
                self._cut_by_gap(e, None if tails is None else tails.get(e.id, b""))

    def close_out(self) -> None:
        """The relay's facts are over (mcptap is ending, before the end
        record): after a gap, the exchanges still open had their end in the
        hole; each gets its ``end`` record now (module doc). Without a gap
        the relay ended every exchange itself: nothing to do."""
        if not self._gapped:
            return
        for e in list(self._ex.values()):
            held = e.held_end
            if held is not None:
                # answered before its request ended; the close of its connection was lost: how
                # the request body ended is not known (not request_cut: the hole may hold its end)
                e.gap = e.req_gap = True
                e.held_end = None
                self._finish(e, held)
            else:
                self._cut_by_gap(e)
                self._finish(e, r.ResponseEnded(e.id, e.conn, "gap", "its end was in a gap in the recording (relay facts not recorded)",
                                                response_started=e.response_started))

    def _cut_by_gap(self, e: ObservedExchange, tail: bytes | None = None) -> None:
        e.gap = True
        if not e.req_ended:
            e.req_gap = True             # its body (or its end) may be in the hole
        if not e.response_started:
            return                       # a head after the hole starts the body whole
        e.resp_gap = True
        if e.decoder is not None:
            e.undecodable = True         # a compressed stream does not resume mid-way
        p = e.parser
        if p is None or e.undecodable:
            return
        # the event under way ends here, unterminated: what the parser holds of it, or
        # only its size when it was too large to hold (its finding is the server's: it
        # sent that many bytes in one event before the hole)
        under_way = False
        for ev in p.receive_data(b""):
            if not ev.blank:
                under_way = True
                self._gap_cut(e, e.sse_base + ev.start, ev.end - ev.start, False, ev.dropped)
        e.sse_base += e.sse_fed
        e.sse_fed = 0
        e.parser = SSEParser(LAZY_DATA_ABOVE)
        # the first block after the hole is an event of its own only when certain (module doc)
        e.resync = not (_event_end(tail) if tail else tail == b"" and not under_way)


def _event_end(tail: bytes) -> bool:
    """Whether bytes ending in ``tail`` end with a blank line (an SSE event's
    end: a line end then an LF, a CR LF or a lone CR, which ends a line by
    itself, as protocol/sse.py reads it; a CR LF counts as one line end, so
    its pair is not read as two)."""
    if not tail.endswith((b"\n", b"\r")):
        return False
    rest = tail[:-2] if tail.endswith(b"\r\n") else tail[:-1]
    return rest.endswith((b"\n", b"\r"))
