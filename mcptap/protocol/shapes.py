"""Shape checks of params and results against the official MCP wire types.

The types come from ``mcp-types`` (the official SDK's per-revision wire
models, ``mcp_types.methods``): requests, notifications and results keyed by
(method, revision). Per that package, pre-2026 revisions are validated
against the 2025-11-25 schema era, so for 2024-11-05 … 2025-06-18 a mismatch
is reported as a warning (the older schema may allow it), for 2025-11-25 and
2026-07-28 as an error.

Loaded lazily (pydantic costs ~0.25 s to import): ``mcptap check`` and
``show`` use it; the live recorder does not, so a tap never stalls a session.
Payload-less messages are validated once per (method, revision); every other
message is validated (~1.5-2.5 µs with pydantic-core).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from mcptap.model import Direction, Finding, Kind, Severity
from mcptap.protocol import tagged
from mcptap.protocol.codes import finding

_M: Any = None
_LOADED = False
_CACHE: dict[tuple[Any, ...], tuple[str, ...]] = {}
_CACHE_MAX = 8192
EXACT_ERAS = frozenset({"2025-11-25", "2026-07-28"})


def available() -> bool:
    """True when the official wire types can be imported."""
    global _M, _LOADED
    if not _LOADED:
        _LOADED = True
        try:
            from mcp_types import methods as m
            from pydantic import ValidationError

            global _ValidationError
            _ValidationError = ValidationError
            _M = m
        except Exception:  # noqa: BLE001 - optional dependency
            _M = None
    return _M is not None


def _surface(direction: Direction, kind: Kind) -> Any:
    m = _M
    if kind is Kind.REQUEST:
        return m.CLIENT_REQUESTS if direction is Direction.C2S else m.SERVER_REQUESTS
    if kind is Kind.NOTIFICATION:
        return m.CLIENT_NOTIFICATIONS if direction is Direction.C2S else m.SERVER_NOTIFICATIONS
    # a response's shape is fixed by who answers: the server answers client requests
    return m.SERVER_RESULTS if direction is Direction.S2C else m.CLIENT_RESULTS


_VALIDATE: dict[Any, Any] = {}
_ValidationError: Any = None


def _validator(model: Any) -> Any:
    """The validating callable of a wire model or a Union of them (built once):
    the model's core validator directly (``model_validate`` adds a Python-level
    wrapper per call)."""
    v = _VALIDATE.get(model)
    if v is None:
        from pydantic import TypeAdapter

        core = getattr(model, "__pydantic_validator__", None)
        if core is not None and hasattr(core, "validate_python"):
            v = tagged.faster(model, functools.partial(core.validate_python, by_name=False))
        else:
            v = TypeAdapter(model).validate_python
        _VALIDATE[model] = v
    return v


def _messages(exc: Any) -> tuple[str, ...]:
    """The first five errors of a pydantic ValidationError, as ``loc: msg``."""
    out = []
    for e in exc.errors()[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()))
        out.append(f"{loc or '(root)'}: {e.get('msg')}")
    return tuple(out)


#: (direction, kind, method, revision) -> validator or None (no model)
_LOOKUP: dict[tuple[Any, ...], Any] = {}


#: revisions whose core schema has task-augmented requests (2026-07-28 moved tasks to an extension)
TASK_ERAS = frozenset({"2025-11-25"})
_CREATE_TASK = "(CreateTaskResult)"


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


def _model(direction: Direction, kind: Kind, method: str, revision: str) -> Any:
    if method == _CREATE_TASK:
        return getattr(importlib.import_module("mcp_types._v2025_11_25"), "CreateTaskResult", None)
    return _surface(direction, kind).get((method, revision))


def check(direction: Direction, kind: Kind, method: str, payload: Any, revision: str | None,
          request_params: Any = None) -> list[Finding]:
    """Validate ``payload`` (params for a request/notification, the result for
    a response to ``method``) for ``revision``. For a response, ``request_params``
    are the params of the request it answers: a ``CreateTaskResult`` answering a
    task-augmented request is validated as that, not as the method's result.
    Unknown method/revision pairs are left to the capability rules (no finding
    here). Never raises. Payload-less messages (pings, list calls without
    params) are cached."""
    if revision is None:
        return []
    label = method
    if request_params is not None and kind is Kind.RESPONSE and task_created(request_params, payload, revision):
        method, label = _CREATE_TASK, f"{method} (task-augmented: CreateTaskResult)"
    # keyed by the enums' values: an Enum's __hash__ is Python code, ~4x a str's
    lk = (direction._value_, kind._value_, method, revision)
    validate = _LOOKUP.get(lk, _MISSING)
    if validate is _MISSING:
        if not available():
            return []
        model = _model(direction, kind, method, revision)
        validate = _LOOKUP[lk] = _validator(model) if model is not None else None
    if validate is None:
        return []
    small = not payload
    if small:
        errs = _CACHE.get((lk, payload is None))
        if errs is not None:
            return _findings(kind, label, revision, errs)
    if kind is Kind.REQUEST:
        body: Any = {"jsonrpc": "2.0", "id": 0, "method": method, "params": payload} if payload is not None else {"jsonrpc": "2.0", "id": 0, "method": method}
    elif kind is Kind.NOTIFICATION:
        body = {"jsonrpc": "2.0", "method": method, "params": payload} if payload is not None else {"jsonrpc": "2.0", "method": method}
    else:
        body = payload
    try:
        try:
            validate(body)
            errs = ()
        except _ValidationError as exc:
            errs = _messages(exc)
    except Exception as exc:  # noqa: BLE001 - a validator bug must not lose the message
        errs = (f"validator error: {exc!r}",)
    if small:
        _CACHE[(lk, payload is None)] = errs
    return _findings(kind, label, revision, errs) if errs else []


_MISSING = object()


def _findings(kind: Kind, method: str, revision: str, errs: tuple[str, ...]) -> list[Finding]:
    if not errs:
        return []
    sev = Severity.ERROR if revision in EXACT_ERAS else Severity.WARN
    what = "result" if kind is Kind.RESPONSE else "params"
    code = "shape.invalid_result" if kind is Kind.RESPONSE else "shape.invalid_params"
    era = "" if revision in EXACT_ERAS else " (checked against the 2025-11-25 schema era)"
    return [finding(code, f"{method} {what} do not match the {revision} schema{era}: " + "; ".join(errs), {"errors": list(errs)}, severity=sev)]
