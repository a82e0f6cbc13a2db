"""Only a real interrupt is ``mcptap: interrupted`` with exit status 130: an EOFError (which
click's main turns into its Abort) or a trio exception group of other errors escaping a
command is an internal error (one line naming it, exit status 2), never an "interrupt".
A command that raises is the fault here: no real peer makes mcptap raise on demand."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: a command ``boom`` added to the real group, raising what argv[1] names, then the CLI's own main
SCRIPT = """
import sys, click
from mcptap.cli import main as m
what = sys.argv[1]
@click.command("boom")
def boom():
    raise {
        "eof": lambda: EOFError("cut stream"),
        "group": lambda: ExceptionGroup("in nursery", [EOFError("cut stream")]),
        "mixed": lambda: BaseExceptionGroup("in nursery", [KeyboardInterrupt(), ValueError("bad value")]),
        "ctrl-c": lambda: KeyboardInterrupt(),
        "ctrl-c-group": lambda: BaseExceptionGroup("in nursery", [KeyboardInterrupt(), KeyboardInterrupt()]),
    }[what]()
m.mcptap.add_command(boom, "boom")
m.main(["boom"])
"""


def _run(what: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCPTAP_DEBUG"}
    return subprocess.run([sys.executable, "-c", SCRIPT, what], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(("what", "named"), [("eof", "EOFError: cut stream"), ("group", "EOFError: cut stream"),
                                             ("mixed", "ValueError: bad value")])
def test_an_unexpected_error_is_an_internal_error_not_an_interrupt(what: str, named: str) -> None:
    proc = _run(what)
    assert proc.returncode == 2, proc.stderr
    assert "interrupted" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]                  # one line, no blank line first
    assert proc.stderr.startswith(f"mcptap: internal error: {named} "), proc.stderr


@pytest.mark.parametrize("what", ["ctrl-c", "ctrl-c-group"])
def test_a_real_interrupt_is_still_interrupted_130(what: str) -> None:
    proc = _run(what)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip() == "mcptap: interrupted", proc.stderr


def test_mcptap_debug_shows_the_original_traceback() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, "eof"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MCPTAP_DEBUG": "1"})
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "EOFError: cut stream" in proc.stderr
    assert "interrupted" not in proc.stderr
