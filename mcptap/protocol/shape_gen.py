"""The source generator of protocol/shape_fast.py's quick checks (pure, level 1):
:class:`Gen` turns a pydantic core schema tree into the Python source of
functions ``(v) -> bool`` that only look (the subset and the rules are
shape_fast's module doc); a node or setting outside the subset raises
:class:`Refuse`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from mcptap.protocol.shape_graph import cyclic

_MISSING = object()
_EXACT_INT = 2 ** 53
_META = {"type", "metadata", "ref", "serialization"}
_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
#: ref'd schemas entered at most in a recursive schema (pydantic-core refuses from 255 nested definition-refs on)
MAX_REF_DEPTH = 200
_CALL = re.compile(r"(_f\d+)\(v\)")       # a call of a generated function with the value alone


def helpers() -> dict[str, Any]:
    """A fresh namespace for a generated source: the names it uses besides its own."""
    return {"_M": _MISSING, "_str_keys": _str_keys, "_extra_keys": _extra_keys, "_inf": math.inf, "_ninf": -math.inf}


def literal(value: Any) -> str:
    """The source text of a generated source's constant (the same in every process: a
    frozenset's members sorted, as its repr orders them by hash)."""
    if type(value) is frozenset and all(type(v) is str for v in value):
        return "frozenset((" + "".join(f"{v!r}, " for v in sorted(value)) + "))"
    if (type(value) is int or type(value) is float) and math.isfinite(value):
        return repr(value)
    if value == {} and type(value) is dict:
        return "{}"
    raise Refuse(f"constant {value!r}")


class Refuse(Exception):
    """The schema has a node or setting outside the subset: no quick check."""


def _str_keys(d: dict[Any, Any]) -> bool:
    for k in d:
        if type(k) is not str:
            return False
    return True


def _extra_keys(d: dict[Any, Any]) -> bool:
    """The keys of a model that keeps its extra members: pydantic-core makes
    each one a Python string through UTF-8, which fails for a lone surrogate
    (``json.loads`` lets ``"\\ud800"`` through; orjson does not)."""
    for k in d:
        if type(k) is not str:
            return False
        if not k.isascii():
            try:
                k.encode()
            except UnicodeEncodeError:
                return False
    return True


def _only(s: dict[str, Any], allowed: set[str]) -> None:
    extra = set(s) - _META - allowed - {"type"}
    if extra:
        raise Refuse(f"{s.get('type')}: {sorted(extra)}")


class Gen:
    """Python source of the check functions of one core schema tree."""

    def __init__(self, refs: dict[str, dict[str, Any]], json_keys: bool = False) -> None:
        self.json_keys = json_keys              # values parsed from JSON text: every object key is a str
        self.refs = refs                        # every schema with a "ref" in the tree
        self.src: list[str] = []
        self.post: list[str] = []               # run after every function is defined (dispatch tables)
        self.consts: list[str] = []             # the constants' assignments (before the functions)
        self.fns: dict[str, str] = {}           # ref -> function name
        self.ref_fns: set[str] = set()
        self.loops: dict[str, str] = {}         # item function -> the function looping over it (each)
        self.alias: dict[str, str] = {}         # function -> the function it is (it only called that one)
        self.dispatch: dict[str, str] = {}      # tagged union function -> its tag table (not recursive schemas)
        self.n = 0
        # a recursive schema: every function takes the number of ref'd schemas entered (d, at
        # least pydantic-core's count of nested definition-refs: each compiles to a call that
        # adds one) and says "not sure" beyond MAX_REF_DEPTH, below pydantic-core's recursion guard
        self.deep = cyclic(refs)
        self.args = "v, d" if self.deep else "v"

    def call(self, fn: str, v: str) -> str:
        """A call of generated function ``fn`` on ``v`` (a ref'd schema's: one level deeper)."""
        if not self.deep:
            return f"{fn}({v})"
        return f"{fn}({v}, d + 1)" if fn in self.ref_fns else f"{fn}({v}, d)"

    def each(self, fn: str, it: str) -> str:
        """``fn`` holds for every item of iterable ``it`` (a generated loop:
        cheaper than ``all(map(…))`` on the short lists messages carry)."""
        while fn in self.alias:
            fn = self.alias[fn]
        loop = self.loops.get(fn)
        if loop is None:
            loop = self.loops[fn] = self.name("_each")
            table = self.dispatch.get(fn)
            if table is not None:       # a tagged union's dispatch, inline (one call less per item)
                self.src.append(f"def {loop}(v):\n    for i in v:\n        if type(i) is not dict:\n            return False\n"
                                f"        tag = i.get('type')\n        if type(tag) is not str:\n            return False\n"
                                f"        f = {table}.get(tag)\n        if f is None or not f(i):\n            return False\n"
                                f"    return True\n")
            else:
                call = self.call(fn, "i")
                self.src.append(f"def {loop}({self.args}):\n    for i in v:\n        if not {call}:\n            return False\n    return True\n")
        return f"{loop}({it}, d)" if self.deep else f"{loop}({it})"

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any) -> str:
        n = self.name("_k")
        self.consts.append(f"{n} = {literal(value)}\n")
        return n

    def function(self, s: dict[str, Any]) -> str:
        """The name of a function ``(v) -> bool`` for schema ``s`` (one per ref)."""
        ref = s.get("ref")
        if s.get("type") == "definition-ref":
            ref = s.get("schema_ref")
            if ref not in self.refs:
                raise Refuse(f"unresolved ref {ref}")
            s = self.refs[ref]
        if isinstance(ref, str) and ref in self.fns:
            return self.fns[ref]
        fn = self.name("_f")
        guard = ""
        if isinstance(ref, str):
            self.fns[ref] = fn
            self.ref_fns.add(fn)
            if self.deep:
                guard = f"    if d > {MAX_REF_DEPTH}:\n        return False\n"
        if s.get("type") == "model":
            self.model(fn, s, guard)
        else:
            body = self.expr(s, 'v', top=True)
            target = self.forwards(body)
            if target is not None and not guard:
                self.alias[fn] = target         # it only calls another: that one, one call less per value
                self.src.append(f"{fn} = {target}\n")
            else:
                self.src.append(f"def {fn}({self.args}):\n{guard}    return {body}\n")
        return fn

    def forwards(self, body: str) -> str | None:
        """The generated function ``body`` only calls with the value (through aliases), else None (always in a recursive schema)."""
        m = _CALL.fullmatch(body)
        if m is None or self.deep:
            return None
        fn = m.group(1)
        while fn in self.alias:
            fn = self.alias[fn]
        return fn

    def expr(self, s: dict[str, Any], v: str, top: bool = False) -> str:
        """A Python expression that is True only if ``v`` is valid for ``s``."""
        if not isinstance(s, dict):
            raise Refuse(repr(s))
        t = s.get("type")
        if t == "model" or ((t == "definition-ref" or "ref" in s) and not top):
            return self.call(self.function(s), v)
        if t == "definitions":
            _only(s, {"schema", "definitions"})
            return self.expr(s["schema"], v, top)
        if t == "any":
            _only(s, set())
            return "True"
        if t == "none":
            _only(s, set())
            return f"{v} is None"
        if t == "str":
            _only(s, set())
            return f"type({v}) is str"
        if t == "bool":
            _only(s, set())
            return f"type({v}) is bool"
        if t == "int" or t == "float":
            _only(s, set(_BOUNDS))
            base = f"type({v}) is int" if t == "int" else (f"((type({v}) is float and _ninf < {v} < _inf)"
                                                            f" or (type({v}) is int and {-_EXACT_INT} <= {v} <= {_EXACT_INT}))")
            bounds = [f"{v} {op} {self.const(s[k])}" for k, op in _BOUNDS.items() if k in s]
            for k in _BOUNDS:
                if k in s and not (type(s[k]) in (int, float) and math.isfinite(s[k])):
                    raise Refuse(f"bound {s[k]!r}")
            return "(" + " and ".join([base, *bounds]) + ")"
        if t == "literal":
            _only(s, {"expected"})
            expected = s["expected"]
            if not expected or any(type(e) is not str for e in expected):
                raise Refuse("literal of non-strings")
            if len(expected) == 1:
                return f"(type({v}) is str and {v} == {expected[0]!r})"
            return f"(type({v}) is str and {v} in {self.const(frozenset(expected))})"
        if t == "nullable":
            _only(s, {"schema"})
            return f"({v} is None or {self.expr(s['schema'], v)})"
        if t == "default":
            _only(s, {"schema", "default", "default_factory", "default_factory_takes_data", "on_error", "validate_default", "copy_default"})
            return self.expr(s["schema"], v)
        if t == "list":
            _only(s, {"items_schema", "min_length", "max_length", "fail_fast"})
            parts = [f"type({v}) is list"]
            if s.get("min_length") is not None:
                parts.append(f"len({v}) >= {int(s['min_length'])}")
            if s.get("max_length") is not None:
                parts.append(f"len({v}) <= {int(s['max_length'])}")
            items = s.get("items_schema", {"type": "any"})
            if items.get("type") != "any" or set(items) - _META:
                parts.append(self.each(self.function(items), v))
            return "(" + " and ".join(parts) + ")"
        if t == "dict":
            _only(s, {"keys_schema", "values_schema", "min_length", "max_length", "fail_fast"})
            keys = s.get("keys_schema", {"type": "any"})
            if keys.get("type") not in ("str", "any") or set(keys) - _META:
                raise Refuse("dict keys")
            parts = [f"type({v}) is dict"] + ([] if self.json_keys else [f"_str_keys({v})"])
            if s.get("min_length") is not None:
                parts.append(f"len({v}) >= {int(s['min_length'])}")
            if s.get("max_length") is not None:
                parts.append(f"len({v}) <= {int(s['max_length'])}")
            values = s.get("values_schema", {"type": "any"})
            if values.get("type") != "any" or set(values) - _META:
                parts.append(self.each(self.function(values), f"{v}.values()"))
            return "(" + " and ".join(parts) + ")"
        if t == "union":
            _only(s, {"choices", "mode", "auto_collapse", "custom_error_type", "custom_error_message", "custom_error_context"})
            choices = [c[0] if isinstance(c, tuple) else c for c in s["choices"]]
            dispatch = self.tagged(choices)
            if dispatch is not None:
                return self.call(dispatch, v)
            return "(" + " or ".join(self.expr(c, v) for c in choices) + ")"
        raise Refuse(f"node {t!r}")

    def resolve(self, s: dict[str, Any]) -> dict[str, Any]:
        while s.get("type") == "definition-ref":
            s = self.refs.get(s.get("schema_ref", ""), {})
        return s

    def tagged(self, choices: list[dict[str, Any]]) -> str | None:
        """For a union of models that each require their own ``type`` literals:
        the name of a function checking an instance against the member its
        ``type`` names (tag -> member table filled once every function is
        defined); else None."""
        tags: dict[str, str] = {}
        for c in choices:
            m = self.resolve(c)
            fields = m.get("schema", {}).get("fields", {}) if m.get("type") == "model" else {}
            f = fields.get("type")
            if f is None or f.get("validation_alias", "type") != "type" or f["schema"].get("type") != "literal":
                return None
            known = None
            if not self.deep:           # the member's own check, its dict and its tag already known
                known = self.name("_f")
                self.model(known, m, tag_known=True)
            for tag in f["schema"]["expected"]:
                if type(tag) is not str or tag in tags:
                    return None
                tags[tag] = known or self.function(c)
        table = self.const({})
        self.post.append("".join(f"{table}[{tag!r}] = {fn}\n" for tag, fn in tags.items()))
        fn = self.name("_f")
        if not self.deep:
            self.dispatch[fn] = table
        member = "f(v, d + 1)" if self.deep else "f(v)"
        self.src.append(f"def {fn}({self.args}):\n    if type(v) is not dict:\n        return False\n    tag = v.get('type')\n"
                        f"    if type(tag) is not str:\n        return False\n    f = {table}.get(tag)\n"
                        f"    return f is not None and {member}\n")
        return fn

    def model(self, fn: str, s: dict[str, Any], guard: str = "", tag_known: bool = False) -> None:
        """The function ``fn`` checking model schema ``s``; ``tag_known``: for a
        dict whose ``type`` member is one of the model's own ``type`` literals
        (a tagged union's dispatch checked both)."""
        _only(s, {"cls", "config", "custom_init", "root_model", "schema", "post_init"})
        if s.get("custom_init") or s.get("root_model") or s.get("post_init"):
            raise Refuse("custom model")
        config = s.get("config", {})
        if set(config) - {"extra_fields_behavior", "title", "validate_by_alias", "validate_by_name"} or config.get("validate_by_alias") is False:
            raise Refuse(f"config {config}")
        inner = s["schema"]
        if inner.get("type") != "model-fields":
            raise Refuse("model schema")
        _only(inner, {"fields", "computed_fields", "model_name", "extra_behavior", "extras_schema", "extras_keys_schema"})
        extra = inner.get("extra_behavior") or config.get("extra_fields_behavior") or "ignore"
        if extra not in ("ignore", "allow", "forbid"):
            raise Refuse(f"extra {extra}")
        for k in ("extras_schema", "extras_keys_schema"):
            if k in inner and (inner[k].get("type") != "any" or set(inner[k]) - _META):
                raise Refuse(k)
        body = [f"def {fn}(x{self.args[1:]}):" + ("\n" + guard.rstrip("\n") if guard else "")]
        if not tag_known:
            body += ["    if type(x) is not dict:", "        return False"]
        keys = []
        optional: list[str] = []        # the optional fields' checks, after the required ones
        required = 0
        for name, field in inner["fields"].items():
            _only(field, {"schema", "validation_alias", "serialization_alias", "serialization_exclude", "frozen", "serialization_exclude_if"})
            alias = field.get("validation_alias", name)
            if type(alias) is not str:
                raise Refuse("alias path")
            keys.append(alias)
            fs = field["schema"]
            if fs.get("type") == "default":
                inner_s = fs["schema"]
                _only(fs, {"schema", "default", "default_factory", "default_factory_takes_data", "on_error", "validate_default", "copy_default"})
                if inner_s.get("type") == "nullable" and "ref" not in inner_s:
                    _only(inner_s, {"schema"})
                    optional += [f"    v = x.get({alias!r})", f"    if v is not None and not {self.expr(inner_s['schema'], 'v')}:", "        return False"]
                else:
                    optional += [f"    v = x.get({alias!r}, _M)", f"    if v is not _M and not {self.expr(inner_s, 'v')}:", "        return False"]
            else:
                required += 1
                if not (tag_known and alias == "type"):
                    body += [f"    v = x.get({alias!r}, _M)", f"    if v is _M or not {self.expr(fs, 'v')}:", "        return False"]
        if len(set(keys)) != len(keys) or not all(k.isascii() for k in keys):
            raise Refuse("field aliases")
        if optional or extra != "ignore":
            # every required member is there: with no other member, no optional one or extra is to be looked at
            # (forbidden extras: none; kept extras: ASCII string keys, which pydantic-core converts)
            body += [f"    if len(x) == {required}:", "        return True"]
        body += optional
        if extra == "forbid":
            body += [f"    if not {self.const(frozenset(keys))}.issuperset(x):", "        return False"]
        elif extra == "allow":
            body += ["    if not _extra_keys(x):", "        return False"]      # kept extras need UTF-8 string keys (ignored ones do not)
        body.append("    return True\n")
        self.src.append("\n".join(body))
