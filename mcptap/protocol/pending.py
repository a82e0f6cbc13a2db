"""The pending-request records of request/response correlation (pure):
``Pending`` (one request awaiting its answer), the bounded windows completed
requests are remembered in (``BoundedMap``, ``DONE_WINDOW`` entries), the
``SESSIONLESS`` pairing scope and ``report_once``. protocol/pairing.py pairs with them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcptap.model import Direction, Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.jsonrpc import show_id

DONE_WINDOW = 4096


class _Sessionless:
    """Type of ``SESSIONLESS`` (hashable by identity, equal to no session id)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SESSIONLESS"


#: The pairing scope of the server's requests on HTTP without Mcp-Session-Id
#: (handshake era): the server sends one on a POST's (or GET's) response stream
#: and the client answers it in a POST of its own, so the exchanges that scope
#: the client's requests cannot pair them. Sessionless traffic is one logical
#: client (docs/http-tap.md), and the server's ids are unique among its open
#: requests, so they pair in this one scope across exchanges.
SESSIONLESS = _Sessionless()


@dataclass(slots=True)
class Pending:
    """One request awaiting its response. ``direction``: the requester's;
    ``t_us``: when it was sent (µs since capture start); ``exchange``: the HTTP
    exchange that carried it (None on stdio); ``member``: batch index or None."""

    seq: int
    t_us: int
    direction: Direction
    id: Any
    method: str | None
    session: Any = None           # the pairing scope: session id, None (stdio), ("exchange", n) (stateless HTTP) or SESSIONLESS
    token: Any = None
    cancelled: bool = False
    exchange: Any = None
    member: int | None = None
    reported: bool = False
    revision: str | None = None
    params: Any = None
    last_progress: float | None = None
    key: Any = None               # (session, direction, id_key) once registered
    in_gap: bool = False          # a recording gap covered its answer's direction while it was open (gap_pending.py)
    #: live stdio: its answer's direction was stored unframed (chunk records) while it was open; the
    #: answer may be in them, so only re-annotation (which frames them) can judge it
    deferred: bool = False

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "dir": self.direction.value, "id": self.id, "method": self.method}
        if type(self.id) is float and not -1e308 < self.id < 1e308 or type(self.id) is str and not self.id.isprintable():
            d["id_text"] = show_id(self.id)         # ±infinity: JSON writes null (NaN: orjson never reads one); a lone surrogate
        if self.session is not None and self.session is not SESSIONLESS:
            d["session"] = self.session
        return d




def report_once(requests: list[Pending], code: str, text: str) -> list[Finding]:
    """One ``code`` finding about ``requests`` (``text`` then the first ten named; all of them
    described in its data), each marked reported so no later judgement names it again; [] for none."""
    if not requests:
        return []
    for p in requests:
        p.reported = True
    return [finding(code, text + ", ".join(f"#{p.seq} {p.method} id={show_id(p.id)}" for p in requests[:10]),
                    {"pending": [p.describe() for p in requests]})]


class BoundedMap:
    """Mapping bounded to ``limit`` entries, oldest evicted first (O(1): a
    plain dict would rescan its deleted head on every eviction)."""

    __slots__ = ("d", "limit")

    def __init__(self, limit: int = DONE_WINDOW) -> None:
        self.d: OrderedDict[Any, Any] = OrderedDict()
        self.limit = limit

    def add(self, k: Any, v: Any) -> None:
        d = self.d
        if k in d:
            d.move_to_end(k)
        d[k] = v
        if len(d) > self.limit:
            d.popitem(last=False)

    def get(self, k: Any) -> Any:
        return self.d.get(k)
