"""Click options shared by several commands (one definition, one help text),
in the manner of pip-tools' ``scripts/options.py``."""

from __future__ import annotations

import math
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
    option and argument of the CLI has this type.

    ``no_dash``: why ``-`` cannot mean standard output for this output path
    (e.g. stdout carries the server's messages): ``-`` is then a usage error
    giving that reason, instead of a file named ``-`` written without a word
    (``replay -o -`` wrote one, then failed reading it back as stdin). An
    output path without it takes ``-`` as stdout (``allow_dash``); an input
    path reads ``-`` as stdin.

    A directory (``file_okay=False``, or ``directory``: ``ls``/``prune --dir``, which say
    themselves that a file is no directory) never takes ``-``: a usage error, instead of a
    directory named ``-`` created (``record --dir -``) or looked for; ``./-`` names one."""

    def __init__(self, *args: Any, no_dash: str | None = None, directory: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.no_dash = no_dash
        self.directory = directory or not self.file_okay

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("the path is empty", param, ctx)
        if self.directory and value in ("-", b"-"):
            self.fail("- (standard input or output) is no directory; give a directory (./- for one named so)", param, ctx)
        if self.no_dash is not None and value in ("-", b"-"):
            self.fail(f"- (standard output) cannot be used here: {self.no_dash}; give a file", param, ctx)
        return super().convert(value, param, ctx)


class Finite(click.FloatRange):
    """``click.FloatRange`` that refuses ``nan`` and ``±inf`` (a usage error,
    exit 2): FloatRange lets NaN through (it fails every comparison, its bounds
    included), and a NaN threshold, timeout or speed silently disabled what it
    sets (``diff --latency-threshold nan`` compared no latency; a NaN timeout
    never expired). Every float option of the CLI has this type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        got = super().convert(value, param, ctx)
        if isinstance(got, float) and not math.isfinite(got):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return got


def reannotation(f: F) -> F:
    """``--no-shapes`` and ``--full``."""
    return no_shapes(full(f))


def _ignore_paths(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    # a path that is no path was taken apart as far as it went and matched nothing, silently
    from mcptap.compare.mask import parse_ignore

    for text in value:
        try:
            parse_ignore(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def ignore(help: str) -> Callable[[F], F]:
    """``--ignore PATH`` (repeatable; diff, replay, serve), with the command's own help. A path
    of the wrong syntax (docs/replay-diff.md) is a usage error naming it."""
    return click.option("--ignore", "ignore", multiple=True, metavar="PATH", help=help, callback=_ignore_paths)


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


def _takes_value(opt: click.Option) -> bool:
    return not (opt.is_flag or opt.count)


class TrailingCommand(click.Command):
    """A command whose last argument is a server command line (``CMD ARGS…``,
    after ``leading`` positional arguments of its own, e.g. replay's CAPTURE).

    Options up to the command are this command's and parsed strictly: a
    mistyped one is a usage error with click's "Did you mean" (it once ran as
    the server command, ``cannot run '--gracee'``, exit 127). Everything from
    ``--`` or from the first positional token past the ``leading`` ones belongs
    to the server, options included (``npx -y pkg --port 3``): the split is made
    here, with this command's own option table, and handed to click as
    ``OURS -- CMD ARGS…``."""

    leading = 0

    def __init__(self, *args: Any, leading: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.leading = leading

    def _split(self, ctx: click.Context, args: list[str]) -> int | None:
        """Index where the server's part starts (a ``--`` at that index is
        the separator), or None when there is none."""
        opts: dict[str, click.Option] = {}
        for p in self.get_params(ctx):
            if isinstance(p, click.Option):
                for name in (*p.opts, *p.secondary_opts):
                    opts[name] = p
        positional = 0
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                return i
            if arg.startswith("--"):
                opt = opts.get(arg.partition("=")[0])
                if opt is not None and "=" not in arg and _takes_value(opt):
                    i += opt.nargs              # its value(s), whatever they look like
            elif arg.startswith("-") and len(arg) > 1:
                for k, ch in enumerate(arg[1:], 1):
                    opt = opts.get("-" + ch)
                    if opt is None:
                        break                   # unknown: click reports it
                    if _takes_value(opt):
                        if k == len(arg) - 1:
                            i += opt.nargs      # -o FILE (else -oFILE: the rest is the value)
                        break
            else:
                if positional == self.leading:
                    return i
                positional += 1
            i += 1
        return None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        at = self._split(ctx, args)
        if at is not None:
            args = [*args[:at], "--", *args[at + (args[at] == "--"):]]
        return super().parse_args(ctx, args)
