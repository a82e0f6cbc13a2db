"""Usage errors as a user meets them in a shell: one ``mcptap: …`` line on
stderr naming the command and where to look, exit status 2, nothing on stdout
(click's own three-line ``Usage:/Try/Error:`` block is not that)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize(("args", "words"), [
    (("show", "--no-such-option"), ["show", "--no-such-option", "mcptap show --help"]),
    (("show", "."), ["show", "is a directory"]),
    (("prune",), ["prune", "--older-than"]),
    (("record",), ["record", "nothing to tap"]),
    (("wrap", "--host", "no-such-host"), ["wrap", "no-such-host"]),
    (("check",), ["check", "CAPTURES"]),
    (("no-such-command",), ["no-such-command"]),
    # click's "Choose from:\n\thar,…" once came out as literal \n\t escapes
    (("export", str(Path(__file__).parents[2] / "captures" / "clean-2025-06-18.jsonl")),
     ["export", "Missing option '-f' / '--format'. Choose from: har, otlp-json, messages"]),
])
def test_usage_error_is_one_line(tmp_path: Path, args: tuple[str, ...], words: list[str]) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mcptap: ")
    for word in words:
        assert word in lines[0]


def test_usage_error_escapes_control_characters(tmp_path: Path) -> None:
    proc = cli("show", "--evil\x1b[2J\u202e", cwd=tmp_path)
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_no_arguments_still_prints_the_help(tmp_path: Path) -> None:
    proc = cli(cwd=tmp_path)
    assert proc.returncode == 2
    assert "Commands:" in proc.stderr + proc.stdout


def test_group_help_has_examples(tmp_path: Path) -> None:
    proc = cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "Examples:\n    mcptap demo\n" in proc.stdout


def test_diff_of_stdin_with_itself(tmp_path: Path) -> None:
    proc = cli("diff", "-", "-", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "mcptap: diff: A and B cannot both be - (standard input is read once) (see 'mcptap diff --help')\n"


def test_check_of_stdin_twice(tmp_path: Path) -> None:
    proc = cli("check", "-", "-", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "mcptap: check: - (standard input) can be given once (see 'mcptap check --help')\n"


CAPTURE = str(Path(__file__).resolve().parents[2] / "captures" / "faulty-server.jsonl")


@pytest.mark.parametrize(("args", "flag", "fmt"), [
    (("show", CAPTURE, "--format", "json", "--oneline"), "--oneline", "json"),
    (("show", CAPTURE, "--format", "mermaid", "--oneline"), "--oneline", "mermaid"),
    (("show", CAPTURE, "--no-summary", "--format", "json"), "--no-summary", "json"),
    (("show", CAPTURE, "--format", "json", "--color"), "--color", "json"),
    (("check", CAPTURE, "--format", "sarif", "--color"), "--color", "sarif"),
    (("check", CAPTURE, "--format", "json", "--color"), "--color", "json"),
    (("diff", CAPTURE, CAPTURE, "--format", "json", "--color"), "--color", "json"),
    (("replay", CAPTURE, "--format", "json", "--color", "--url", "http://127.0.0.1:9/mcp"), "--color", "json"),
])
def test_text_only_option_with_another_format_is_a_usage_error(tmp_path: Path, args: tuple[str, ...], flag: str,
                                                               fmt: str) -> None:
    # accepted silently before: the JSON came out as if the option had not been given
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"mcptap: {args[0]}: {flag} applies to --format text only, not --format {fmt}")


@pytest.mark.parametrize("args", [
    ("show", CAPTURE, "--format", "json", "--no-color"),
    ("check", CAPTURE, "--format", "json", "--no-color", "--fail-on", "never"),
    ("show", CAPTURE, "--oneline", "--no-summary", "--color"),
])
def test_options_the_format_already_satisfies_are_accepted(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout


CAPTURE = str(Path(__file__).resolve().parents[2] / "captures" / "clean-2025-06-18.jsonl")


@pytest.mark.parametrize("args", [
    ("report", CAPTURE), ("export", "-f", "messages", CAPTURE), ("scrub", CAPTURE), ("check", CAPTURE),
    ("replay", CAPTURE, "--url", "http://127.0.0.1:9/mcp"), ("serve", CAPTURE), ("demo",), ("record", "--upstream", "http://127.0.0.1:9/mcp"),
], ids=lambda a: a[0])
@pytest.mark.parametrize("where", ["last", "first"])
def test_an_empty_output_path_is_a_usage_error(tmp_path: Path, args: tuple[str, ...], where: str) -> None:
    """``-o ''`` (an unset variable: ``-o "$OUT"``): report wrote CAPTURE.html, replay,
    record and demo a capture in the capture directory, without a word; check, scrub
    and serve said "cannot write : No such file or directory"."""
    import os

    argv = [args[0], "-o", "", *args[1:]] if where == "first" else [*args, "--output="]
    data = tmp_path / "captures"
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *argv], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "MCPTAP_DIR": str(data)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"mcptap: {args[0]}: Invalid value for '-o' / '--output': the path is empty (see 'mcptap {args[0]} --help')"]
    assert list(tmp_path.iterdir()) == []               # nothing written, here or in the capture directory


@pytest.mark.parametrize(("args", "name"), [
    (("show", ""), "'[CAPTURE]'"), (("check", CAPTURE, ""), "'CAPTURES...'"), (("diff", CAPTURE, ""), "'B'"),
    (("export", "-f", "messages", ""), "'CAPTURE'"), (("record", "--dir", "", "--", "true"), "'--dir'"), (("ls", "--dir", ""), "'--dir'"),
    (("prune", "--dir", "", "--older-than", "0d"), "'--dir'"), (("scrub", CAPTURE, "-o", "x.jsonl", "--redact-rules", ""), "'--redact-rules'"),
    (("wrap", "--config", "", "--dry-run"), "'--config'"), (("wrap", "--host", "cursor", "--dir", "", "--dry-run"), "'--dir'"),
])
def test_an_empty_path_argument_is_a_usage_error(tmp_path: Path, args: tuple[str, ...], name: str) -> None:
    """Any path the user gives, not only ``-o``: ``show ''`` showed the newest
    capture in the capture directory, ``record --dir ''`` wrote into the working
    directory, ``ls``/``prune --dir ''`` looked at it (prune deletes there)."""
    import os
    import shutil

    data = tmp_path / "captures"
    data.mkdir()
    shutil.copy(CAPTURE, data / "20260115T093000Z-server-1.jsonl")
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], cwd=data, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "MCPTAP_DIR": str(data)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"mcptap: {args[0]}: Invalid value for {name}: the path is empty (see 'mcptap {args[0]} --help')"]
    assert [p.name for p in data.iterdir()] == ["20260115T093000Z-server-1.jsonl"]


def _value_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every command that takes a value."""
    import click

    from mcptap.cli.main import mcptap

    out = []
    for name, cmd in sorted(mcptap.commands.items()):
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.is_flag and not p.count and p.opts:
                out.append((name, max(p.opts, key=len)))
    return out


def test_every_value_option_is_seen() -> None:
    got = _value_options()
    assert {("show", "--format"), ("record", "--name"), ("report", "--output"), ("serve", "--listen")} <= set(got), got


@pytest.mark.parametrize(("command", "option"), _value_options())
def test_a_missing_option_value_points_at_the_command_help(command: str, option: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``mcptap show -o`` / ``mcptap record --name``: click raises "requires an
    argument" with no context; the hint named ``mcptap --help``, where the
    option is not described."""
    from mcptap.cli.main import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([command, option])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"mcptap: {command}: ") and option in err and err.rstrip().endswith(f"(see 'mcptap {command} --help')"), err


def _usage_cases() -> list[tuple[tuple[str, ...], str]]:
    """(argv, words) for the usage errors a command finds itself, after click's
    parsing: each once printed its own ``mcptap: …`` line without the command."""
    cap = str(Path(__file__).resolve().parents[2] / "captures" / "clean-2025-06-18.jsonl")
    url = "http://127.0.0.1:9/mcp"
    return [
        (("replay", cap), "give exactly one server"),
        (("replay", cap, "--url", url, "--", "true"), "give exactly one server"),
        (("replay", cap, "--url", "ftp://x"), "expected an http:// or https:// URL"),
        (("replay", cap, "--url", url, "--cacert", cap), "--cacert needs an https:// --url"),
        (("replay", cap, "--url", "https://127.0.0.1:9/mcp", "--cacert", cap), "cannot load --cacert"),
        (("serve", cap, "--extend"), "--extend needs the real server"),
        (("serve", "-"), "give the capture as a file"),
        (("serve", cap, "--listen", "0.0.0.0:0"), "non-loopback address 0.0.0.0"),
        (("serve", cap, "--listen", "bogus.invalid:1"), "does not resolve"),
        (("scrub", "-n", "--redact-pattern", "([", cap), "--redact-pattern: bad regular expression"),
        (("report", "--redact-pattern", "([", cap, "-o", "r.html"), "--redact-pattern: bad regular expression"),
        (("record", "--redact", "--redact-pattern", "([", "-o", "r.jsonl", "--", "true"), "--redact-pattern: bad regular expression"),
        (("scrub", "-n", "--redact-rules", cap, cap), "not valid TOML"),
        (("wrap", "--config", "cfg.json", "--mcptap", "/etc/passwd", "--dry-run"), "--mcptap /etc/passwd: not an executable file"),
        (("wrap", "--config", "cfg.json", "--mcptap", "/no/such/mcptap", "--dry-run"), "--mcptap /no/such/mcptap: no such file"),
        (("scrub", "in.jsonl", "-o", "in.jsonl"), "the output is the input"),
        (("record", "--otlp-endpoint", "notaurl", "-o", "r.jsonl", "--", "true"), "expected an http:// or https:// URL"),
        (("record", "--otlp-endpoint", "http://127.0.0.1:9", "--otlp-header", "novalue", "-o", "r.jsonl", "--", "true"), "expected NAME=VALUE"),
        (("record", "--upstream", "ftp://x", "-o", "r.jsonl"), "must start with http:// or https://"),
        (("record", "--upstream", url, "--listen", "0.0.0.0:0", "-o", "r.jsonl"), "non-loopback address 0.0.0.0"),
        (("record", "--upstream", url, "--listen", "bogus.invalid:1", "-o", "r.jsonl"), "does not resolve"),
        (("record", "--upstream", "https://127.0.0.1:9/mcp", "--cacert", cap, "-o", "r.jsonl"), "cannot load --cacert"),
    ]


@pytest.mark.parametrize(("args", "words"), _usage_cases(), ids=lambda a: " ".join(a[:1]) if isinstance(a, tuple) else a[:30])
def test_a_usage_error_a_command_finds_itself_names_the_command(tmp_path: Path, args: tuple[str, ...], words: str) -> None:
    """README: a usage error is one ``mcptap: COMMAND: …`` line, exit status 2:
    also those a command's own code finds (one server, not two; a regex that
    does not compile), not only click's."""
    import shutil

    (tmp_path / "cfg.json").write_text('{"mcpServers": {"a": {"command": "x"}}}')
    shutil.copy(Path(__file__).resolve().parents[2] / "captures" / "clean-2025-06-18.jsonl", tmp_path / "in.jsonl")
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"mcptap: {args[0]}: ") and lines[0].endswith(f"(see 'mcptap {args[0]} --help')"), lines[0]
    assert words in lines[0], lines[0]


def test_a_bad_filter_names_the_command_and_keeps_its_caret(tmp_path: Path) -> None:
    proc = cli("show", "-f", "(~m", CAPTURE, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["mcptap: show: bad filter at column 4: ~m needs an argument (see 'mcptap show --help')",
                                        "  (~m", "     ^"]


def test_no_command_words_a_usage_error_by_hand() -> None:
    """The whole kind, in the source: a message naming an option (``--x``/``-o``)
    or asking to ``give`` one, printed by hand (say/_say, Fail) instead of raised
    through ``errors.usage`` / click.UsageError, lacks the ``COMMAND:`` and the
    help hint. record_http.py and entry.py are checked by their own tests."""
    import re

    cli_dir = Path(__file__).resolve().parents[2] / "mcptap" / "cli"
    by_hand = re.compile(r"""(?:\b_?say|\bFail)\(f?["'](?:give |--[a-z]|-o )""")
    found = [f"{p.name}:{n}" for p in sorted(cli_dir.glob("*.py")) if p.name not in ("record_http.py", "entry.py")
             for n, line in enumerate(p.read_text().splitlines(), 1) if by_hand.search(line)]
    # --keep's cleanup after a capture was written is a failure to report, not a usage error
    assert [f for f in found if not f.startswith("capture_dir.py:")] == []


def _float_options() -> list[tuple[tuple[str, ...], str]]:
    import click

    from mcptap.cli.main import mcptap

    out = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))
        for p in cmd.params:
            if isinstance(p, click.Option) and isinstance(p.type, click.FloatRange):
                out.append((path, p.opts[-1]))

    walk(mcptap, ())
    return out


FLOAT_OPTIONS = _float_options()


def test_every_float_option_is_found() -> None:
    assert (("diff",), "--latency-threshold") in FLOAT_OPTIONS and len(FLOAT_OPTIONS) >= 9


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize(("command", "option"), FLOAT_OPTIONS)
def test_float_options_refuse_non_finite(command: tuple[str, ...], option: str, value: str, tmp_path: Path) -> None:
    """click.FloatRange lets nan through (it fails every comparison, its bounds too):
    ``diff --latency-threshold nan`` silently compared no latency, a nan timeout never expired."""
    from click.testing import CliRunner

    from mcptap.cli.main import mcptap

    # converted first (given first); nothing else given: a command that got this far ends in its own usage error
    r = CliRunner(env={"MCPTAP_DIR": str(tmp_path)}).invoke(mcptap, [*command, f"{option}={value}"])
    assert r.exit_code == 2 and "is not a finite number" in r.output, r.output


def _all_commands() -> list[tuple[str, ...]]:
    import click

    from mcptap.cli.main import mcptap

    out: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))
        else:
            out.append(path)
    walk(mcptap, ())
    return out


@pytest.mark.parametrize("command", _all_commands(), ids=" ".join)
def test_every_command_help_ends_with_examples(command: tuple[str, ...]) -> None:
    """README: "Every command's --help ends with examples" (show's ended with the filter table)."""
    from click.testing import CliRunner

    from mcptap.cli.main import mcptap

    r = CliRunner().invoke(mcptap, [*command, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output
    head, sep, tail = r.output.rstrip("\n").rpartition("Examples:\n")
    assert sep, r.output
    lines = tail.split("\n")
    assert lines and all(line.startswith("    ") and "mcptap" in line for line in lines), tail
