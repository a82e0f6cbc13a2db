"""What a shape check of one payload says (pure, level 1): the verdict of a
key's quick check and validator (protocol/shapes.py builds both), worded as
``shape.*`` findings with the severity of the revision's schema era, and the
task-augmented answer that is judged as a ``CreateTaskResult``.

    errs = verdict(kind, method, quick, validate, payload)   # () when valid
    findings(kind, method, revision, errs)                    # [] when valid

pydantic is imported only by :func:`pydantic` (its ValidationError, once): a
validator is built only after it.
"""

from __future__ import annotations

from typing import Any

from mcptap.model import Finding, Kind, Severity
from mcptap.protocol.codes import finding

#: revisions checked against their own schema (errors); the others against the 2025-11-25 era (warnings)
EXACT_ERAS = frozenset({"2025-11-25", "2026-07-28"})
#: revisions whose core schema has task-augmented requests (2026-07-28 moved tasks to an extension)
TASK_ERAS = frozenset({"2025-11-25"})
#: the method name a task-augmented answer is checked under (protocol/shapes.py's model lookup)
CREATE_TASK = "(CreateTaskResult)"


class _NoPydantic(Exception):
    """Stands for pydantic's ValidationError until pydantic is imported (never raised)."""


_ValidationError: Any = _NoPydantic


def pydantic() -> None:
    """Import pydantic's ValidationError (once). Raises ImportError."""
    global _ValidationError
    if _ValidationError is _NoPydantic:
        from pydantic import ValidationError

        _ValidationError = ValidationError


def messages(exc: Any) -> tuple[str, ...]:
    """The first five errors of a pydantic ValidationError, as ``loc: msg``."""
    return tuple(f"{'.'.join(str(x) for x in e.get('loc', ())) or '(root)'}: {e.get('msg')}" for e in exc.errors()[:5])


def task_created(request_params: Any, result: Any, revision: str | None) -> bool:
    """True when ``result`` answers a task-augmented request with a
    ``CreateTaskResult``: the request's params carry ``task`` and the result a
    ``task`` member, under a revision with tasks in its core schema. The real
    result comes later from ``tasks/result`` (spec/2025-11-25/basic/utilities/
    tasks.mdx: "the receiver returns a CreateTaskResult"). A receiver that does
    not support tasks answers normally, so a result without ``task`` is still
    judged as the method's own result."""
    return (revision in TASK_ERAS and isinstance(request_params, dict) and "task" in request_params
            and isinstance(result, dict) and "task" in result)


def verdict(kind: Kind, method: str, quick: Any, validate: Any, payload: Any) -> tuple[str, ...]:
    """The error messages of ``payload`` (params of a ``kind`` message of ``method``, or a
    result), () when valid: the quick check when it is sure, else pydantic's."""
    if kind is Kind.REQUEST:
        body: Any = {"jsonrpc": "2.0", "id": 0, "method": method, "params": payload} if payload is not None else {"jsonrpc": "2.0", "id": 0, "method": method}
    elif kind is Kind.NOTIFICATION:
        body = {"jsonrpc": "2.0", "method": method, "params": payload} if payload is not None else {"jsonrpc": "2.0", "method": method}
    else:
        body = payload
    try:
        sure = quick is not None and quick(body)
    except Exception:  # noqa: BLE001 - e.g. RecursionError on a deep payload: "not sure", pydantic decides
        sure = False
    errs: tuple[str, ...] = ()
    if not sure:
        try:
            try:
                validate(body)
            except _ValidationError as exc:
                errs = messages(exc)
        except Exception as exc:  # noqa: BLE001 - a validator bug must not lose the message
            errs = (f"validator error: {exc!r}",)
    return errs


def findings(kind: Kind, method: str, revision: str, errs: tuple[str, ...]) -> list[Finding]:
    """The ``shape.invalid_params`` / ``shape.invalid_result`` finding of a
    verdict's ``errs`` ([] when none): an error for EXACT_ERAS, else a warning."""
    if not errs:
        return []
    sev = Severity.ERROR if revision in EXACT_ERAS else Severity.WARN
    what = "result" if kind is Kind.RESPONSE else "params"
    code = "shape.invalid_result" if kind is Kind.RESPONSE else "shape.invalid_params"
    era = "" if revision in EXACT_ERAS else " (checked against the 2025-11-25 schema era)"
    return [finding(code, f"{method} {what} do not match the {revision} schema{era}: " + "; ".join(errs), {"errors": list(errs)}, severity=sev)]
