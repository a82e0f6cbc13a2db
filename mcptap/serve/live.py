"""The live side of the serving core (pure, level 3): one live client session's state
(:class:`LiveSession`) and what the core hands the transports to send (:class:`Out`; over stdio
as a line, ``line_of``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Finding
from mcptap.serve.script_model import Recorded
from mcptap.serve.wire import encode


@dataclass(slots=True)
class Out:
    """One message to send. ``via``: (HTTP) the live id of the request whose
    response stream carries it, or None for the session's standalone stream;
    ``answers``: the live id this message is the response to (None otherwise);
    ``request``: the live id of the request it belongs to (response, progress),
    whose cancel drops it while it waits for its delay; None for what the
    server sent in reply to that cancel."""

    value: Any
    delay_s: float = 0.0
    via: Any = None
    answers: Any = None
    request: Any = None
    finding: Finding | None = None
    mode: str | None = None             # HTTP: recorded response mode of the request it answers
    status: int | None = None
    more: tuple[Finding, ...] = ()      # stdio: the other findings one line carries (a batch's answers)
    raw: bytes | None = None            # a recorded line that is not a message (``value`` None): its bytes
    rejected: bool = False              # the error answering an invalid request (serve/wire.py)
    seq: int | None = None              # the recorded server message's seq (None: the mock's own)
    cause: int | None = None            # seq of the recorded client message it follows (None: before any)
    #: not a message (``value`` None): the end of the event stream of the request ``via`` names, as the
    #: recorded server ended it without the answer, or (``via`` None) of the session's GET stream, as the
    #: recorded server ended it because of the client message this follows: "complete" or "closed"
    #: (serve/script_http.py)
    ends: str | None = None
    event_id: str | None = None         # the SSE event id the recorded message was sent with


@dataclass
class LiveSession:
    """One live client session: the recorded session it plays (``group``),
    live ids and progress tokens by recorded request seq, server requests
    waiting for the client's answer (by id: their recorded seq, the live id
    of the client request they were sent for, or None, and whether that request got
    an answer given before: what follows the client's answer is then not told again),
    cancelled live request ids."""

    group: int | None = None
    live_ids: dict[int, Any] = field(default_factory=dict)
    tokens: dict[int, Any] = field(default_factory=dict)
    waiting: dict[Any, tuple[int, Any, bool]] = field(default_factory=dict)
    cancelled: set[Any] = field(default_factory=set)
    released: set[int] = field(default_factory=set)     # recorded seqs of cancels already played
    unanswered: list[str] = field(default_factory=list)
    #: the recorded client messages the latest ``receive`` matched (HTTP: how their POSTs ended)
    matched: list[Recorded] = field(default_factory=list)


def line_of(out: Out) -> bytes:
    """The stdio line of ``out``: its recorded bytes when it is not a message, else its JSON and a newline."""
    return out.raw if out.raw is not None else encode(out.value) + b"\n"
