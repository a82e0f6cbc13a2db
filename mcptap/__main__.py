"""``python -m mcptap``: the same as the ``mcptap`` command (hosts can run
mcptap by the absolute path of a Python interpreter)."""

from mcptap.cli.entry import run

run()
