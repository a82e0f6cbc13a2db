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
message first gets the quick "certainly valid" check generated from its
model's core schema (protocol/shape_fast.py, ~0.4 µs), and pydantic-core
(~1-2.5 µs) only when that is not sure, so every finding is pydantic's own.

Only the schema eras a capture uses are imported. ``mcp_types.methods``
imports both era packages and the package's version-free models (about 0.15 s
of the 0.36 s it costs; shape checks use none of them), so its surface maps
are shipped as a table of model names (``data/shape-surfaces.json``, written by
``scripts/gen_shape_table.py`` from ``build_table``), valid for the
``methods.py`` whose SHA-256 it records. Another mcp-types release (another
``methods.py``) goes through ``mcp_types.methods`` as before. The quick
checks' source and the verdicts of absent and empty payloads ship too
(protocol/shape_shipped.py, for the inputs they were made from): with them,
pydantic and a key's era are imported only when a message needs pydantic.

What a verdict says (its findings, their severity per era, the task-augmented
answer) is protocol/shape_verdict.py's; here: which model and quick check a
key has, and the checks built from them.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import operator
import pkgutil
from collections.abc import Mapping
from typing import Any

import orjson

from mcptap.model import Direction, Finding, Kind
from mcptap.protocol import shape_fast, shape_shipped, tagged
from mcptap.protocol.shape_table import ERAS as _ERAS  # noqa: F401 - tests look at the eras imported
from mcptap.protocol.shape_table import PACKAGE as _PACKAGE
from mcptap.protocol.shape_table import SURFACES as SURFACES
from mcptap.protocol.shape_table import build_table as build_table
from mcptap.protocol.shape_table import era as _era
from mcptap.protocol.shape_verdict import CREATE_TASK as _CREATE_TASK
from mcptap.protocol.shape_verdict import findings as _findings
from mcptap.protocol.shape_verdict import pydantic as _pydantic
from mcptap.protocol.shape_verdict import task_created as task_created
from mcptap.protocol.shape_verdict import verdict as verdict

_LOADED = False
_M: Any = None                          # mcp_types.methods, where the table does not fit the installed release
_TABLE: dict[str, dict[str, list[str]]] | None = None
_CACHE: dict[tuple[Any, ...], tuple[str, ...]] = {}
TABLE_FILE = "data/shape-surfaces.json"


def available() -> bool:
    """True when the official wire types can be imported (mcp-types and
    pydantic installed). Loads the surface table, or ``mcp_types.methods``
    when the table was written for another mcp-types release; with the
    shipped quick checks of the installed release (protocol/shape_shipped.py),
    pydantic is imported only when a message needs it."""
    global _M, _LOADED, _TABLE, _SHIPPED
    if not _LOADED:
        _LOADED = True
        try:
            _TABLE = _shipped_table()
            _SHIPPED = shape_shipped.shipped() if _TABLE is not None else None
            if _SHIPPED is None:
                _pydantic()
                if _TABLE is None:
                    from mcp_types import methods as m

                    _M = m
        except Exception:  # noqa: BLE001 - optional dependency
            _M = _TABLE = _SHIPPED = None
    return _M is not None or _TABLE is not None


_SHIPPED: shape_shipped.Shipped | None = None

def _methods_source() -> bytes | None:
    """The installed ``mcp_types/methods.py``, read by its package's loader
    without importing the package; None when it cannot be read. Raises
    ImportError when mcp-types is not installed."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None:
        raise ImportError(f"{_PACKAGE} is not installed")
    loader: Any = spec.loader
    if not spec.submodule_search_locations or not hasattr(loader, "get_data"):
        return None
    try:
        data: bytes = loader.get_data(f"{list(spec.submodule_search_locations)[0]}/methods.py")
    except OSError:
        return None
    return data


def _shipped_table() -> dict[str, dict[str, list[str]]] | None:
    """The shipped surface table when it was written from the installed
    ``methods.py`` (same SHA-256); None otherwise. Raises ImportError when
    mcp-types is not installed."""
    source = _methods_source()
    raw = pkgutil.get_data("mcptap.protocol", TABLE_FILE) if source is not None else None
    if source is None or raw is None:
        return None
    doc = orjson.loads(raw)
    if doc.get("methods_sha256") != hashlib.sha256(source).hexdigest():
        return None
    surfaces: dict[str, dict[str, list[str]]] = doc["surfaces"]
    return surfaces


def surface(name: str) -> Mapping[tuple[str, str], Any]:
    """One surface map of ``SURFACES`` as ``mcp_types.methods`` has it:
    (method, revision) -> wire model (or a union of them). Imports every era
    it names; for tests and tools (``check`` looks models up one by one)."""
    if not available():
        return {}
    if _TABLE is None:
        rows: Mapping[tuple[str, str], Any] = getattr(_M, name)
        return rows
    rows = {}
    for key in _TABLE[name]:
        method, revision = key.rsplit(" ", 1)
        rows[(method, revision)] = _from_table(name, key)
    return rows


@functools.cache
def _from_table(surface_name: str, key: str) -> Any:
    assert _TABLE is not None
    arms = _TABLE[surface_name].get(key)
    if arms is None:
        return None
    models = [getattr(_era(module), cls) for module, _, cls in (arm.partition(":") for arm in arms)]
    return functools.reduce(operator.or_, models)


def _surface(direction: Direction, kind: Kind) -> str:
    if kind is Kind.REQUEST:
        return "CLIENT_REQUESTS" if direction is Direction.C2S else "SERVER_REQUESTS"
    if kind is Kind.NOTIFICATION:
        return "CLIENT_NOTIFICATIONS" if direction is Direction.C2S else "SERVER_NOTIFICATIONS"
    # a response's shape is fixed by who answers: the server answers client requests
    return "SERVER_RESULTS" if direction is Direction.S2C else "CLIENT_RESULTS"


_VALIDATE: dict[Any, Any] = {}


def _validator(model: Any) -> Any:
    """The validating callable of a wire model or a Union of them (built once):
    the model's core validator directly (``model_validate`` adds a Python-level
    wrapper per call; pydantic's ValidationError imported for check). Raises ImportError."""
    v = _VALIDATE.get(model)
    if v is None:
        _pydantic()
        from pydantic import TypeAdapter

        core = getattr(model, "__pydantic_validator__", None)
        if core is not None and hasattr(core, "validate_python"):
            v = tagged.faster(model, functools.partial(core.validate_python, by_name=False))
        else:
            v = TypeAdapter(model).validate_python
        _VALIDATE[model] = v
    return v


#: (direction, kind, method, revision) -> (quick check or None, validator), or None (no model)
_LOOKUP: dict[tuple[Any, ...], Any] = {}


def _model(direction: Direction, kind: Kind, method: str, revision: str) -> Any:
    if method == _CREATE_TASK:
        return getattr(_era("mcp_types._v2025_11_25"), "CreateTaskResult", None)
    name = _surface(direction, kind)
    if _TABLE is None:
        return getattr(_M, name).get((method, revision))
    return _from_table(name, f"{method} {revision}")


def check(direction: Direction, kind: Kind, method: str, payload: Any, revision: str | None,
          request_params: Any = None) -> list[Finding]:
    """Validate ``payload`` (params for a request/notification, the result for
    a response to ``method``) for ``revision``. For a response, ``request_params``
    are the params of the request it answers: a ``CreateTaskResult`` answering a
    task-augmented request is validated as that, not as the method's result.
    Unknown method/revision pairs are left to the capability rules (no finding
    here). Never raises. Payload-less messages (pings, list calls without
    params) are cached per key and payload type ([] and {} differ)."""
    if revision is None:
        return []
    label = method
    if request_params is not None and kind is Kind.RESPONSE and task_created(request_params, payload, revision):
        method, label = _CREATE_TASK, f"{method} (task-augmented: CreateTaskResult)"
    # keyed by the enums' values: an Enum's __hash__ is Python code, ~4x a str's
    lk = (direction._value_, kind._value_, method, revision)
    entry = _LOOKUP.get(lk, _MISSING)
    if entry is _MISSING:
        if not available():
            return []
        entry = _LOOKUP[lk] = _entry(direction, kind, method, revision)
    if entry is None:
        return []
    small = not payload
    if small:
        errs = _CACHE.get((lk, type(payload)))
        if errs is not None:
            return _findings(kind, label, revision, errs)
    errs = verdict(kind, method, entry[0], entry[1], payload)
    if small:
        _CACHE[(lk, type(payload))] = errs
    return _findings(kind, label, revision, errs) if errs else []


def _entry(direction: Direction, kind: Kind, method: str, revision: str) -> tuple[Any, Any] | None:
    """(quick check or None, validator) of a key, None when it has no model:
    shipped, with the shipped verdicts of its absent and empty payloads and a
    validator built when first called; else generated (pydantic imported)."""
    ship = _SHIPPED
    if ship is not None and _TABLE is not None and method != _CREATE_TASK:
        name, key = _surface(direction, kind), f"{method} {revision}"
        arms = _TABLE[name].get(key)
        if arms is None:
            return None
        quick, empty = ship.quick(arms, "body"), ship.empty(name, key)
        if quick is not shape_shipped.MISSING and empty is not None:
            lk = (direction._value_, kind._value_, method, revision)
            _CACHE[(lk, type(None))], _CACHE[(lk, dict)] = empty
            return quick, _later(direction, kind, method, revision)
    try:
        _pydantic()
    except ImportError:
        return None
    model = _model(direction, kind, method, revision)
    return (shape_fast.compile_model(model), _validator(model)) if model is not None else None


def _later(direction: Direction, kind: Kind, method: str, revision: str) -> Any:
    """A key's validator, built when first called (pydantic and the model's era
    imported then; when that fails, every payload passes, as when pydantic is
    missing: no shape checks)."""
    real: list[Any] = []

    def validate(body: Any) -> Any:
        if not real:
            try:
                _pydantic()
                real.append(_validator(_model(direction, kind, method, revision)))
            except ImportError:
                real.append(lambda body: None)
        return real[0](body)

    return validate


_MISSING = object()


def checker(direction: Direction, kind: Kind, method: str, revision: str) -> Any:
    """``check(direction, kind, method, payload, revision)`` for one key, as a
    callable of ``payload`` alone (a response's: without request params, so not
    for an answer to a task-augmented request), parsed from JSON text (keys ``str``): :func:`checks` in one."""
    pair = checks(direction, kind, method, revision)

    def one(payload: Any) -> list[Finding]:
        if payload and type(payload) is dict:
            try:
                if pair[0](payload):
                    return []
            except Exception:  # noqa: BLE001 - "not sure": check decides
                pass
        found: list[Finding] = pair[1](payload)
        return found
    return one


def checks(direction: Direction, kind: Kind, method: str, revision: str) -> list[Any]:
    """``[sure, slow]`` for one key (payloads as :func:`checker` takes them), built
    once per key by a caller that checks many messages (check/scan.py):
    ``sure(payload)`` (a non-empty dict only; it may raise: "not sure") is True only
    when ``slow(payload)``, :func:`check`, finds nothing; it costs the quick check only
    (no key lookup, no enums). It may be replaced by a cheaper one: call ``pair[0]``."""
    check(direction, kind, method, {}, revision)        # the key's entry (model, quick check) built
    entry = _LOOKUP.get((direction._value_, kind._value_, method, revision))
    quick = entry[0] if entry is not None else None
    if quick is not None and kind is Kind.RESPONSE:     # its keys need no test (shape_fast.compile_model's json_keys)
        quick = _variant(direction, kind, method, revision, "json") or quick

    def slow(payload: Any) -> list[Finding]:
        return check(direction, kind, method, payload, revision)

    pair: list[Any] = [quick if quick is not None else _never, slow]
    if quick is not None and kind is not Kind.RESPONSE:
        # the model's quick check of a body is its other members' checks (the same for every body
        # built here: constants) and the params' check; once a body passed, the params' check alone
        # decides (shape_fast.compile_model with a member)
        params = _variant(direction, kind, method, revision, "params")
        head = {"jsonrpc": "2.0", "id": 0, "method": method} if kind is Kind.REQUEST else {"jsonrpc": "2.0", "method": method}

        def body(payload: Any) -> bool:
            if quick({**head, "params": payload}):
                if params is not None:
                    pair[0] = params
                return True
            return False

        pair[0] = body
    return pair


def _never(payload: Any) -> bool:
    return False

def _variant(direction: Direction, kind: Kind, method: str, revision: str, variant: str) -> Any:
    """A key's quick check in a shape_shipped.VARIANTS variant: shipped, else generated."""
    if _SHIPPED is not None and _TABLE is not None and method != _CREATE_TASK:
        arms = _TABLE[_surface(direction, kind)].get(f"{method} {revision}")
        quick = _SHIPPED.quick(arms, variant) if arms is not None else shape_shipped.MISSING
        if quick is not shape_shipped.MISSING:
            return quick
    _pydantic()
    member, json_keys = shape_shipped.VARIANTS[variant]
    return shape_fast.compile_model(_model(direction, kind, method, revision), member, json_keys)
