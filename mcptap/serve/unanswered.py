"""What the mock answers a live request the capture has no answer for (pure, level 3; serve/core.py's
helper), and such a request as a few words of text for the end-of-session summary (``asked``)."""

from __future__ import annotations

from typing import Any

from mcptap.compare.match import Matcher
from mcptap.compare.paths import short
from mcptap.escape import escape_controls
from mcptap.protocol.codes import finding
from mcptap.redact.keys import is_secret_key
from mcptap.serve.live import LiveSession, Out
from mcptap.serve.script_model import Recorded


def asked(method: str, params: Any) -> str:
    """A live request as a few words of text: the method; a tool's or prompt's name and its
    arguments, a resource's URI, else the params (``_meta`` left out, values under secret-like
    keys as ``…``, JSON cut to 60 characters); controls escaped (it is the peer's text)."""
    what, rest = method, params
    if isinstance(params, dict):
        rest = {k: v for k, v in params.items() if k != "_meta"}
        key = "uri" if method == "resources/read" else "name" if method in ("tools/call", "prompts/get") else None
        if key is not None and isinstance(rest.get(key), str):
            name = rest[key]
            what += " " + (name if len(name) <= 60 else name[:59] + "…")
            rest = rest.get("arguments")
        if isinstance(rest, dict):
            rest = {k: "…" if is_secret_key(k) else v for k, v in rest.items()}
    if rest is not None and rest != {}:
        try:
            what += " " + short(rest)
        except (TypeError, ValueError):
            what += " …"
    return escape_controls(what)


def no_answer(requests: Matcher[Recorded], live: LiveSession, method: str, lid: Any, prepared: Any) -> Out:
    """The mock's answer to live request ``method`` (live id ``lid``, params ``prepared`` as the capture
    would hold them) when ``requests`` has no recorded answer for it (serve/core.py docstring): ``ping``
    gets ``{}``, anything else an error with a ``serve.no_recorded_answer`` finding, noted in
    ``live.unanswered``."""
    if method == "ping":
        return Out({"jsonrpc": "2.0", "id": lid, "result": {}}, answers=lid, request=lid)
    what = asked(method, prepared)
    n = requests.used_up(method, prepared)
    if n:
        err = {"code": -32602, "message": f"mcptap serve --strict: the capture's {n} recorded answer(s) to {method} with these params "
                                          "are used up (each is given once)"}
        why = f"{what}: its {n} recorded answer(s) are used up (--strict)"
    elif requests.knows(method):
        err = {"code": -32602, "message": f"mcptap serve: the capture has no answer to {method} with these params"}
        why = f"{what}: the capture has no answer for these params"
    else:
        err = {"code": -32601, "message": f"Method not found: {method} (mcptap serve: not in the capture)"}
        why = f"{what}: the capture has no request of this method"
    live.unanswered.append(why)
    f = finding("serve.no_recorded_answer", f"mock answered with an error: {why}", {"method": method, "code": err["code"]})
    return Out({"jsonrpc": "2.0", "id": lid, "error": err}, answers=lid, request=lid, finding=f)
