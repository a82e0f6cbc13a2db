"""What a server promised earlier in a session, checked against what it does
later (pure): pagination cursors, tool input/output schemas from ``tools/list``,
resource subscriptions.

Sources: spec server/utilities/pagination (cursors are opaque, come only from
``nextCursor``, are session-scoped; a client stops when ``nextCursor`` is
absent; 2026-07-28: ``""`` is a cursor like any other); server/tools
(2025-06-18+: ``inputSchema`` and ``outputSchema`` are JSON Schemas, 2020-12
unless ``$schema`` says otherwise; a successful result of a tool with an output
schema MUST carry ``structuredContent`` conforming to it; ``isError`` results
are exempt); server/resources (``notifications/resources/updated`` follows a
``resources/subscribe`` for that URI); 2026-07-28 basic/patterns/subscriptions
(a server notification that is not request-scoped rides a
``subscriptions/listen`` stream, tagged ``_meta
io.modelcontextprotocol/subscriptionId`` = the listen request's id, and only
of a type the listen's ``params.notifications`` filter asked for; the
subscription ends with the listen's response or its cancellation).

State is per session key (the annotator's ``msg.session``: a session id, or
None on stdio and stateless HTTP) and bounded. JSON Schema validation uses the
``jsonschema`` library, imported on first use; each schema is compiled once and
shared by every tool and session that declares the same schema.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import Any

import orjson

from mcptap.model import Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut
from mcptap.protocol.rules import REVISIONS, normalize_revision
from mcptap.protocol.schema_fast import Quick, compile_quick
from mcptap.protocol.skeleton import real_text

PAGINATED = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "tasks/list"})
#: client requests whose request or result this module looks at (the annotator skips the rest)
CONTRACT_METHODS = PAGINATED | {"tools/call", "resources/subscribe", "resources/unsubscribe", "subscriptions/listen"}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: 2026-07-28 subscription notifications -> the listen filter field that asks for them
LISTEN_FILTER = {"notifications/tools/list_changed": "toolsListChanged", "notifications/prompts/list_changed": "promptsListChanged",
                 "notifications/resources/list_changed": "resourcesListChanged", "notifications/resources/updated": "resourceSubscriptions"}
_WINDOW = 1024
#: revisions that define outputSchema / structuredContent (server/tools)
_STRUCTURED_SINCE = "2025-06-18"
_NOT_PAGE = ("nextCursor", "_meta")


def _bounded_set(d: OrderedDict[Any, Any], k: Any, v: Any, limit: int = _WINDOW) -> None:
    d[k] = v
    d.move_to_end(k)
    if len(d) > limit:
        d.popitem(last=False)


def _page_digest(result: dict[str, Any]) -> bytes:
    """The page's content without its cursor and _meta (key order ignored)."""
    try:
        return orjson.dumps({k: v for k, v in result.items() if k not in _NOT_PAGE}, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return repr(result).encode()


#: a compiled schema: the jsonschema validator and its quick "certainly valid" check (None: always ask the validator)
Compiled = tuple[Any, Quick | None]


class _Schemas:
    """Compiled JSON Schema validators, keyed by the schema's canonical JSON."""

    def __init__(self) -> None:
        self._cache: OrderedDict[bytes, Compiled | None] = OrderedDict()

    def __reduce__(self) -> tuple[type[_Schemas], tuple[()]]:
        # a cache, not state (each validator is a function of its schema, which Contracts keeps): pickled
        # empty and rebuilt as needed. Its compiled validators hold local functions pickle refuses, so
        # check --full's second process could neither compare nor send an annotator that had seen a schema
        return _Schemas, ()

    def validator(self, schema: Any) -> Compiled | None:
        """The compiled schema, or None when the schema is not usable (not an
        object, unknown dialect, invalid schema): then nothing is judged."""
        if not isinstance(schema, dict):
            return None
        try:
            key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            return None
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        v = _compile(schema)
        _bounded_set(self._cache, key, v, 256)
        return v


def _compile(schema: dict[str, Any]) -> Compiled | None:
    try:
        from jsonschema import Draft6Validator, Draft7Validator, Draft201909Validator, Draft202012Validator
        from jsonschema.validators import validator_for
    except ImportError:  # pragma: no cover - jsonschema is a runtime dependency
        return None
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        v = cls(schema)
    except Exception:  # noqa: BLE001 - a peer's odd schema (SchemaError or worse) must never raise
        return None
    # the dialects in which the quick check's keywords mean what it assumes
    quick = compile_quick(schema) if cls in (Draft202012Validator, Draft201909Validator, Draft7Validator, Draft6Validator) else None
    return v, quick


def _errors(compiled: Compiled, instance: Any) -> list[str]:
    """Up to three validation messages (``path: message``), [] when valid."""
    validator, quick = compiled
    if quick is not None and quick(instance):
        return []               # certainly valid: jsonschema would find nothing
    instance = real_text(instance)          # a pattern is matched in C: a placeholder's marker is not its text
    try:
        errs = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))[:3]
    except Exception:  # noqa: BLE001 - unresolvable $ref and the like: not judged
        return []
    out = []
    for e in errs:
        path = "/".join(str(p) for p in e.absolute_path)
        msg = cut(e.message, 160)
        out.append(f"{path or '(root)'}: {msg}")
    return out


@lru_cache(maxsize=16)
def _structured(revision: str | None) -> bool:
    rev = normalize_revision(revision)
    return rev is None or REVISIONS.index(rev) >= REVISIONS.index(_STRUCTURED_SINCE)


class Contracts:
    """Per-session promises and their checks (see module doc).

    ``request(session, method, params, from_start)`` and
    ``result(session, method, request_params, result, revision)`` return
    findings for a client request and for the result answering it;
    ``notification(session, method, params, from_start)`` for a server
    notification. ``from_start``: the capture saw this session begin, so what
    it did not see never happened (cursors, subscriptions)."""

    def __init__(self) -> None:
        self._cursors: OrderedDict[tuple[Any, str], OrderedDict[str, bytes]] = OrderedDict()
        self._loops: OrderedDict[tuple[Any, str, str], int] = OrderedDict()
        self._tools: OrderedDict[Any, dict[str, tuple[Any, Any]]] = OrderedDict()
        self._subs: OrderedDict[Any, OrderedDict[str, None]] = OrderedDict()
        self._listens: OrderedDict[tuple[Any, Any], dict[str, Any]] = OrderedDict()
        self._schemas = _Schemas()

    # -- client requests -----------------------------------------------------------
    def request(self, session: Any, method: str | None, params: Any, from_start: bool, req_id: Any = None) -> list[Finding]:
        if method == "tools/call":     # the common case first: nothing to do until tools/list was seen
            return self._arguments(session, params) if session in self._tools and isinstance(params, dict) else []
        if not isinstance(params, dict):
            return []
        if method == "subscriptions/listen":
            wanted = params.get("notifications")
            _bounded_set(self._listens, (session, _id_key(req_id)), wanted if isinstance(wanted, dict) else {}, 256)
            return []
        if method in PAGINATED:
            return self._cursor_request(session, method, params, from_start)
        if method == "resources/subscribe":
            uri = params.get("uri")
            if isinstance(uri, str):
                subs = self._subs.get(session)
                if subs is None:
                    subs = OrderedDict()
                    _bounded_set(self._subs, session, subs, 256)
                _bounded_set(subs, uri, None)
        return []

    def _cursor_request(self, session: Any, method: str, params: dict[str, Any], from_start: bool) -> list[Finding]:
        if not from_start or "cursor" not in params:
            return []
        cur = params["cursor"]
        if cur is None:
            return []
        if cur not in self._cursors.get((session, method), ()):
            return [finding("pagination.unknown_cursor",
                            f"{method} with cursor {cut(str(cur), 40)!r} that the server never returned as nextCursor in this session (cursors are opaque and "
                            "session-scoped)")]
        return []

    def _arguments(self, session: Any, params: dict[str, Any]) -> list[Finding]:
        tools = self._tools.get(session)
        name = params.get("name")
        if tools is None or not isinstance(name, str) or name not in tools:
            return []
        schema = tools[name][0]
        v = self._schemas.validator(schema)
        if v is None:
            return []
        args = params.get("arguments")
        errs = _errors(v, {} if args is None else args)
        if not errs:
            return []
        return [finding("tool.arguments_invalid", f"tools/call {name}: arguments do not match the tool's inputSchema: {'; '.join(errs)}",
                        {"tool": name, "errors": errs})]

    # -- results ---------------------------------------------------------------------
    def result(self, session: Any, method: str | None, req_params: Any, result: Any, revision: str | None, req_id: Any = None) -> list[Finding]:
        if method == "tools/call" and session not in self._tools:
            return []
        if method == "subscriptions/listen":
            self.listen_ended(session, req_id)
            return []
        if not isinstance(result, dict):
            return []
        if method in PAGINATED:
            out = self._page(session, method, req_params, result)
            if method == "tools/list":
                self._remember_tools(session, result, req_params)
            return out
        if method == "tools/call":
            return self._structured(session, req_params, result, revision)
        if method == "resources/unsubscribe" and isinstance(req_params, dict):
            subs = self._subs.get(session)
            uri = req_params.get("uri")
            if subs is not None and isinstance(uri, str):
                subs.pop(uri, None)
        return []

    def _page(self, session: Any, method: str, req_params: Any, result: dict[str, Any]) -> list[Finding]:
        nxt = result.get("nextCursor")
        if not isinstance(nxt, str):
            return []
        digest = _page_digest(result)
        key = (session, method)
        seen = self._cursors.get(key)
        if seen is None:
            seen = OrderedDict()
            _bounded_set(self._cursors, key, seen, 256)
        cur = req_params.get("cursor") if isinstance(req_params, dict) else None
        out: list[Finding] = []
        if cur == nxt and seen.get(nxt) == digest:
            lk = (session, method, nxt)
            n = self._loops.get(lk, 1) + 1
            _bounded_set(self._loops, lk, n)
            out.append(finding("pagination.cursor_not_advancing",
                               f"{method} cursor {cut(nxt, 40)!r} answered with the same page and nextCursor {cut(nxt, 40)!r} again "
                               f"({n} identical pages): a client that follows nextCursor never terminates",
                               {"method": method, "cursor": nxt, "pages": n}))
        _bounded_set(seen, nxt, digest)
        return out

    def _remember_tools(self, session: Any, result: dict[str, Any], req_params: Any) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        first_page = not (isinstance(req_params, dict) and req_params.get("cursor") is not None)
        known = self._tools.get(session)
        if known is None or first_page:
            known = {}
            _bounded_set(self._tools, session, known, 256)
        for t in tools:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                known[t["name"]] = (t.get("inputSchema"), t.get("outputSchema"))

    def _structured(self, session: Any, req_params: Any, result: dict[str, Any], revision: str | None) -> list[Finding]:
        tools = self._tools.get(session)
        if tools is None:      # no tools/list seen in this session: nothing promised
            return []
        name = req_params.get("name") if isinstance(req_params, dict) else None
        if not isinstance(name, str) or name not in tools:
            return []
        schema = tools[name][1]
        if not isinstance(schema, dict) or result.get("isError") is True or result.get("resultType", "complete") != "complete" \
                or not _structured(revision):
            return []
        if "structuredContent" not in result:
            return [finding("tool.structured_content_missing",
                            f"tools/call {name}: the tool declared an outputSchema, but the successful result has no structuredContent",
                            {"tool": name})]
        v = self._schemas.validator(schema)
        if v is None:
            return []
        errs = _errors(v, result["structuredContent"])
        if not errs:
            return []
        return [finding("tool.structured_content_invalid", f"tools/call {name}: structuredContent does not match the outputSchema: {'; '.join(errs)}",
                        {"tool": name, "errors": errs})]

    # -- server notifications -------------------------------------------------------------
    def notification(self, session: Any, method: str | None, params: Any, from_start: bool) -> list[Finding]:
        if method != "notifications/resources/updated" or not from_start or not isinstance(params, dict):
            return []
        uri = params.get("uri")
        if not isinstance(uri, str):
            return []
        subs = self._subs.get(session)
        if subs is not None and uri in subs:
            return []
        return [finding("capability.not_subscribed",
                        f"notifications/resources/updated for {cut(uri, 80)!r}, which the client has not subscribed to (or unsubscribed from)",
                        {"uri": uri})]

    # -- 2026-07-28 subscriptions ----------------------------------------------------------
    def listen_ended(self, session: Any, req_id: Any) -> None:
        """The ``subscriptions/listen`` request ``req_id`` was answered or cancelled."""
        self._listens.pop((session, _id_key(req_id)), None)

    def subscription_notification(self, session: Any, method: str | None, params: Any, from_start: bool) -> list[Finding]:
        """A 2026-07-28 server notification of a subscription type
        (``LISTEN_FILTER``): it must name an open listen of this session in
        ``_meta`` and be of a type (for ``resources/updated``: a URI, or a
        URI below one) that listen asked for."""
        field = LISTEN_FILTER.get(method or "")
        if field is None or not isinstance(params, dict):
            return []
        meta = params.get("_meta")
        sid = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        wanted = self._listens.get((session, _id_key(sid))) if sid is not None else None
        if wanted is None:
            if not from_start:          # a listen opened before the capture began may be open
                return []
            why = (f"its subscriptionId {cut(str(sid), 40)!r} names no open subscriptions/listen" if sid is not None
                   else "it carries no _meta io.modelcontextprotocol/subscriptionId")
            return [finding("capability.not_subscribed", f"{method}: {why}; 2026-07-28 servers send it only on a listen stream that asked for it",
                            {"method": method, "subscriptionId": sid})]
        if field != "resourceSubscriptions":
            if wanted.get(field) is True:
                return []
            return [finding("capability.not_subscribed", f"{method} on subscription {cut(str(sid), 40)!r}, whose filter did not ask for {field}",
                            {"method": method, "subscriptionId": sid})]
        uri = params.get("uri")
        uris = wanted.get(field)
        if not isinstance(uri, str) or (isinstance(uris, list) and any(isinstance(u, str) and _within(uri, u) for u in uris)):
            return []
        return [finding("capability.not_subscribed",
                        f"notifications/resources/updated for {cut(uri, 80)!r} on subscription {cut(str(sid), 40)!r}, "
                        "whose resourceSubscriptions do not list it",
                        {"uri": uri, "subscriptionId": sid})]


def _id_key(v: Any) -> Any:
    """A JSON-RPC id as a dict key: 1 and "1" differ, true is not 1."""
    return (type(v).__name__, v) if isinstance(v, (str, int)) and not isinstance(v, bool) else ("other", repr(v))


def _within(uri: str, subscribed: str) -> bool:
    """``uri`` is the subscribed resource or one below it (the spec's
    sub-resource updates: ``file:///dir`` covers ``file:///dir/a``)."""
    return uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/")
