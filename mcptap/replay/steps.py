"""The parts of a replay plan (pure, level 3): the :class:`Plan` itself,
:class:`Step` (one c2s message of the original session, held packed),
:class:`Carry`, :class:`ServerRequest` and the :class:`AnswerBook` of the
client's recorded answers. Built by ``replay/builder.py`` record by record,
driven by ``replay/plan.py`` (see its docstring)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.capture.dumps import dumps
from mcptap.compare.depth import depth
from mcptap.compare.mask import Masker
from mcptap.compare.match import Matcher
from mcptap.protocol.jsonparse import LITERAL, parse_exact


@dataclass(slots=True)
class Carry:
    """Substitute, at ``path`` of this step's message, the value found at
    ``source_path`` of step ``source``'s live response (``value``: the original)."""

    path: tuple[Any, ...]
    source: int
    source_path: tuple[Any, ...]
    value: Any


@dataclass(slots=True)
class ServerRequest:
    """A request the server sent in the original session (legacy era), with
    the client's answer (a ``{"result": …}`` or ``{"error": …}`` dict, or None).
    What can have caused it (``replay/in_flight.py``, set once planning ends):
    ``in_flight``, how many client requests were in flight when the server sent
    it (over HTTP, of its ``session`` or sessionless); ``only_skipped``, each
    of them is a skipped step; ``during``, the first few of them (plan step
    indices, in send order)."""

    seq: int
    method: str
    params: Any
    answer: dict[str, Any] | None = None
    session: Any = None
    in_flight: int = 0
    only_skipped: bool = False
    during: tuple[int, ...] = ()


@dataclass(slots=True)
class Notified:
    """The server notifications of one method (in one recorded ``session``,
    HTTP) in the original session: ``total``, and ``expected`` of them, those
    sent while a request replay sends was in flight or none was (not
    only while skipped ones were: nothing sent live could cause them)."""

    method: Any
    session: Any = None
    total: int = 0
    expected: int = 0


def pack(value: Any, exact: bool) -> Any:
    """``value`` held compactly: the bytes orjson writes for it when ``exact``
    (it was read by orjson, so it reads back the same) and orjson can write it
    (not nested deeper than 254 levels, no integer beyond 64 bits); else
    ``value`` itself (no JSON value is ``bytes``)."""
    if exact and isinstance(value, (dict, list)):
        try:
            # copied: orjson's bytes keep the capacity of its write buffer (4 KiB for a small message)
            return bytes(memoryview(orjson.dumps(value)))
        except (TypeError, orjson.JSONEncodeError):
            pass
    return value


class Literal(bytes):
    """A c2s message held as JSON bytes in which each number orjson would write
    as another number is its recorded literal (``literal``); read back by
    ``unpack`` with those numbers as ``orjson.Fragment``, sent verbatim (an id
    among them: ``read_id`` gives the number the runner keys it by)."""

    __slots__ = ()


#: a number orjson may write as another one: 16+ significant digits, a 3-digit exponent (cheap test, false hits cost a parse)
_LOSSY_NUMBER = re.compile(rb"(?:[0-9]\.?){16}|[0-9][eE][+-]?[0-9]{3}")


def literal(raw: bytes | None) -> Literal | None:
    """``raw`` (a recorded c2s message's bytes) held as a :class:`Literal` when it
    has a number orjson would write as another one (``1e400`` as null, ``1e-400``
    as 0.0, ``0.30000000000000001`` as 0.3), so replay sends that number as the
    client did; None when it has none or is not JSON."""
    if raw is None or not _LOSSY_NUMBER.search(raw):
        return None
    parsed = parse_exact(raw, literals=True)
    if parsed is None or not parsed[1] & LITERAL:
        return None
    return Literal(dumps(parsed[0]))


def unpack(held: Any) -> Any:
    if type(held) is bytes:
        return orjson.loads(held)
    if type(held) is Literal:
        parsed = parse_exact(held, literals=True)
        return parsed[0] if parsed is not None else None       # (an id too may be a fragment: read_id)
    return held


def wire_id(v: Any) -> Any:
    """A JSON-RPC id as replay sends it: a number beyond any double (read as
    ±infinity, which JSON writes as null) as such a literal again, ``1e400``."""
    return orjson.Fragment(b"1e400" if v > 0 else b"-1e400") if isinstance(v, float) and math.isinf(v) else v


def read_id(v: Any) -> Any:
    """The inverse of ``wire_id``: a fragment (``1e400``, a recorded literal:
    ``literal``) as the number the runner keys it by (±infinity for ``1e400``;
    a link that answers a request itself, an HTTP error, echoes the id it
    sent); any other id as it is."""
    if isinstance(v, orjson.Fragment):
        parsed = parse_exact(orjson.dumps(v))
        return parsed[0] if parsed is not None else v
    return v


def copy_message(value: Any) -> Any:
    """A deep copy of a recorded message to send, or None when it nests deeper
    than 254 levels (orjson's encoder limit). Integers beyond 64 bits, which
    orjson refuses, are copied exactly through the stdlib encoder."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        pass
    if depth(value) > 254:
        return None
    exact = parse_exact(dumps(value))
    return exact[0] if exact is not None else None


UNSEEN = object()      # a tools/call judged before any tools/list of its tool: the policy takes the last listing


@dataclass(slots=True)
class Step:
    """One c2s message of the original session (see module docstring).
    ``message``: the original JSON-RPC object (a list for a batch);
    ``response``: the original response object (None: never answered).
    Both are held packed (``pack``): each read parses them anew, so a
    caller may change what it got without changing the step."""

    index: int
    seq: int
    kind: str                       # request | notification | batch
    method: str | None
    packed_message: Any
    session: Any = None
    orig_id: Any = None
    t_us: int = 0
    waits: list[int] = field(default_factory=list)
    group: int = 0
    skip: str | None = None
    carry: list[Carry] = field(default_factory=list)
    retry_of: int | None = None
    cancel_of: int | None = None
    packed_response: Any = None
    response_seq: int | None = None
    latency_us: int | None = None
    label: str = ""
    part: int = 0                   # index of its session in Plan.sessions (recorded order)
    #: its tools/call(s): (batch member index or None, tool name, its listing when sent: ``UNSEEN`` if none yet),
    #: judged at the end
    tool: list[tuple[int | None, Any, Any]] | None = None
    #: a batch: the members not sent (tool calls that may have side effects), by index, with why
    dropped: dict[int, str] | None = None
    exchange: int | None = None     # HTTP: the exchange that carried it (the tap may have refused it)

    @property
    def message(self) -> Any:
        return unpack(self.packed_message)

    @property
    def response(self) -> Any:
        return unpack(self.packed_response)

    @property
    def answered(self) -> bool:
        """The original session has an answer to this step (cheaper than ``response is not None``)."""
        return self.packed_response is not None

    @property
    def params(self) -> Any:
        m = self.message
        return m.get("params") if isinstance(m, dict) else None


class AnswerBook:
    """The client's recorded answers to server requests, FIFO per key
    (the shared :class:`~mcptap.compare.match.Matcher`, falling back to the
    same method with other params)."""

    def __init__(self, masker: Masker | None = None) -> None:
        self.masker = masker or Masker()
        self._matcher: Matcher[dict[str, Any]] = Matcher(self.masker)

    def add(self, method: str, params: Any, answer: dict[str, Any]) -> None:
        self._matcher.add(method, params, answer)

    def take(self, method: str, params: Any) -> tuple[dict[str, Any] | None, str]:
        """The answer for a live server request (``{"result": …}`` or
        ``{"error": …}``) and how it was found: ``"exact"`` (same method and
        masked params), ``"method"`` (same method), ``"reused"`` (asked more
        often than recorded: the last answer again), ``"default"`` (ping) or
        ``"none"`` (the capture has no answer for ``method``)."""
        ans, how = self._matcher.take(method, params, by_method=True)
        if ans is not None:
            return ans, how
        if method == "ping":
            return {"result": {}}, "default"
        return None, "none"

    def __len__(self) -> int:
        return len(self._matcher)


@dataclass
class Plan:
    """A capture's client side, ready to run. ``era``: "legacy" (initialize
    handshake) or "modern" (2026-07-28); ``server_requests``: what the server
    asked in the original session, in order (for comparison)."""

    header: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    answers: AnswerBook = field(default_factory=AnswerBook)
    server_requests: list[ServerRequest] = field(default_factory=list)
    tools: dict[str, Any] = field(default_factory=dict)
    era: str | None = None
    revision: str | None = None        # the negotiated revision (initialize's answer, or what later messages carry), not a probe's
    transport: str = "stdio"
    duration_us: int = 0
    sessions: list[Any] = field(default_factory=list)   # recorded sessions in order (stdio: None, "stdio-session-2", …)
    http_get: bool = False              # the original HTTP client opened a GET stream for server messages
    legacy_sse: bool = False            # recorded on the legacy HTTP+SSE transport (2024-11-05: an endpoint event)
    notified: list[Notified] = field(default_factory=list)     # the server's notifications, by method (and session)

    @property
    def skipped(self) -> list[Step]:
        return [s for s in self.steps if s.skip]
