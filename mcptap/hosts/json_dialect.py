"""The JSON and JSONC dialects of host configurations (hosts/dialects.py).

:class:`JsonDialect` reads the servers in the object at a key path
(``mcpServers``, ``servers``, ``mcp.servers``, ``context_servers``,
``projects.DIR.mcpServers``) with the position-tracking reader (hosts/jsonc.py)
and changes one entry by splicing new JSON into the exact span of the old
value, so every other byte (comments, trailing commas, indentation, CRLF)
stays as it was. Pure; raises ConfigError (not an object, no such server, not
a stdio/URL entry) and ConfigSyntaxError (text that is not JSONC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcptap.hosts import jsonc
from mcptap.hosts.entries import URL_KEYS, Dialect, ServerEntry, _stdio_entry
from mcptap.hosts.errors import ConfigError


def _shallow(node: jsonc.Node) -> Any:
    """An ``args`` value as far as ``_stdio_entry`` looks (a nested item stays
    a node, no string): never the whole value, maybe thousands of levels deep."""
    if isinstance(node, jsonc.Array):
        return [x.value if isinstance(x, jsonc.Scalar) else x for x in node.items]
    return node.value if isinstance(node, jsonc.Scalar) else node


class JsonDialect(Dialect):
    """A JSON/JSONC dialect whose servers live in the object at ``path``."""

    def __init__(self, name: str, label: str, path: tuple[str, ...], scope: str = "") -> None:
        self.name = name
        self.label = label
        self.path = path
        self.scope = scope

    # -- reading -----------------------------------------------------------------
    def _container(self, root: jsonc.Node) -> jsonc.Object | None:
        if not isinstance(root, jsonc.Object):
            raise ConfigError("the top level is not a JSON object")
        node: jsonc.Node = root
        for key in self.path:
            if not isinstance(node, jsonc.Object):
                return None
            member = node.get(key)
            if member is None:
                return None
            node = member.value
        if not isinstance(node, jsonc.Object):
            raise ConfigError(f"{'.'.join(self.path)} is not an object")
        return node

    def _entries(self, text: str) -> dict[str, jsonc.Object]:
        container = self._container(jsonc.parse(text))
        out: dict[str, jsonc.Object] = {}
        if container is None:
            return out
        for m in container.members:
            out.pop(m.key, None)             # a duplicate key: the last one counts
            if isinstance(m.value, jsonc.Object):
                out[m.key] = m.value
        return out

    @staticmethod
    def _stdio_parts(entry: jsonc.Object) -> tuple[jsonc.Scalar, jsonc.Object, jsonc.Member | None] | None:
        """(command string node, the object holding args, its args member)."""
        cmd = entry.get("command")
        if cmd is None:
            return None
        if isinstance(cmd.value, jsonc.Scalar) and isinstance(cmd.value.value, str):
            return cmd.value, entry, entry.get("args")
        if isinstance(cmd.value, jsonc.Object):        # Zed before 0.19x: "command": {"path", "args", "env"}
            path = cmd.value.get("path")
            if path is not None and isinstance(path.value, jsonc.Scalar) and isinstance(path.value.value, str):
                return path.value, cmd.value, cmd.value.get("args")
        return None

    def servers(self, text: str) -> dict[str, ServerEntry]:
        out = {}
        for name, entry in self._entries(text).items():
            parts = self._stdio_parts(entry)
            if parts is not None:
                cmd, _, args = parts
                out[name] = _stdio_entry(name, cmd.value, None if args is None else _shallow(args.value))
                continue
            for key in URL_KEYS:
                m = entry.get(key)
                if m is not None and isinstance(m.value, jsonc.Scalar) and isinstance(m.value.value, str):
                    out[name] = ServerEntry(name, url=m.value.value, url_key=key)
                    break
            else:
                out[name] = ServerEntry(name)
        return out

    # -- writing -----------------------------------------------------------------
    def _entry(self, text: str, name: str) -> jsonc.Object:
        entry = self._entries(text).get(name)
        if entry is None:
            raise ConfigError(f"no server named {name!r}")
        return entry

    def set_stdio(self, text: str, name: str, command: str, args: Sequence[str]) -> str:
        parts = self._stdio_parts(self._entry(text, name))
        if parts is None:
            raise ConfigError(f"{name}: not a stdio entry")
        cmd, holder, args_member = parts
        edits = [(cmd.start, cmd.end, jsonc.dumps(command))]
        if args_member is not None:
            edits.append((args_member.value.start, args_member.value.end, jsonc.dumps(list(args))))
        else:
            at, piece = _insertion(text, holder, "args", jsonc.dumps(list(args)))
            edits.append((at, at, piece))
        return _splice(text, edits)

    def entry_texts(self, text: str) -> dict[str, str]:
        return {name: text[e.start:e.end] for name, e in self._entries(text).items()}

    def confined(self, text: str, name: str, start: int, end: int, new: str) -> bool:
        entry = self._entries(text).get(name)
        return entry is not None and entry.start < start and end < entry.end      # inside its braces

    def set_url(self, text: str, name: str, url: str) -> str:
        entry = self._entry(text, name)
        for key in URL_KEYS:
            m = entry.get(key)
            if m is not None and isinstance(m.value, jsonc.Scalar) and isinstance(m.value.value, str):
                return _splice(text, [(m.value.start, m.value.end, jsonc.dumps(url))])
        raise ConfigError(f"{name}: not a URL entry")


def _insertion(text: str, obj: jsonc.Object, key: str, value: str) -> tuple[int, str]:
    """Where and what to insert to add ``"key": value`` as the last member of
    ``obj``: right after the last member's value, a comma and the same line
    break and indentation as that member (or one space when it shares its
    line with the previous token)."""
    if not obj.members:
        return obj.start + 1, f"{jsonc.dumps(key)}: {value}"
    last = obj.members[-1]
    nl = text.rfind("\n", obj.start, last.start)
    sep = " "
    if nl >= 0 and not text[nl + 1:last.start].strip():
        crlf = nl > 0 and text[nl - 1] == "\r"
        sep = ("\r\n" if crlf else "\n") + text[nl + 1:last.start]
    return last.value.end, f",{sep}{jsonc.dumps(key)}: {value}"


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text
