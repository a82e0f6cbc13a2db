"""Click options shared by several commands (one definition, one help text),
in the manner of pip-tools' ``scripts/options.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: ``--color/--no-color`` (show, check, diff, replay, demo): None means "decide"
#: (see cli/output.py: NO_COLOR, then whether stdout is a terminal).
color = click.option("--color/--no-color", default=None,
                     help="Colour the output [default: when stdout is a terminal and NO_COLOR is unset].")

#: ``--no-shapes`` and ``--full`` (show, check): how much re-annotation to do.
no_shapes = click.option("--no-shapes", is_flag=True, help="Skip the schema shape checks of params and results (faster).")
full = click.option("--full", is_flag=True,
                    help="Re-annotate every message even if the capture was written under this mcptap's rules "
                         "(recorded annotations are otherwise reused; use for hand-edited captures).")


class NonEmptyPath(click.Path):
    """``click.Path`` that refuses an empty name (``-o ''``, ``--dir "$UNSET"``):
    a usage error (exit 2, one line) instead of the command's default (report,
    replay, record and demo wrote their default file without a word, ``show ''``
    showed the newest capture, ``record --dir ''`` wrote into the working
    directory) or a "cannot write : No such file or directory". Every path
    option and argument of the CLI has this type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("the path is empty", param, ctx)
        return super().convert(value, param, ctx)


def reannotation(f: F) -> F:
    """``--no-shapes`` and ``--full``."""
    return no_shapes(full(f))


def ignore(help: str) -> Callable[[F], F]:
    """``--ignore PATH`` (repeatable; diff, replay, serve), with the command's own help."""
    return click.option("--ignore", "ignore", multiple=True, metavar="PATH", help=help)


def example(*lines: str) -> str:
    """A click epilog of example command lines (kept verbatim by click)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def refuse_text_only(ctx: click.Context, fmt: str, *names: str) -> None:
    """Raise ``click.UsageError`` (exit 2, one line) when an option among
    ``names`` (parameter names, e.g. ``"oneline"``, ``"color"``) was given on
    the command line together with a ``--format`` other than ``text``: such an
    option asks for something only the text output does, and ignoring it would
    let the user believe it applied. An option that asks for what the format
    already is (``--no-color``: no escape codes) is accepted."""
    if fmt == "text":
        return
    for name in names:
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params.get(name)
        if name == "color" and not value:
            continue        # --no-color: every other format has no colour anyway
        flag = "--color" if name == "color" else "--" + name.replace("_", "-")
        raise click.UsageError(f"{flag} applies to --format text only, not --format {fmt}", ctx)
