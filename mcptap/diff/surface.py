"""What a server offers, compared between two captures (pure, level 3).

The *surface* of a capture is what the server declared: negotiated protocol
revision, server capabilities, serverInfo and instructions (``initialize`` or
``server/discover`` result), and the tools, resources, resource templates and
prompts from its list results (all pages merged). ``compare_surface`` reports
each difference as an :class:`Item`, marking the ones that break existing
clients (``breaking=True``): a removed tool/prompt/resource, a dropped
capability, a new required input property or argument, a changed property
type, a narrowed enum, an output property removed, a tool that stops being
read-only or becomes destructive, a different protocol revision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.compare.mask import Masker
from mcptap.compare.paths import short

#: list methods -> (surface attribute, result key, identifying member key)
LISTS = {
    "tools/list": ("tools", "tools", "name"),
    "resources/list": ("resources", "resources", "uri"),
    "resources/templates/list": ("templates", "resourceTemplates", "uriTemplate"),
    "prompts/list": ("prompts", "prompts", "name"),
}
SURFACE_METHODS = frozenset(LISTS) | {"initialize", "server/discover"}
_SECTION = {"tools": "tools", "resources": "resources", "templates": "resourceTemplates", "prompts": "prompts"}
_NOUN = {"tools": "tool", "resources": "resource", "templates": "resource template", "prompts": "prompt"}


@dataclass(slots=True)
class Item:
    """One reported difference. ``section``: protocol, capabilities,
    serverInfo, tools, resources, resourceTemplates, prompts, exchanges,
    findings, latency, notifications; ``kind``: added / removed / changed /
    new / resolved / shift; ``subject``: what (a tool name, a method, a finding
    code); ``detail``: one human sentence; ``data``: JSON-compatible facts."""

    section: str
    kind: str
    subject: str
    detail: str
    breaking: bool = False
    data: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"section": self.section, "kind": self.kind, "subject": self.subject, "detail": self.detail}
        if self.breaking:
            d["breaking"] = True
        if self.data:
            d["data"] = self.data
        return d


@dataclass(slots=True)
class Surface:
    """The server surface seen in one capture (None: never seen)."""

    revision: str | None = None
    offered: str | None = None
    server_caps: dict[str, Any] | None = None
    client_caps: dict[str, Any] | None = None
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    supported_versions: list[Any] | None = None
    tools: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None
    templates: dict[str, Any] | None = None
    prompts: dict[str, Any] | None = None
    _pages: dict[str, set[Any]] = field(default_factory=dict)

    def feed(self, method: str, params: Any, result: Any, masker: Masker | None = None) -> None:
        """Take one successful result of a SURFACE_METHODS request. ``masker``: the user's
        ``--ignore`` paths (only those, ``Masker.ignored``) are taken out of ``result`` and
        ``params`` first, so an ignored field (``result.serverInfo.version``) is no surface
        difference either, as it is no exchange difference."""
        if masker is not None:
            result = masker.ignored(result, method, "result")
            params = masker.ignored(params, method, "params")
        if not isinstance(result, dict):
            return
        if method == "initialize":
            if self.server_caps is not None:
                return                      # first session wins (HTTP captures may hold several)
            self.revision = result.get("protocolVersion") if isinstance(result.get("protocolVersion"), str) else self.revision
            v = result.get("capabilities")
            self.server_caps = v if isinstance(v, dict) else {}
            self.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else None
            self.instructions = result.get("instructions") if isinstance(result.get("instructions"), str) else None
            if isinstance(params, dict):
                self.offered = params.get("protocolVersion") if isinstance(params.get("protocolVersion"), str) else None
                caps = params.get("capabilities")
                self.client_caps = caps if isinstance(caps, dict) else None
            return
        if method == "server/discover":
            if self.server_caps is None:
                v = result.get("capabilities")
                self.server_caps = v if isinstance(v, dict) else {}
                sv = result.get("supportedVersions")
                self.supported_versions = sv if isinstance(sv, list) else None
                self.instructions = result.get("instructions") if isinstance(result.get("instructions"), str) else None
            self._server_info_from_meta(result)
            return
        spec = LISTS.get(method)
        if spec is None:
            return
        attr, key, ident = spec
        items = result.get(key)
        if not isinstance(items, list):
            return
        cursor = params.get("cursor") if isinstance(params, dict) else None
        pages = self._pages.setdefault(attr, set())
        table = getattr(self, attr)
        if table is None or cursor is None and None in pages:
            table = {}                      # a fresh first page: the list as of now
            pages.clear()
            setattr(self, attr, table)
        pages.add(cursor if isinstance(cursor, (str, int)) else None)
        for it in items:
            if isinstance(it, dict) and isinstance(it.get(ident), str):
                table[it[ident]] = it
        self._server_info_from_meta(result)

    def _server_info_from_meta(self, result: dict[str, Any]) -> None:
        meta = result.get("_meta")
        if self.server_info is None and isinstance(meta, dict):
            info = meta.get("io.modelcontextprotocol/serverInfo")
            if isinstance(info, dict):
                self.server_info = info

    def note_revision(self, rev: Any) -> None:
        """A message carried a protocol revision (2026-07-28 per-request _meta)."""
        if isinstance(rev, str) and self.revision is None:
            self.revision = rev


# -- comparison -----------------------------------------------------------------------

def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict) and d:
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else k))
    else:
        out[prefix] = d
    return out


def _caps(a: dict[str, Any] | None, b: dict[str, Any] | None, who: str, out: list[Item]) -> None:
    if a is None or b is None:
        return
    section = "capabilities"
    for k in a:
        if k not in b:
            out.append(Item(section, "removed", f"{who}.{k}", f"{who} capability {k!r} dropped", who == "server", {"a": a[k]}))
    for k in b:
        if k not in a:
            out.append(Item(section, "added", f"{who}.{k}", f"{who} capability {k!r} added", False, {"b": b[k]}))
    for k in a:
        if k in b and a[k] != b[k]:
            fa, fb = _flatten(a[k], k), _flatten(b[k], k)
            for p in sorted(set(fa) | set(fb)):
                va, vb = fa.get(p), fb.get(p)
                if va == vb:
                    continue
                # {} on one side and sub-keys on the other is the same object growing or
                # shrinking: its keys are reported, the container itself is not "dropped"
                if (va == {} and p not in fb and any(q.startswith(p + ".") for q in fb)) or \
                        (vb == {} and p not in fa and any(q.startswith(p + ".") for q in fa)):
                    continue
                narrowed = who == "server" and (p not in fb or va is True and vb is not True)
                kind = "removed" if p not in fb else "added" if p not in fa else "changed"
                out.append(Item(section, kind, f"{who}.{p}", f"{who} capability {p}: {_j(va)} -> {_j(vb)}", narrowed, {"a": va, "b": vb}))


def _j(v: Any) -> str:
    """A value in a sentence as the rest of diff's output prints it: JSON (``true``, ``["a"]``),
    strings quoted, ``absent`` for a missing key, cut to 120 characters (never Python's ``True``)."""
    return short(v, 120)


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _set(v: Any) -> set[Any]:
    return set(v) if isinstance(v, list) else set()


def _type(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if t is None and "$ref" in schema:
        return schema["$ref"]
    if t is None and ("anyOf" in schema or "oneOf" in schema):
        return [_type(s) for s in schema.get("anyOf", schema.get("oneOf", [])) or ()]
    return t


def _schema(a: Any, b: Any, where: str, output: bool, out: list[tuple[str, bool]]) -> None:
    """Schema differences as (sentence, breaking). Input schemas: new required
    property, removed property, changed type, narrowed enum break callers.
    Output schemas: removed property, changed type, removed guarantee break consumers."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        if a != b:
            out.append((f"{where}: schema replaced", True))
        return
    ta, tb = _type(a), _type(b)
    if ta != tb:
        out.append((f"{where}: type {_j(ta)} -> {_j(tb)}", True))
        return
    ea, eb = a.get("enum"), b.get("enum")
    if isinstance(ea, list) and isinstance(eb, list) and ea != eb:
        gone = [v for v in (ea if not output else eb) if v not in (eb if not output else ea)]
        out.append((f"{where}: enum {_j(ea)} -> {_j(eb)}", bool(gone)))
    pa, pb = _dict(a.get("properties")), _dict(b.get("properties"))
    ra, rb = _set(a.get("required")), _set(b.get("required"))
    for name in pa:
        if name not in pb:
            out.append((f"{where}.{name}: property removed", True))
        else:
            _schema(pa[name], pb[name], f"{where}.{name}", output, out)
    for name in pb:
        if name not in pa:
            req = name in rb
            out.append((f"{where}.{name}: {'required ' if req else 'optional '}property added", req and not output))
    for name in sorted(rb - ra):
        if name in pa:
            out.append((f"{where}.{name}: now required", not output))
    for name in sorted(ra - rb):
        if name in pb:
            out.append((f"{where}.{name}: no longer required", output))
    if "items" in a or "items" in b:
        _schema(a.get("items"), b.get("items"), f"{where}[]", output, out)


def _annotations(a: Any, b: Any, out: list[tuple[str, bool]]) -> None:
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    if a == b:
        return
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            breaking = (k == "readOnlyHint" and a.get(k) is True) or (k == "destructiveHint" and b.get(k) is True)
            out.append((f"annotations.{k}: {_j(a.get(k))} -> {_j(b.get(k))}", breaking))


def _entry(kind: str, a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for k in ("title", "description", "mimeType"):
        if a.get(k) != b.get(k):
            out.append((f"{k} changed", kind == "resources" and k == "mimeType"))
    if kind == "tools":
        _schema(a.get("inputSchema"), b.get("inputSchema"), "inputSchema", False, out)
        if "outputSchema" in a or "outputSchema" in b:
            if "outputSchema" in a and "outputSchema" not in b:
                out.append(("outputSchema removed", True))
            elif "outputSchema" in b and "outputSchema" not in a:
                out.append(("outputSchema added", False))
            else:
                _schema(a["outputSchema"], b["outputSchema"], "outputSchema", True, out)
        _annotations(a.get("annotations"), b.get("annotations"), out)
    elif kind == "prompts":
        aa = {x.get("name"): x for x in a.get("arguments") or [] if isinstance(x, dict)}
        ab = {x.get("name"): x for x in b.get("arguments") or [] if isinstance(x, dict)}
        for n in aa:
            if n not in ab:
                out.append((f"argument {n!r} removed", True))
            elif bool(aa[n].get("required")) != bool(ab[n].get("required")):
                out.append((f"argument {n!r} {'now' if ab[n].get('required') else 'no longer'} required", bool(ab[n].get("required"))))
        for n in ab:
            if n not in aa:
                out.append((f"{'required' if ab[n].get('required') else 'optional'} argument {n!r} added", bool(ab[n].get("required"))))
    known = {"name", "title", "description", "mimeType", "inputSchema", "outputSchema", "annotations", "arguments", "_meta", "uri", "uriTemplate"}
    for k in sorted((set(a) | set(b)) - known):
        if a.get(k) != b.get(k):
            out.append((f"{k} changed", False))
    return out


def compare_surface(a: Surface, b: Surface) -> list[Item]:
    """Every difference between two surfaces, in report order."""
    out: list[Item] = []
    if a.revision != b.revision and a.revision is not None and b.revision is not None:
        out.append(Item("protocol", "changed", "revision", f"negotiated protocol revision {a.revision} -> {b.revision}", True,
                        {"a": a.revision, "b": b.revision}))
    if a.supported_versions is not None and b.supported_versions is not None and a.supported_versions != b.supported_versions:
        gone = [v for v in a.supported_versions if v not in b.supported_versions]
        out.append(Item("protocol", "changed", "supportedVersions", f"supported versions {_j(a.supported_versions)} -> {_j(b.supported_versions)}", bool(gone)))
    _caps(a.server_caps, b.server_caps, "server", out)
    _caps(a.client_caps, b.client_caps, "client", out)
    if a.server_info is not None and b.server_info is not None and a.server_info != b.server_info:
        for k in sorted(set(a.server_info) | set(b.server_info)):
            if a.server_info.get(k) != b.server_info.get(k):
                out.append(Item("serverInfo", "changed", k, f"serverInfo.{k}: {_j(a.server_info.get(k))} -> {_j(b.server_info.get(k))}",
                                False, {"a": a.server_info.get(k), "b": b.server_info.get(k)}))
    if a.instructions != b.instructions and a.server_caps is not None and b.server_caps is not None:
        out.append(Item("serverInfo", "changed", "instructions", "server instructions changed"))
    for attr in ("tools", "resources", "templates", "prompts"):
        ta, tb = getattr(a, attr), getattr(b, attr)
        if ta is None or tb is None:
            continue
        section, noun = _SECTION[attr], _NOUN[attr]
        for name in ta:
            if name not in tb:
                out.append(Item(section, "removed", name, f"{noun} {name!r} removed", True))
        for name in tb:
            if name not in ta:
                out.append(Item(section, "added", name, f"{noun} {name!r} added"))
        for name in ta:
            if name in tb and ta[name] != tb[name]:
                changes = _entry(attr, ta[name], tb[name])
                if not changes:
                    continue
                breaking = any(br for _, br in changes)
                out.append(Item(section, "changed", name, f"{noun} {name!r}: " + "; ".join(t for t, _ in changes), breaking,
                                {"changes": [{"what": t, "breaking": br} for t, br in changes]}))
    return out
