"""A host's SIGINT at any moment of `mcptap record` ends it the same clean way:
exit status 130 (128 + SIGINT, as when the server dies of it) and at most the
one line ``mcptap: interrupted`` on stderr. While mcptap imported (its first
~60 ms) it was a full KeyboardInterrupt traceback on the host's stderr; a
little later ``mcptap: interrupted`` came after a stray blank line (click's,
meant for a terminal's ``^C`` echo).

The interpreter runs with ``-S`` (site-packages given in PYTHONPATH): a SIGINT
during its own start-up (``site``, ``runpy``), before any code of mcptap's, is
out of our reach, and an editable install's finder makes that window tens of ms
long; the interpreter's own report of one (no frame of mcptap's) is skipped.

The sweep of fixed delays after the start may land wholly in that start-up on a
loaded machine (at load 6 mcptap's code began after the last one, 290 ms: no
signal reached it, and the test failed). Where the signal must reach mcptap's own
code it is sent on a condition instead: once ``-X importtime`` says (on stderr)
that a module of mcptap's has been imported, i.e. mcptap's handler is in place.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from mcptap.cli.interrupt import interrupted_line

ROOT = Path(__file__).resolve().parents[2]
DELAYS_MS = range(0, 300, 10)
#: what the interpreter itself says of a SIGINT in its start-up, before any code of mcptap's runs
#: (runpy's own traceback too, while it loads mcptap/__main__.py)
STARTUP = ("Could not import runpy module", "Fatal Python error: ")
#: a frame of mcptap's other than loading the entry module (mcptap/__main__.py's import of
#: mcptap/cli/entry.py, that file's own imports): from there on Ctrl-C is covered
OUR_FRAME = re.compile(r'File "[^"]*mcptap/(?!__main__\.py"|cli/entry\.py", line \d+, in <module>)')


#: modules whose import ends while mcptap's SIGINT cover is in place (``cli/entry.py``: its
#: own handler, then main's); the tap starts well after either
ANCHORS = ("mcptap.cli.interrupt", "mcptap.cli.main")


def _record_and_interrupt(tmp_path: Path, delay: float, after_import: str | None = None) -> tuple[int, str]:
    """SIGINT to `mcptap record -- cat` ``delay`` s after its start, or (``after_import``) as
    soon as its stderr says that module was imported. Returns (status, stderr without
    ``-X importtime``'s lines)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]))
    out = tmp_path / "cap.jsonl"
    if out.exists():
        out.unlink()
    trace = ["-X", "importtime"] if after_import else []
    p = subprocess.Popen([sys.executable, "-S", *trace, "-m", "mcptap", "record", "-q", "-o", str(out), "--", "/bin/cat"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    head = b""
    try:
        if after_import:
            assert p.stderr is not None
            while not head.endswith(f"| {after_import}\n".encode()):
                line = p.stderr.readline()          # hang guard: communicate's timeout below, p.kill
                assert line, (after_import, head.decode(errors="replace")[-2000:])
                head += line
        else:
            time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)       # stdin stays open: only the signal ends it
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = (head + err).decode(errors="replace")
    return p.returncode, "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("import time:"))


def _assert_clean(rc: int, err: str, where: object) -> None:
    """One SIGINT that reached mcptap's code: at most the one line, 130 with it."""
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, (where, err)
    assert err in ("", "mcptap: interrupted\n"), (where, err)
    if err:
        assert rc == 130, (where, rc, err)
    # "": the tap had started and forwarded it to the server, whose status mcptap exits with
    # (tests/transport/test_early_signals.py)


def test_sigint_at_any_moment_is_one_line_and_130(tmp_path: Path) -> None:
    for ms in DELAYS_MS:
        rc, err = _record_and_interrupt(tmp_path, ms / 1000)
        if not OUR_FRAME.search(err) and ("Traceback" in err or err.startswith(STARTUP)):
            continue                            # the interpreter's start-up: no frame of ours yet
        if rc == -signal.SIGINT:                # before the interpreter installed its handler: killed by it
            assert err == "", (ms, err)
            continue
        _assert_clean(rc, err, ms)


def test_sigint_while_mcptap_starts_is_the_line_and_130(tmp_path: Path) -> None:
    """Sent once mcptap's handler is in place (a module of its imported), before the tap:
    the line and 130, however slow the machine."""
    seen = set()
    for module in ANCHORS:
        for _ in range(3):
            rc, err = _record_and_interrupt(tmp_path, 0, after_import=module)
            _assert_clean(rc, err, module)
            seen.add(err)
    assert "mcptap: interrupted\n" in seen       # some signal came before the tap started


def test_the_line_has_no_blank_line_before_it_off_a_terminal() -> None:
    assert interrupted_line() == "mcptap: interrupted\n" or os.isatty(2)


def test_the_console_script_enters_where_sigint_is_covered() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'mcptap = "mcptap.cli.entry:run"' in text
