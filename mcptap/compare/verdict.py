"""The per-exchange verdict shared by ``replay`` and ``diff`` (pure, level 3).

``compare_responses(a, b, method, masker) -> Verdict``; ``outcome(message)``;
``describe_verdict(verdict)``: the one line both commands print for a change.

Verdicts (one per exchange):

* ``MATCH`` — same outcome once volatile fields are masked;
* ``CHANGED`` — both results (or both errors with the same code) differ; the
  JSON paths that differ are listed (``result.content[0].text``,
  ``result.tools[name=echo]``, ``result.tools: order changed``); equality is
  :func:`~mcptap.compare.paths.same` (3 and 3.0 equal, true and 1 not), the
  one ``json_diff`` uses, so a CHANGED exchange always has a path;
* ``ERROR-CHANGED`` — result became error, error became result, or the error
  code changed;
* ``MISSING`` — the original exchange has no counterpart (no answer, not sent);
* ``NEW`` — the new side has an exchange the original did not;
* ``SKIPPED`` — replay did not send it (side-effect policy).

Masking lives in :mod:`mcptap.compare.mask` (volatile fields, ``--ignore``
paths), JSON-path differences in :mod:`mcptap.compare.paths`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.compare.depth import bounded
from mcptap.compare.mask import Masker
from mcptap.compare.paths import PathChange, describe, json_diff, same

MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED = "MATCH", "CHANGED", "ERROR-CHANGED", "MISSING", "NEW", "SKIPPED"
VERDICTS = (MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED)
#: differing paths a one-line description shows before `` …``
PATHS_SHOWN = 4


# -- one exchange ---------------------------------------------------------------------

@dataclass(slots=True)
class Verdict:
    """The comparison of one exchange: ``status`` (one of VERDICTS), the
    differing ``paths``, and the error codes on each side (None: a result)."""

    status: str
    paths: list[PathChange] = field(default_factory=list)
    code_a: int | None = None
    code_b: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status}
        if self.paths:
            d["paths"] = [p.to_json() for p in self.paths]
        if self.code_a is not None or self.code_b is not None:
            d["error_codes"] = [self.code_a, self.code_b]
        return d


def outcome(message: Any) -> tuple[str, Any]:
    """(``"result"`` | ``"error"`` | ``"none"``, value) of a response message."""
    if isinstance(message, dict):
        if "error" in message:
            return "error", message["error"]
        if "result" in message:
            return "result", message["result"]
    return "none", None


def _code(err: Any) -> Any:
    return err.get("code") if isinstance(err, dict) else err


def compare_responses(a: Any, b: Any, method: str | None = None, masker: Masker | None = None) -> Verdict:
    """Compare the original response message ``a`` with the new one ``b``
    (JSON-RPC response objects, or None when absent)."""
    masker = masker or Masker()
    a, b = bounded(a), bounded(b)
    if a is None and b is None:
        return Verdict(MATCH)
    if b is None:
        return Verdict(MISSING)
    if a is None:
        return Verdict(NEW)
    ka, va = outcome(a)
    kb, vb = outcome(b)
    ca = _code(va) if ka == "error" else None
    cb = _code(vb) if kb == "error" else None
    if ka != kb or (ka == "error" and ca != cb):
        where = "error.code" if ka == kb else "$"
        return Verdict(ERROR_CHANGED, [PathChange(where, "changed", {ka: va}, {kb: vb})], ca, cb)
    ma = masker.mask(va, method, ka, other=vb)       # each against the other: an ignored list item
    mb = masker.mask(vb, method, kb, other=va)       # both have is compared in place (compare/mask.py)
    if same(ma, mb):
        return Verdict(MATCH, code_a=ca, code_b=cb)
    return Verdict(CHANGED, json_diff(ma, mb, ka), ca, cb)


# -- one line for a change: replay's table row and diff's exchanges section ---------------

def outcome_text(kind: str, value: Any) -> str:
    """One side of an ERROR-CHANGED exchange (``outcome()``'s pair):
    ``result``, ``error -32601 'Method not found'`` (message cut to 60
    characters), ``error`` (not an object), ``neither result nor error``."""
    if kind == "error":
        if isinstance(value, dict):
            return f"error {value.get('code')} {str(value.get('message'))[:60]!r}"
        return "error"
    return "result" if kind == "result" else "neither result nor error"


def describe_verdict(v: Verdict, limit: int = PATHS_SHOWN) -> str:
    """The change of one exchange as ``replay`` and ``diff`` both print it:
    ERROR-CHANGED ``result -> error -32601 'Method not found'``; CHANGED the
    first ``limit`` differing paths (``path: A -> B``, ``+path: B``,
    ``-path: A``); MISSING ``no answer in B``; NEW ``no answer in A``;
    ``""`` for MATCH and SKIPPED."""
    if v.status == ERROR_CHANGED and v.paths:
        p = v.paths[0]
        return f"{outcome_text(*_side(p.a))} -> {outcome_text(*_side(p.b))}"
    if v.status == CHANGED:
        return describe(v.paths, limit)
    if v.status == MISSING:
        return "no answer in B"
    if v.status == NEW:
        return "no answer in A"
    return ""


def _side(x: Any) -> tuple[str, Any]:
    """An ERROR-CHANGED path's side, ``{kind: value}``, as ``(kind, value)``."""
    if isinstance(x, dict) and len(x) == 1:
        kind, value = next(iter(x.items()))
        return str(kind), value
    return "none", None
