"""A scripted stdio MCP server that plays one handed case (../shared/cases).

``python script_peer.py CASE_DIR WIRE``: for each wire event in order — c2s
bytes: read exactly that many bytes from stdin and check they are identical
(exit 3 with a message on stderr if not); s2c bytes: write them to stdout;
err bytes: write to stderr; s2c eof: close stdout; exit: exit with that code.
It is the server side of tests/e2e/test_cases_relay.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from casefiles import load_wire


def read_exact(n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def main() -> int:
    w = load_wire(Path(sys.argv[1]), sys.argv[2])
    stdout_open = True
    for e in w.events:
        if e.kind == "bytes" and e.dir == "c2s":
            got = read_exact(len(e.data))
            if got != e.data:
                sys.stderr.write(f"script_peer: wire seq {e.seq}: c2s bytes differ: {got[:60]!r} != {e.data[:60]!r}\n")
                return 3
        elif e.kind == "bytes" and e.dir == "s2c" and stdout_open:
            os.write(1, e.data) if len(e.data) < 65536 else sys.stdout.buffer.write(e.data)
            sys.stdout.flush()
        elif e.kind == "bytes" and e.dir == "err":
            view = memoryview(e.data)
            while view:
                view = view[os.write(2, view):]
        elif e.kind == "eof" and e.dir == "s2c":
            sys.stdout.flush()
            os.close(1)
            stdout_open = False
        elif e.kind == "exit":
            return int(e.raw.get("code") or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
