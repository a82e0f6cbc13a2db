"""Lists of strings that hold secrets by their shape (pure): a command line given as a
list (``{"args": ["--password", "…"]}``, ``["curl", "-u", "admin:…"]``) gets the argv
rules (``argv_rules.scrub_args``, strict: ``-p`` is a password only after ``sshpass``/``login``);
a ``[name, value]`` pair in a list of pairs whose name is a secret key (header tuples:
``[["X-Api-Key", "…"], ["Authorization", "…"]]``) has its value redacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mcptap.redact.argv_rules import Redact, scrub_args

#: an option (``-u``, ``--password``, ``--token=…``, ``-phunter2``)
_OPTION = re.compile(r"--?[A-Za-z][\w.-]*(?:=|$)|-[A-Za-z]\S*$")


def command_line(v: list[Any]) -> bool:
    """True when ``v`` is two or more strings of which one looks like an option."""
    return len(v) >= 2 and all(isinstance(a, str) for a in v) and any(
        len(a) < 256 and _OPTION.match(a) is not None for a in v)


def shaped_list(v: list[Any], in_list: bool, secret_key: Callable[[str], str | None], redact: Redact,
                text: Redact) -> list[Any] | None:
    """``v`` redacted by its shape (module doc), or None when it has none. ``in_list``: ``v`` is
    an element of a list (a pair stands in a list of pairs: ``required: ["password", "name"]``
    in a schema is no pair); ``redact``: a secret's placeholder; ``text``: a string walked."""
    if in_list and len(v) == 2 and isinstance(v[0], str) and len(v[0]) <= 80 and secret_key(v[0]) is not None \
            and not isinstance(v[1], dict | list) and (not isinstance(v[1], str) or secret_key(v[1]) is None):
        value = v[1]
        new = redact(value) if isinstance(value, str) else redact(str(value)) if type(value) in (int, float) else value
        return v if new is value else [v[0], new]
    if command_line(v):
        out = scrub_args(v, redact, text, strict=True)
        return v if out == v else out
    return None
