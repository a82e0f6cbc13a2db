"""A quick, sound "certainly valid" pre-check for the simple JSON Schemas MCP
tools declare (pure).

``jsonschema`` costs tens of µs per ``tools/call`` on the live tap even when
the arguments are fine (it builds an error iterator, evolves validators and
descends through a registry). Most tool schemas are plain trees of ``type``,
``properties``, ``required``, ``additionalProperties``, ``items``, string
and number bounds, string enums and ``anyOf``/``allOf``; for those,
``compile_quick`` builds a checker of Python closures that answers in a few
µs.

The checker only ever says "valid" or "not sure": True means ``jsonschema``
would report no error (so the caller may skip it); False means nothing (the
instance may be valid or not, and the caller runs ``jsonschema``, whose
messages the findings quote). A schema with any keyword outside the subset,
a ``$ref``, or a dialect whose meaning of these keywords differs gets no
checker at all. Instances are judged only when every value is one of the
exact types ``orjson`` produces (dict, list, str, int, float, bool, None):
anything else (a str subclass such as a skeleton's ``LongString``) is "not
sure".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: ``quick(instance) -> bool``: True only when the instance certainly satisfies the schema
Quick = Callable[[Any], bool]

#: keywords with no say in validity (``format`` is not asserted: the validators are built without a format checker)
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "format"})
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})
#: nesting of schema objects beyond which no checker is built (peer schemas may nest deeply)
MAX_DEPTH = 32


def _yes(x: Any) -> bool:
    return True


def _unsure(x: Any) -> bool:
    return False


def _is_number(x: Any) -> bool:
    t = type(x)
    return t is int or t is float


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "string": lambda x: type(x) is str,
    "integer": lambda x: type(x) is int,          # 1.0 is an integer to jsonschema: "not sure" here
    "number": _is_number,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
}


class _Unsupported(Exception):
    pass


def compile_quick(schema: Any) -> Quick | None:
    """The checker of ``schema`` (a schema that passed ``check_schema`` in a
    dialect where the subset means the same: draft 6, 7, 2019-09 or
    2020-12), or None when it uses anything outside the subset. Never raises."""
    if not isinstance(schema, dict):
        return None
    try:
        return _node(schema, 0, root=True)
    except (_Unsupported, RecursionError, KeyError, TypeError, ValueError):
        return None


def _node(schema: Any, depth: int, root: bool = False) -> Quick:
    if schema is True:
        return _yes
    if schema is False:
        return _unsure
    if type(schema) is not dict or depth > MAX_DEPTH:
        raise _Unsupported
    checks: list[Quick] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS or (root and key == "$schema"):
            continue
        make = _KEYWORDS.get(key)
        if make is None:
            raise _Unsupported
        check = make(arg, schema, depth + 1)
        if check is not None:
            checks.append(check)
    if not checks:
        return _plain
    if len(checks) == 1:
        only = checks[0]
        return lambda x: type(x) in _PLAIN and only(x)

    def check_all(x: Any) -> bool:
        if type(x) not in _PLAIN:
            return False
        for c in checks:
            if not c(x):
                return False
        return True
    return check_all


def _plain(x: Any) -> bool:
    return type(x) in _PLAIN


def _type(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    names = [arg] if isinstance(arg, str) else list(arg)
    tests = [_TYPES[n] for n in names]      # KeyError -> an unknown type name (not after check_schema)
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


def _properties(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    subs = [(name, _node(sub, depth)) for name, sub in arg.items()]

    def check(x: Any) -> bool:
        if type(x) is not dict:
            return True                     # applies to objects only
        for name, sub in subs:
            if name in x and not sub(x[name]):
                return False
        return True
    return check


def _required(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    names = list(arg)
    return lambda x: type(x) is not dict or all(n in x for n in names)


def _additional(arg: Any, schema: dict[str, Any], depth: int) -> Quick | None:
    if "patternProperties" in schema:
        raise _Unsupported
    if arg is True:
        return None
    known = frozenset(schema.get("properties", ()))
    if arg is False:
        return lambda x: type(x) is not dict or all(k in known for k in x)
    sub = _node(arg, depth)
    return lambda x: type(x) is not dict or all(sub(v) for k, v in x.items() if k not in known)


def _items(arg: Any, schema: dict[str, Any], depth: int) -> Quick | None:
    if "prefixItems" in schema or "additionalItems" in schema or isinstance(arg, list):
        raise _Unsupported                  # tuple forms differ between dialects
    sub = _node(arg, depth)
    if sub is _yes:
        return None
    return lambda x: type(x) is not list or all(sub(v) for v in x)


def _bound(test: Callable[[Any, Any], bool], kinds: Callable[[Any], bool]) -> Callable[[Any, dict[str, Any], int], Quick]:
    def make(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
        if type(arg) not in (int, float):
            raise _Unsupported              # draft 4's boolean exclusiveMinimum and the like
        return lambda x: not kinds(x) or test(x, arg)
    return make


def _is_str(x: Any) -> bool:
    return type(x) is str


def _is_list(x: Any) -> bool:
    return type(x) is list


def _enum(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    strings = frozenset(v for v in arg if type(v) is str)
    # jsonschema compares a string instance with == to each member: only string members can match
    return lambda x: type(x) is str and x in strings


def _any_of(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    subs = [_node(s, depth) for s in arg]
    return lambda x: any(s(x) for s in subs)


def _all_of(arg: Any, schema: dict[str, Any], depth: int) -> Quick:
    subs = [_node(s, depth) for s in arg]
    return lambda x: all(s(x) for s in subs)


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any], int], Quick | None]] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "enum": _enum,
    "anyOf": _any_of,
    "allOf": _all_of,
    "minimum": _bound(lambda x, b: x >= b, _is_number),
    "maximum": _bound(lambda x, b: x <= b, _is_number),
    "exclusiveMinimum": _bound(lambda x, b: x > b, _is_number),
    "exclusiveMaximum": _bound(lambda x, b: x < b, _is_number),
    "minLength": _bound(lambda x, b: len(x) >= b, _is_str),
    "maxLength": _bound(lambda x, b: len(x) <= b, _is_str),
    "minItems": _bound(lambda x, b: len(x) >= b, _is_list),
    "maxItems": _bound(lambda x, b: len(x) <= b, _is_list),
}
