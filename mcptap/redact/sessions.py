"""Legacy HTTP+SSE session ids in a capture being scrubbed (pure).

A 2024-11-05 server names its POST endpoint with the session id in the query
(``/messages/?session_id=…``); that id is the only thing authorising the POSTs,
so it is a credential (docs/redaction.md). The HTTP tap records it as a keyed
placeholder everywhere (``relay/http/sessions.py``), unless ``--record-secrets``.
``scrub`` of such a capture finds it in URLs (a secret query name) but the
``session`` fields hold it bare: ``LegacySessionIds`` learns the ids from the
endpoint URLs and request targets, in record order (the endpoint event comes
before any record of its session), and gives each ``session`` field that holds
one the same placeholder the URL got.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from mcptap.redact.keyed import PLACEHOLDER

_SESSION_PARAM = re.compile(r"[?&;](?:session_id|sessionId)=([^&;#\s\"'<>]+)")
#: record members that hold a URL naming a legacy session
_URL_FIELDS = ("target", "path", "data", "resolved", "rewritten")


class LegacySessionIds:
    """See module doc. ``placeholder(secret)``: the keyed stand-in."""

    def __init__(self, placeholder: Callable[[str], str]) -> None:
        self._placeholder = placeholder
        self._ids: dict[str, str] = {}

    def learn(self, rec: dict[str, Any]) -> None:
        """Remember the session ids the URLs of ``rec`` name (its target, its endpoint event's
        URLs, a message's ``transport.path``)."""
        for holder in (rec, rec.get("endpoint"), rec.get("transport")):
            if not isinstance(holder, dict):
                continue
            for k in _URL_FIELDS:
                v = holder.get(k)
                if isinstance(v, str) and "ession" in v:
                    for m in _SESSION_PARAM.finditer(v):
                        sid = unquote_plus(m.group(1))
                        if not PLACEHOLDER.search(sid):
                            self._ids.setdefault(sid, self._placeholder(sid))

    def apply(self, rec: dict[str, Any]) -> dict[str, Any]:
        """``rec`` (a scrubbed record, changed in place) with every ``session`` member that
        holds a learnt id as its placeholder (top level, and in ``pending``/``unanswered``
        entries of the end record); the payload (``json``) is the engine's."""
        if self._ids:
            _replace(rec, self._ids, 0)
        return rec


def _replace(node: Any, ids: dict[str, str], depth: int) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "session" and isinstance(v, str) and v in ids:
                node[k] = ids[v]
            elif k != "json" and depth < 4 and isinstance(v, dict | list):
                _replace(v, ids, depth + 1)
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, dict | list) and depth < 4:
                _replace(v, ids, depth + 1)
