"""Who talked in each session of a capture, as the report's session headers show it (pure).

:class:`Sessions` is fed a capture's records in order (``feed``) and gives one
dict per session (``result``; at most ``LIMIT``)::

    {"session": key, "label": str, "client": {protocolVersion?, clientInfo?, capabilities?},
     "server": {protocolVersion?, serverInfo?, capabilities?, instructions?, supportedVersions?},
     "revision": str | None, "via": "initialize" | "server/discover" | "request _meta"}

``key`` is the records' ``session`` (an ``Mcp-Session-Id``, a stdio segment key,
or None); ``label`` names it for a reader: the key, else ``(stdio)`` on stdio and
``(no Mcp-Session-Id)`` on HTTP (stateless requests, one session per exchange).

Every era: before 2026-07-28 the client introduces itself in ``initialize``
(``params.clientInfo``, ``protocolVersion``, ``capabilities``) and the server in
its result; in 2026-07-28 every request carries ``params._meta``
``io.modelcontextprotocol/protocolVersion``, ``…/clientInfo`` and
``…/clientCapabilities``, and results (``server/discover``'s among them)
``_meta["io.modelcontextprotocol/serverInfo"]`` (spec facts: "Per-request
``_meta`` keys"). The revision is the one negotiated (``initialize`` result),
else the per-request one (authoritative in 2026-07-28), else one a record was
annotated with (``rev``), else the one the client asked for.

A request the tap refused itself and never forwarded (its exchange's ``end``
``how`` is one of ``records.events.TAP_REFUSED``: a DNS rebinding page, a malformed
request) is nobody's session: what it claimed is dropped.
"""

from __future__ import annotations

from typing import Any

from mcptap.records.events import TAP_REFUSED

#: sessions described at most (a capture of many short sessions: the first ones)
LIMIT = 20
#: candidates kept per slot while their exchange may still turn out refused
_PENDING = 4
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"
_SERVER_KEYS = ("protocolVersion", "serverInfo", "capabilities", "instructions", "supportedVersions")
# slots, in the order of preference within each part
_CLIENT_SLOTS = ("init_client", "meta_client")
_SERVER_SLOTS = ("init_server", "meta_server")


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


class Sessions:
    """The session identities of one capture (module doc). ``transport``: the
    capture header's (``"http"`` or ``"stdio"``)."""

    def __init__(self, transport: Any) -> None:
        self.http = transport == "http"
        #: key -> slot -> [(exchange or None, value)]
        self._slots: dict[Any, dict[str, list[tuple[Any, Any]]]] = {}
        self._requests: dict[Any, tuple[str, Any]] = {}     # seq of an initialize / server/discover -> (method, exchange)
        self._exchanges: set[Any] = set()                   # exchanges a candidate came from

    def _add(self, key: Any, slot: str, exchange: Any, value: Any) -> None:
        slots = self._slots.get(key)
        if slots is None:
            if len(self._slots) >= LIMIT:
                return
            slots = self._slots[key] = {}
        got = slots.setdefault(slot, [])
        if len(got) < _PENDING:
            got.append((exchange, value))
            if exchange is not None:
                self._exchanges.add(exchange)

    def _refused(self, exchange: Any) -> None:
        self._exchanges.discard(exchange)
        for slots in self._slots.values():
            for slot, got in slots.items():
                slots[slot] = [c for c in got if c[0] != exchange]

    def feed(self, rec: dict[str, Any]) -> None:
        """Take one record (any type; the ones that say nothing are ignored)."""
        typ = rec.get("type")
        if typ == "http":
            if rec.get("event") == "end" and rec.get("how") in TAP_REFUSED and rec.get("exchange") in self._exchanges:
                self._refused(rec.get("exchange"))
            return
        if typ != "message" or not isinstance(rec.get("json"), dict):
            return
        v, key, kind = rec["json"], rec.get("session"), rec.get("kind")
        exchange = _obj(rec.get("transport")).get("exchange")
        if isinstance(rec.get("rev"), str):
            self._add(key, "rev", None, rec["rev"])
        if kind == "request":
            params = _obj(v.get("params"))
            meta = _obj(params.get("_meta"))
            method = rec.get("method")
            if method in ("initialize", "server/discover"):
                self._requests[rec.get("seq")] = (str(method), exchange)
            if method == "initialize":
                self._add(key, "init_client", exchange,
                          {k: params[k] for k in ("protocolVersion", "clientInfo", "capabilities") if k in params})
            if META_VERSION in meta or META_CLIENT in meta:
                client = {"protocolVersion": meta.get(META_VERSION), "clientInfo": meta.get(META_CLIENT),
                          "capabilities": meta.get(META_CAPS)}
                self._add(key, "meta_client", exchange, {k: x for k, x in client.items() if x is not None})
        elif kind == "response" and isinstance(v.get("result"), dict):
            res = v["result"]
            server = {k: res[k] for k in _SERVER_KEYS if k in res}
            info = _obj(res.get("_meta")).get(META_SERVER)
            if "serverInfo" not in server and isinstance(info, dict):
                server["serverInfo"] = info
            asked = self._requests.pop(rec.get("pair"), None)
            if asked is not None:
                self._add(key, "init_server", exchange, dict(server, via=asked[0]))
            elif "serverInfo" in server:
                self._add(key, "meta_server", exchange, {"serverInfo": server["serverInfo"]})

    def label(self, key: Any) -> str:
        """The session's name for a reader (module doc)."""
        if key is not None:
            return str(key)
        return "(no Mcp-Session-Id)" if self.http else "(stdio)"

    def result(self) -> list[dict[str, Any]]:
        """One dict per session seen, in order of first appearance (module doc)."""
        out = []
        for key, slots in self._slots.items():
            first = {slot: got[0][1] for slot, got in slots.items() if got}
            client = first.get("init_client") or first.get("meta_client")
            server = dict(first.get("init_server") or {})
            via = server.pop("via", None)
            if "serverInfo" not in server and "meta_server" in first:
                server["serverInfo"] = first["meta_server"]["serverInfo"]
            if client is None and not server:
                continue        # only a rev, or only what refused requests claimed
            if self.http and key is None and not server and "meta_client" not in first:
                continue        # an HTTP initialize nobody answered (a 401 before OAuth): it started no session
            modern = first.get("meta_client") or {}
            revision = (server.get("protocolVersion") if via == "initialize" else None) or modern.get("protocolVersion") \
                or first.get("rev") or (client or {}).get("protocolVersion")
            if via is None:
                via = "initialize" if "init_client" in first else "request _meta"
            out.append({"session": key, "label": self.label(key), "client": client or {}, "server": server,
                        "revision": revision if isinstance(revision, str) else None, "via": via})
        return out
