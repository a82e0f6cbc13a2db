"""Architecture guard: a module imports only from its own level or below, trio
only in transports/replay runner, click only in the CLI (docs/internals.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mcptap"

#: module (or package) prefix -> level; the longest matching prefix wins.
#: A new module or package: add ONE line here (level 0 stdlib types, 1 pure core,
#: 2 relay cores, 3 pure consumers of captures, 4 I/O runners (trio), 5 CLI).
LEVELS = {
    "mcptap": 0, "mcptap.early_signals": 0, "mcptap.errors": 0, "mcptap.model": 0, "mcptap.escape": 0, "mcptap.records": 1, "mcptap.clock": 4,
    "mcptap.protocol": 1, "mcptap.capture": 1, "mcptap.capture.pieces": 1, "mcptap.filters": 1, "mcptap.filters.jsonpath": 1, "mcptap.filters.members": 1,
    "mcptap.capture.record_checks": 1, "mcptap.recorder": 1, "mcptap.recording": 1, "mcptap.reannotate": 1, "mcptap.reannotate_reframe": 1,
    "mcptap.reannotate_views": 1, "mcptap.redact": 1, "mcptap.paths": 1, "mcptap.catalog": 1, "mcptap.capture_ends": 1, "mcptap.liveness": 1,
    "mcptap.relay": 2,
    "mcptap.compare": 3, "mcptap.diff": 3, "mcptap.show": 3, "mcptap.check": 3,
    "mcptap.show.values": 3, "mcptap.show.tracker": 3, "mcptap.show.latency": 3,
    "mcptap.check.scan": 3, "mcptap.check.scan_records": 3, "mcptap.check.scan_report": 3, "mcptap.check.merge": 3,
    "mcptap.check.parallel": 4, "mcptap.check.fullscan": 3, "mcptap.check.fullsplit": 4,
    "mcptap.check.shape_oracle": 3, "mcptap.check.shape_child": 4, "mcptap.check.forked": 4, "mcptap.check.full_tally": 3, "mcptap.check.split_state": 3,
    "mcptap.check.split_skip": 3, "mcptap.check.split_adopt": 3, "mcptap.check.split_warm": 3, "mcptap.check.exact_places": 3,
    "mcptap.recorder_stderr": 1, "mcptap.recorder_chunks": 1, "mcptap.recorder_gaps": 1, "mcptap.known_secrets": 1,
    "mcptap.protocol.tagged": 1, "mcptap.protocol.shape_graph": 1, "mcptap.protocol.shape_gen": 1,
    "mcptap.protocol.shape_shipped": 1, "mcptap.protocol.shape_table": 1, "mcptap.protocol.shape_ship_gen": 1, "mcptap.reuse_annotations": 1,
    "mcptap.batch_shapes": 1, "mcptap.protocol.pending": 1, "mcptap.protocol.idless_answers": 1,
    "mcptap.protocol.skeleton": 1, "mcptap.protocol.shape_verdict": 1, "mcptap.redact.ds_table": 1, "mcptap.redact.argv_rules": 1, "mcptap.redact.shapes": 1,
    "mcptap.redact.deep": 1, "mcptap.redact.stderr_stream": 1, "mcptap.redact.urlview": 1, "mcptap.redact.sessions": 1,
    "mcptap.redact.scrub_streams": 1, "mcptap.redact.repeats": 1, "mcptap.redact.repeat_match": 1, "mcptap.redact.record_places": 1,
    "mcptap.protocol.code_table": 1, "mcptap.protocol.code_table_transport": 1,
    "mcptap.protocol.utf8": 1, "mcptap.protocol.sse_canonical": 1, "mcptap.protocol.sse_block": 1, "mcptap.relay.http.body_buffer": 2,
    "mcptap.redact.header_scan": 1, "mcptap.relay.http.h11_fast": 2,
    "mcptap.relay.http.h11_fields": 2,
    "mcptap.relay.http.cookies": 2, "mcptap.protocol.urls": 1, "mcptap.relay.http.auth_docs": 2, "mcptap.relay.http.observe_sse": 2,
    "mcptap.replay.plan": 3, "mcptap.replay.compare": 3, "mcptap.replay.http_heads": 3, "mcptap.replay.builder": 3, "mcptap.replay.in_flight": 3,
    "mcptap.replay.steps": 3, "mcptap.replay.findings": 3, "mcptap.replay.peer_text": 3, "mcptap.demo": 3, "mcptap.hosts": 3, "mcptap.export": 3,
    "mcptap.hosts.entries": 3, "mcptap.hosts.json_dialect": 3, "mcptap.hosts.toml_dialect": 3,
    "mcptap.export.har_exchanges": 3, "mcptap.export.har_cookies": 3, "mcptap.demo.rpc": 3,
    "mcptap.transport": 4, "mcptap.transport.hasher": 4, "mcptap.transport.fact_codec": 4, "mcptap.transport.http_recorder": 4,
    "mcptap.transport.http_recorder_child": 4, "mcptap.transport.http_trim": 4, "mcptap.replay": 4, "mcptap.otel": 4,
    "mcptap.transport.tee_pump": 4, "mcptap.transport.stdio_signals": 4,
    "mcptap.cli": 5, "mcptap.cli.replay_link": 5, "mcptap.cli.replay_report": 5, "mcptap.__main__": 5,
    "mcptap.serve": 4, "mcptap.serve.script": 3, "mcptap.serve.script_fields": 3, "mcptap.serve.script_http": 3, "mcptap.serve.core": 3, "mcptap.serve.wire": 3,
    "mcptap.serve.live": 3, "mcptap.serve.unanswered": 3, "mcptap.serve.script_model": 3, "mcptap.serve.script_auth": 3,
    "mcptap.serve.extend": 3, "mcptap.serve.http_guard": 3, "mcptap.pytest_plugin": 4,
    "mcptap.serve.http_requests": 4, "mcptap.serve.script_facts": 3,
}


def level(mod: str) -> int:
    """The level of ``mod``: the longest LEVELS prefix that names it or a
    package above it (``mcptap`` itself names only the package)."""
    best, n = None, -1
    for prefix, lv in LEVELS.items():
        hit = mod == prefix or (prefix != "mcptap" and mod.startswith(prefix + "."))
        if hit and len(prefix) > n:
            best, n = lv, len(prefix)
    assert best is not None, (f"module {mod} has no level: add one line for it (or its package) to LEVELS in "
                              "tests/test_layering.py (0 stdlib types, 1 pure core, 2 relay cores, 3 pure consumers "
                              "of captures, 4 I/O runners, 5 CLI)")
    return best


def modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), p


def _script_only(tree: ast.Module) -> set[int]:
    """The nodes of a module's top-level ``if __name__ == "__main__":`` blocks: run only when the
    file is the program (``python -m mcptap.cli.main`` enters through cli/entry.py), never when
    it is imported, so no edge of the import graph."""
    out: set[int] = set()
    for stmt in tree.body:
        if (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and isinstance(stmt.test.left, ast.Name)
                and stmt.test.left.id == "__name__" and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in stmt.test.comparators)):
            out.update(id(n) for b in stmt.body for n in ast.walk(b))
    return out


def imports(path: Path, mod: str):
    tree = ast.parse(path.read_text())
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    script = _script_only(tree)
    for node in ast.walk(tree):
        if id(node) in script:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                yield ".".join(base + ([node.module] if node.module else []))
            elif node.module:
                yield node.module


def test_levels_and_third_party_placement() -> None:
    bad = []
    for mod, path in modules():
        lv = level(mod)
        for imp in imports(path, mod):
            top = imp.split(".")[0]
            if top == "mcptap" and imp != "mcptap":
                if level(imp) > lv:
                    bad.append(f"{mod} (level {lv}) imports {imp} (level {level(imp)})")
            elif top == "trio" and lv < 4:
                bad.append(f"{mod} imports trio (only transports and the replay runner may)")
            elif top == "click" and lv < 5:
                bad.append(f"{mod} imports click (only mcptap.cli may)")
            elif top == "h11" and not (mod.startswith("mcptap.relay") or lv >= 4):
                bad.append(f"{mod} imports h11 (only relay/ and transports may)")
    assert not bad, "\n".join(bad)


def _resolve(imp: str, known: set[str]) -> str | None:
    """The mcptap module an import names (``from pkg import mod`` names ``pkg.mod``)."""
    while imp and imp not in known:
        imp = imp.rpartition(".")[0]
    return imp or None


def test_no_import_cycles() -> None:
    """No cycle among mcptap modules, counting every import (module level,
    function level and ``TYPE_CHECKING``): a cycle means two modules are one."""
    paths = dict(modules())
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        deps = set()
        tree = ast.parse(path.read_text())
        for imp in imports(path, mod):
            if imp.split(".")[0] != "mcptap":
                continue
            deps.add(_resolve(imp, known))
        script = _script_only(tree)
        for node in ast.walk(tree):   # ``from mcptap.x import y`` where y is a module
            if id(node) in script:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mcptap") and not node.level:
                for a in node.names:
                    if f"{node.module}.{a.name}" in known:
                        deps.add(f"{node.module}.{a.name}")
        # a package's __init__ is imported first by any of its modules: not a dependency edge
        graph[mod] = {d for d in deps if d and d != mod and d != "mcptap" and not mod.startswith(d + ".")}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


#: no module is longer than this (design.md §3: past ~400 lines it is two)
MAX_LINES = 400


def test_no_module_over_400_lines() -> None:
    long = [f"{mod}: {n} lines" for mod, path in modules() if (n := len(path.read_text().splitlines())) > MAX_LINES]
    assert not long, f"split these modules (limit {MAX_LINES} lines):\n" + "\n".join(long)


def test_only_lifecycle_changes_phase_and_era() -> None:
    """A session's phase, era and negotiated revision change in
    protocol/lifecycle.py only (as h11's _state.py): an assignment to a
    session state's ``phase``/``era``/``revision`` anywhere else is a breach."""
    bad = []
    for mod, path in modules():
        if mod == "mcptap.protocol.lifecycle":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in ("st", "state", "session_state") \
                        and t.attr in ("phase", "era", "revision"):
                    bad.append(f"{mod}:{node.lineno} sets {t.value.id}.{t.attr}")
    assert not bad, "\n".join(bad)


#: Below level 4 only these may read a clock or touch files: the capture file
#: boundary, the capture directory, user rules/key files, and
#: the demo peers (stand-alone programs). A new module that needs either: add it
#: here with the reason, or (better) take the time / the bytes as arguments.
CLOCK_OR_FILES = {
    "mcptap.capture.writer", "mcptap.capture.reader", "mcptap.capture.follow", "mcptap.capture.source",  # the capture file
    "mcptap.capture.spill_format",                    # the stdio tap's spill file beside it (recover, ls, prune)
    "mcptap.paths", "mcptap.catalog", "mcptap.liveness",   # the capture directory: names, listing, pruning, live writers
    "mcptap.redact.keyfile", "mcptap.redact.rules",   # the user's redaction key and rules files
    "mcptap.serve.extend",                            # writes the extended capture beside the original
    "mcptap.demo.client", "mcptap.demo.server",       # stand-alone demo peers (stdlib programs)
}
_OS_IO = {"open", "write", "remove", "unlink", "replace", "rename", "makedirs", "mkdir", "fchmod", "ftruncate", "fsync", "fdopen"}
_PATH_WRITES = {"write_text", "write_bytes", "unlink", "mkdir", "touch", "rename", "symlink_to", "chmod"}


def _clock_or_file_access(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for n in ast.walk(tree):
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] == "time" for a in n.names):
            yield n.lineno, "imports time"
        elif isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "time" and not n.level:
            yield n.lineno, "imports time"
        elif isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name) and f.id == "open":
                yield n.lineno, "open()"
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if f.value.id == "os" and f.attr in _OS_IO:
                    yield n.lineno, f"os.{f.attr}()"
                elif f.value.id in ("datetime", "date") and f.attr in ("now", "utcnow", "today"):
                    yield n.lineno, f"{f.value.id}.{f.attr}()"
            if isinstance(f, ast.Attribute) and f.attr in _PATH_WRITES and not (isinstance(f.value, ast.Name) and f.value.id == "os"):
                yield n.lineno, f".{f.attr}()"


def test_no_clock_or_file_access_in_the_core() -> None:
    """The pure core (levels 0-3) never reads a clock (time arrives with events)
    and never touches files (bytes arrive as arguments), outside CLOCK_OR_FILES."""
    bad = [f"{mod}:{line} {what}" for mod, path in modules() if level(mod) <= 3 and mod not in CLOCK_OR_FILES
           for line, what in _clock_or_file_access(ast.parse(path.read_text()))]
    assert not bad, "clock or file access in the core (see CLOCK_OR_FILES):\n" + "\n".join(bad)


def test_clocks_are_passed_in() -> None:
    """Clocks are read above the core: ``mcptap.clock`` (wall and monotonic
    clocks) is level 4, so nothing below the I/O runners imports it (the level
    test enforces that); the live recorder must be handed its clock and start
    time (no default that reads one), and the offline re-annotator has no
    clock at all (its times are the records' own)."""
    import inspect

    from mcptap.reannotate import Reannotator
    from mcptap.recorder import Recorder
    from mcptap.recording import RecordingState

    assert level("mcptap.clock") == 4
    params = inspect.signature(Recorder).parameters
    for name in ("clock", "started"):
        assert params[name].default is inspect.Parameter.empty and params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert not issubclass(Reannotator, Recorder) and issubclass(Reannotator, RecordingState)
    for cls in (RecordingState, Reannotator):
        assert "clock" not in inspect.signature(cls).parameters
        src = inspect.getsource(cls)
        assert ".clock" not in src and "clock(" not in src, f"{cls.__name__} reads a clock"
