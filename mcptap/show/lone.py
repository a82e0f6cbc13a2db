"""Finding texts with a peer's lone surrogates as the views show them (level 3).

Analysis reads a method or tool name with a lone UTF-16 surrogate escape
(``"tools/x\\ud800"``) as U+FFFD (orjson's reading), so a finding's message
quotes ``tools/x\ufffd``: the information which surrogate it was is lost, where
the timeline, the summary and ``id_text`` give the exact one, escaped
(``tools/x\\ud800``). :class:`LoneNames` learns, from the records a view reads
(in order), which U+FFFD name stands for which exact one (``method_of``,
``tool_name``: read again from the raw bytes, a batch member's from its
view), and :meth:`LoneNames.text` puts the exact names back into a finding's
message; the view then escapes it (``escape.shown``) as it does every peer
text. Bounded: at most ``MAX_NAMES`` names are kept (the first ones).
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.fields import tool_of
from mcptap.escape import escape_surrogates
from mcptap.show.values import method_of, tool_name

#: names kept at most (a capture of endless distinct broken names stops growing it)
MAX_NAMES = 1024


class LoneNames:
    """The exact names of the U+FFFD methods and tool names seen so far."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: dict[str, str] = {}      # as the record holds it (U+FFFD) -> as the peer sent it

    def feed(self, rec: dict[str, Any], members: list[tuple[dict[str, Any], Any]] | None = None) -> None:
        """Learn from one record (``members``: its batch members' views, ``Tracker.members``)."""
        if rec.get("type") != "message":
            return
        # exact names come from raw bytes (a record whose json is its whole truth has none) or a member's ``exact``
        for r in ((rec,) if "raw" in rec else ()) + tuple(v for v, _ in members or () if "exact" in v):
            m = r.get("method")
            if type(m) is str and "\ufffd" in m:
                self._learn(m, method_of(r))
            if m == "tools/call":
                t = tool_of(r)
                if t is not None and "\ufffd" in t:
                    self._learn(t, tool_name(r))

    def _learn(self, lossy: str, exact: Any) -> None:
        if type(exact) is str and exact != lossy and (lossy in self.names or len(self.names) < MAX_NAMES):
            self.names[lossy] = exact

    def findings(self, rec: dict[str, Any]) -> dict[str, Any]:
        """``rec`` with its findings' messages (``findings``; an end record's
        ``unanswered`` and ``capture`` too) given the exact names
        (:meth:`text`), their lone surrogates in escape form
        (``escape.escape_surrogates``: ``tools/x\\ud800``, so the JSON line
        stays strict): a shallow copy where one changed, else ``rec`` itself."""
        if not self.names:
            return rec
        out = rec
        for key in ("findings", "unanswered", "capture"):
            fs = rec.get(key)
            if not isinstance(fs, list):
                continue
            new = [dict(f, message=escape_surrogates(self.text(f["message"]))) if isinstance(f, dict) and type(f.get("message")) is str
                   and "\ufffd" in f["message"] else f for f in fs]
            if any(a is not b for a, b in zip(new, fs, strict=True)):
                out = dict(out, **{key: new}) if out is rec else out | {key: new}
        return out

    def text(self, message: str) -> str:
        """``message`` with each U+FFFD name learnt replaced by the exact one
        (the longest first); unchanged when it holds no U+FFFD."""
        if not self.names or "\ufffd" not in message:
            return message
        for lossy in sorted(self.names, key=len, reverse=True):
            if lossy in message:
                message = message.replace(lossy, self.names[lossy])
        return message
