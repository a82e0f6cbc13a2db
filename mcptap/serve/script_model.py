"""The serve script's shape (pure, level 3): what ``serve/script.py`` builds from a capture and
``serve/core.py`` plays — :class:`Script`, its sessions (:class:`SessionScript`), their recorded
client messages (:class:`Recorded`) and the server messages anchored to each (:class:`Emission`).
How a server message is anchored is serve/script.py's docstring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.serve.script_http import HttpEnding, KindAnswer


@dataclass(slots=True)
class Emission:
    """One recorded server message. ``delay_us``: after its anchor (recorded);
    ``pair``/``link``: recorded seq of the request it answers / reports on;
    ``stream``: ``"post"``, ``"get"`` or None (stdio); ``opener``: recorded seq
    of the client request whose POST stream carried it; ``raw``: not a message (``value``
    is then None): the bytes to replay; ``members``: a batch's answers by member index."""

    seq: int
    value: Any
    kind: str
    delay_us: int
    pair: int | None = None
    link: int | None = None
    stream: str | None = None
    opener: int | None = None
    #: a line that is not a JSON-RPC message (a banner, a blank line, JSON with trailing text,
    #: JSON that is not JSON-RPC): its recorded bytes, newline-terminated, replayed as they are
    raw: bytes | None = None
    #: a batch: recorded seq of the request each member answers, by member index
    members: dict[int, int] = field(default_factory=dict)
    #: kind ``stream_end`` (serve/script_http.py ``STREAM_END``): how the server ended the POST's event
    #: stream that carried messages but not the answer ("complete", or "closed" mid-stream)
    how: str | None = None
    #: the SSE event id it was sent with (what lets a client resume a stream after it)
    event_id: str | None = None


@dataclass(slots=True)
class Recorded:
    """One recorded client message (request, notification, batch, or an answer
    to a server request: kind ``answer`` with ``answers`` the server request's
    seq) and the server messages anchored to it, in recorded order."""

    seq: int
    kind: str
    method: str | None
    value: Any
    group: int
    t_us: int
    emits: list[Emission] = field(default_factory=list)
    answers: int | None = None
    cancels: int | None = None          # notifications/cancelled: recorded seq of the request it cancels
    exchange: Any = None
    status: int | None = None
    mode: str | None = None            # HTTP: "json" or "sse" (how its POST was answered)
    #: HTTP: how its POST ended when that carried no JSON-RPC answer (serve/script_http.py)
    ending: HttpEnding | None = None
    #: HTTP: the events its POST's event stream began with before any message (priming: ``id``, ``retry``,
    #: ``event``), sent again first
    priming: tuple[dict[str, Any], ...] = ()

    @property
    def params(self) -> Any:
        return self.value.get("params") if isinstance(self.value, dict) else None


@dataclass(slots=True)
class SessionScript:
    """One recorded session: ``key`` (its recorded id; stdio: None), client
    messages in order, server messages before the first client message."""

    index: int
    key: Any
    items: list[Recorded] = field(default_factory=list)
    opening: list[Emission] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(1 for r in self.items if r.kind == "request")


@dataclass
class Script:
    """A capture's server side (see module docstring). ``answer_to``: the
    client's recorded answer by the seq of the server request it answers;
    ``cancel_of``: the client's recorded cancel by the seq of the request it cancelled."""

    header: dict[str, Any]
    transport: str = "stdio"
    sessions: list[SessionScript] = field(default_factory=list)
    answer_to: dict[int, Recorded] = field(default_factory=dict)
    cancel_of: dict[int, Recorded] = field(default_factory=dict)
    stateful: bool = False              # HTTP: the server assigned Mcp-Session-Id
    get_stream: bool = False            # HTTP: a GET stream was answered 200 text/event-stream
    legacy_sse: bool = False            # the 2024-11-05 HTTP+SSE transport
    post_path: str = "/mcp"
    sse_path: str = "/sse"
    endpoint_path: str = "/messages/"
    #: HTTP: the recorded answers to GET, DELETE and legacy POST requests the mock sends again, in recorded
    #: order, by ``script_http.refusal_key`` (each kind's own), and under "get" / "delete" the first of every
    #: GET / DELETE (for a kind the capture has none of): the mock gives them in turn, then the last again
    kind_answers: dict[str, list[KindAnswer]] = field(default_factory=dict)
    #: HTTP: the same by recorded session (its index), of the requests that named one: a live session
    #: matched to that recorded session gets its answers, in its own turn (serve/http_send.Answering._turn)
    session_answers: dict[int, dict[str, list[KindAnswer]]] = field(default_factory=dict)
    #: HTTP: SSE event id -> seq of the recorded request whose event stream it was sent on (a GET with
    #: ``Last-Event-ID`` resumes that request's stream: serve/script_facts.py ``_resumptions``)
    resume_of: dict[str, int] = field(default_factory=dict)
    #: HTTP: the OAuth discovery documents the mock serves, by path: status, headers, body (serve/script_auth.py)
    auth_docs: dict[str, tuple[int, tuple[tuple[str, str], ...], bytes]] = field(default_factory=dict)
    auth_paths: set[str] = field(default_factory=set)    # the authorization-server paths it does not replay (501)
    auth_notes: list[str] = field(default_factory=list)  # what the mock cannot do of the capture's OAuth, a line each
    #: what made client requests invalid (``wire.defect``) that the recorded server answered all the same
    answered_defects: set[str] = field(default_factory=set)

    def first_status(self, what: str, default: int) -> int:
        """The status of the first recorded answer of ``what`` ("get", "delete"), or ``default``."""
        got = self.kind_answers.get(what)
        return got[0].ending.status or default if got else default

    @property
    def answers(self) -> int:
        """Recorded server messages (responses and others) in all sessions."""
        return sum(len(r.emits) for s in self.sessions for r in s.items) + sum(len(s.opening) for s in self.sessions)

    @property
    def endings(self) -> int:
        """Recorded client requests the server ended without a JSON-RPC answer (an HTTP 401, 403…,
        a closed connection: ``Recorded.ending``), which the mock serves as recorded too."""
        return sum(1 for s in self.sessions for r in s.items if r.ending is not None)
