"""One legacy HTTP+SSE session's event stream as the replay link keeps it
(``replay/sse_link.py``), and the handshake it gives again on a reopened one.

The legacy transport (2024-11-05 basic/transports) has no resumption: a stream
the server ended and the link opened again comes with a new ``endpoint``, which
is a new session to the server (the SDK's ``mcp.server.sse`` starts a fresh
``ServerSession`` per GET, which refuses requests until it is initialised). So
before the next message goes to a reopened stream's endpoint, the link gives the
new session the recorded session's handshake as it was sent: its ``initialize``
under an id of mcptap's own (``Again.ids``; its answer comes on the stream and
is recorded, never handed to the runner) and, once that is answered,
``notifications/initialized``. A session whose ``initialize`` was not sent yet
has nothing to give again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio

#: the own id of the n-th initialize given again (``Again.next_id``)
AGAIN_ID = "mcptap-replay-initialize-{}"


@dataclass(slots=True)
class SseStream:
    """One session's event stream: the endpoint target (``path?query``) once
    announced, or why there is none. ``ready`` is set once messages may go to
    the endpoint (on a reopened stream: after the handshake given again)."""

    target: str | None = None
    failed: str | None = None
    status: int = 0
    ready: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: the requests POSTed to this stream's endpoint whose answers have not come on it (id key -> id)
    owed: dict[Any, Any] = field(default_factory=dict)
    #: the server ended the stream and it was opened again (a new session for the server)
    reopened: bool = False

    def reopening(self) -> None:
        """The server ended the stream: sends wait for the next one's endpoint."""
        self.target, self.failed, self.status, self.ready, self.reopened = None, None, 0, trio.Event(), True


class Again:
    """The handshake of each session as the runner sent it (``sent``), and the
    initializes given again whose answers are awaited (own id -> Event)."""

    def __init__(self) -> None:
        self.handshakes: dict[Any, list[Any]] = {}
        self.ids: dict[str, trio.Event] = {}
        #: the own ids whose initialize was refused (an error answer, or the POST failed)
        self.refused: set[str] = set()
        self._n = 0

    def sent(self, value: Any, session: Any) -> None:
        """Note ``value`` if it is ``session``'s initialize or initialized notification."""
        if isinstance(value, dict):
            method = value.get("method")
            if method == "initialize" and "id" in value:
                self.handshakes[session] = [value, None]
            elif method == "notifications/initialized" and session in self.handshakes:
                self.handshakes[session][1] = value

    def next_id(self) -> tuple[str, trio.Event]:
        """An own id for an initialize given again, and the Event its answer sets."""
        self._n += 1
        key = AGAIN_ID.format(self._n)
        ev = self.ids[key] = trio.Event()
        return key, ev

    def answered(self, value: Any) -> bool:
        """Whether ``value`` answers an initialize given again: its Event is set
        (an error answer, or the link's synthetic one for a failed POST, refuses it)."""
        if isinstance(value, dict) and "method" not in value and type(value.get("id")) is str:
            ev = self.ids.pop(value["id"], None)
            if ev is not None:
                if "error" in value:
                    self.refused.add(value["id"])
                ev.set()
                return True
        return False
