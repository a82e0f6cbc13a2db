"""Redaction rules: built-in key names and patterns plus the user's own (pure
apart from reading a rules file).

User rules come from the command line (``--redact-key NAME``,
``--redact-path PATH``, ``--redact-pattern REGEX``) and/or a TOML rules file
(``--redact-rules FILE``)::

    keys = ["ssn", "employeeId"]                 # compared like built-in keys
    paths = ["params.arguments.query", "result.structuredContent.rows[*].email"]
    builtin = true                               # false: only these rules
    [patterns]                                   # name = regex ((?P<secret>…), else the first group that took part, is the secret)
    employee-id = 'EMP-\\d{6}'

(``patterns`` may also be a plain list of regexes.) A PATH walks a message's
JSON as in ``show --filter '~j PATH'``: keys separated by ``.``, ``[N]`` or
``.N`` for array elements, ``*`` for any key or element; the whole value at
the path is redacted.

Errors (bad TOML, unknown field, a regex that does not compile, a bad path)
raise :class:`~mcptap.errors.RedactionError` naming the file or option.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcptap.errors import RedactionError
from mcptap.escape import escape_name
from mcptap.redact.keys import normalise
from mcptap.redact.patterns import BUILTIN

PathSeg = str | int
_SEG = re.compile(r"\[(\*|\d+)\]|\.?([^.\[\]]+)")


def parse_path(text: str, where: str = "--redact-path") -> tuple[PathSeg, ...]:
    """``params.arguments[0].x`` → ``("params", "arguments", 0, "x")``;
    ``*`` / ``[*]`` stays ``"*"``. Raises RedactionError."""
    segs: list[PathSeg] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _SEG.match(text, pos)
        if m is None or m.end() == pos:
            raise RedactionError(f"{where}: bad path {text!r} at column {pos + 1}")
        if m.group(1) is not None:
            segs.append("*" if m.group(1) == "*" else int(m.group(1)))
        else:
            word = m.group(2)
            segs.append(int(word) if word.isdigit() else word)
        pos = m.end()
    if not segs:
        raise RedactionError(f"{where}: empty path")
    return tuple(segs)


def _compile(name: str, rx: str, where: str) -> str:
    try:
        compiled = re.compile(rx)
    except re.error as exc:
        raise RedactionError(f"{where}: bad regular expression {rx!r}: {exc}") from None
    if compiled.search("") is not None and compiled.fullmatch("") is not None:
        raise RedactionError(f"{where}: regular expression {rx!r} matches the empty string")
    return rx


@dataclass(frozen=True)
class Rules:
    """A rule set. ``keys``: extra secret key names (normalised);
    ``paths``: JSON paths redacted whole; ``patterns``: (name, regex) user
    patterns; ``builtin``: include the built-in keys and patterns."""

    keys: frozenset[str] = frozenset()
    paths: tuple[tuple[PathSeg, ...], ...] = ()
    patterns: tuple[tuple[str, str], ...] = ()
    builtin: bool = True
    sources: tuple[str, ...] = field(default=())

    def all_patterns(self) -> list[tuple[str, str]]:
        """User patterns first (they win at the same position), then built-in
        and detect-secrets patterns."""
        from mcptap.redact.patterns import USER_KEY_RULE, key_assignment, library_patterns

        out = list(self.patterns)
        if self.keys:                   # a user key assigned in text, as the built-in names are
            out.append((USER_KEY_RULE, key_assignment(self.keys)))
        if self.builtin:
            out += list(BUILTIN) + library_patterns()
        return out

    def first_group_patterns(self) -> frozenset[str]:
        """Regexes whose first group that took part is the secret (``scanner.Scanner``):
        the user's (the first group that took part, unless one is named ``secret``) and the audited detect-secrets ones."""
        from mcptap.redact.patterns import library_value_groups

        return frozenset(rx for _, rx in self.patterns) | (library_value_groups() if self.builtin else frozenset())

    def describe(self) -> dict[str, Any]:
        """What ran, for the ``scrubbed`` field of a header (no secrets: user
        patterns are listed by name and regex, which are the user's own)."""
        from mcptap.redact.patterns import library_error

        d: dict[str, Any] = {"builtin": self.builtin}
        if self.builtin:
            d["library"] = "detect-secrets" if library_error() is None else None
        if self.keys:
            d["keys"] = sorted(self.keys)
        if self.paths:
            d["paths"] = [format_path(p) for p in self.paths]
        if self.patterns:
            d["patterns"] = {name: rx for name, rx in self.patterns}
        if self.sources:
            d["files"] = list(self.sources)
        return d


def rules_from_description(d: object) -> Rules | None:
    """The rules ``Rules.describe`` described (a scrubbed capture's ``header.scrubbed[i].rules``);
    None when ``d`` is not such a description or names a bad path or regex."""
    if not isinstance(d, dict) or not isinstance(d.get("builtin", True), bool):
        return None
    keys, paths, patterns = d.get("keys", []), d.get("paths", []), d.get("patterns", {})
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys) and isinstance(paths, list)
            and all(isinstance(x, str) for x in paths) and isinstance(patterns, dict)
            and all(isinstance(v, str) for v in patterns.values())):
        return None
    try:
        return Rules(frozenset(normalise(k) for k in keys), tuple(parse_path(x) for x in paths),
                     tuple((str(n), _compile(str(n), rx, "scrubbed")) for n, rx in patterns.items()), d.get("builtin", True))
    except RedactionError:
        return None


def format_path(path: Iterable[PathSeg]) -> str:
    """Inverse of ``parse_path`` (``a.b[0].*``)."""
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += ("." if out else "") + seg
    return out


def build_rules(keys: Iterable[str] = (), paths: Iterable[str] = (), patterns: Iterable[str] = (),
                files: Iterable[str] = (), builtin: bool = True) -> Rules:
    """Rules from command-line values and rules files. Raises RedactionError."""
    k = {normalise(x) for x in keys if normalise(x)}
    p = [parse_path(x) for x in paths]
    pats = [(f"user:{i + 1}", _compile(f"user:{i + 1}", rx, "--redact-pattern")) for i, rx in enumerate(patterns)]
    sources = []
    for f in files:
        fk, fp, fpat, fbuiltin = _read_file(f)
        k |= fk
        p += fp
        pats += fpat
        builtin = builtin and fbuiltin
        sources.append(f)
    return Rules(frozenset(k), tuple(p), tuple(pats), builtin, tuple(sources))


def _read_file(path: str) -> tuple[set[str], list[tuple[PathSeg, ...]], list[tuple[str, str]], bool]:
    import tomllib  # here: only a rules file needs it (0.5 MiB in every tap otherwise)

    try:
        with open(path, "rb") as fp:
            data = tomllib.load(fp)
    except OSError as exc:
        raise RedactionError(f"cannot read rules file {escape_name(path)}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RedactionError(f"rules file {escape_name(path)}: not valid TOML: {exc}") from None
    unknown = set(data) - {"keys", "paths", "patterns", "builtin"}
    if unknown:
        raise RedactionError(f"rules file {escape_name(path)}: unknown field {sorted(unknown)[0]!r} (expected keys, paths, patterns, builtin)")
    keys = data.get("keys", [])
    paths = data.get("paths", [])
    if not isinstance(keys, list) or not all(isinstance(x, str) for x in keys):
        raise RedactionError(f"rules file {escape_name(path)}: keys must be a list of strings")
    if not isinstance(paths, list) or not all(isinstance(x, str) for x in paths):
        raise RedactionError(f"rules file {escape_name(path)}: paths must be a list of strings")
    builtin = data.get("builtin", True)
    if not isinstance(builtin, bool):
        raise RedactionError(f"rules file {escape_name(path)}: builtin must be true or false")
    raw = data.get("patterns", {})
    if isinstance(raw, list):
        raw = {f"{path}:{i + 1}": rx for i, rx in enumerate(raw)}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise RedactionError(f"rules file {escape_name(path)}: patterns must be a table of name = regex (or a list of regexes)")
    pats = [(str(name), _compile(str(name), rx, f"rules file {escape_name(path)}: pattern {name}")) for name, rx in raw.items()]
    return ({normalise(x) for x in keys if normalise(x)}, [parse_path(x, f"rules file {escape_name(path)}") for x in paths], pats, builtin)
