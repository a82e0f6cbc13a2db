#!/usr/bin/env python3
"""Regenerate mcptap/protocol/data/shape-surfaces.json from the installed mcp-types,
then mcptap/protocol/data/shape-quick.json (protocol/shape_shipped.py: the quick
checks' source and the payload-less verdicts; run this after changing the code
that makes them, or pydantic or mcp-types).

    .venv/bin/python scripts/gen_shape_table.py

The table names the wire model of each (method, revision) of
``mcp_types.methods``' surface maps, for the ``methods.py`` whose SHA-256 it
records, so that ``check`` imports only the schema eras a capture uses
(mcptap/protocol/shapes.py). With another mcp-types release installed, shape
checks use ``mcp_types.methods`` itself until this is run again;
tests/protocol/test_shape_table.py fails when the table and the installed
release disagree."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
from mcp_types import methods

from mcptap.protocol import shape_shipped, shapes

OUT = Path(__file__).resolve().parents[1] / "mcptap" / "protocol" / shapes.TABLE_FILE


def main() -> None:
    source = Path(methods.__file__).read_bytes()
    doc = {"methods_sha256": hashlib.sha256(source).hexdigest(), "surfaces": shapes.build_table(methods)}
    # one line per (method, revision): the file reads and diffs as a table
    lines = [b'{"methods_sha256": ' + orjson.dumps(doc["methods_sha256"]) + b', "surfaces": {']
    for i, (name, rows) in enumerate(doc["surfaces"].items()):
        lines.append(b"  " + orjson.dumps(name) + b": {")
        lines += [b"    " + orjson.dumps(key) + b": " + orjson.dumps(arms) + (b"," if j < len(rows) - 1 else b"") for j, (key, arms) in enumerate(rows.items())]
        lines.append(b"  }" + (b"," if i < len(doc["surfaces"]) - 1 else b""))
    lines.append(b"}}")
    OUT.write_bytes(b"\n".join(lines) + b"\n")
    print(f"wrote {OUT} ({sum(len(v) for v in doc['surfaces'].values())} entries)")
    # a fresh process: the table just written is the one shapes loads
    subprocess.run([sys.executable, __file__, "--ship"], check=True)


def ship() -> None:
    """Write data/shape-quick.json (protocol/shape_ship_gen.document)."""
    from mcptap.protocol.shape_ship_gen import document

    doc = document()
    if doc is None:
        raise SystemExit("the surface table does not fit the installed mcp-types")
    out = OUT.with_name(Path(shape_shipped.FILE).name)
    out.write_bytes(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
    print(f"wrote {out} ({len(doc['models'])} models)")


if __name__ == "__main__":
    ship() if sys.argv[1:] == ["--ship"] else main()
