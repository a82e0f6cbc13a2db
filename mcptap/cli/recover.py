"""``mcptap recover CAPTURE``: add to a stdio capture the bytes its tap had set
aside in its spill file when it was killed (SIGKILL, power loss).

While analysis is behind, the stdio relay writes forwarded chunks to
``<capture>.spill`` (``transport/spill.py``, named in the capture's header as
``spill``), truncates it whenever the capture file holds every entry (so it
holds at most what the capture lacks, and later entries) and removes it at the
end. If that file is still
there and the capture has no end record, the bytes it holds that the capture
lacks are appended as ``chunk`` records (exact bytes; ``check``/``show`` frame
them), with a ``gap`` record for each stretch that was only in memory and is
lost. Bytes read after the last spilled chunk that were only in mcptap's
memory leave no trace (the relay sends copies down the pipe again once it has
caught up), so nothing can count them. No end record is written: the capture
stays incomplete, and says so.
The spill file is removed afterwards. Only a file that is one is read and
removed (``_spill_beside``): a regular ``.spill`` file beside the capture,
not the capture itself, holding spill entries and nothing else; the header's
name is a hint (a capture's header may be edited or come from elsewhere).

A capture recorded with ``--redact`` (``header.scrubbed``) gets what it
appends redacted with the rules and key its header names (this user's key
must be that one: else exit 2, nothing written, the spill file left), cut
into whole lines so no secret is split between two chunks; its records'
``original`` (``{offset, bytes}`` in the forwarded stream, where a placeholder
moved them) tells which forwarded bytes the capture already holds.

Any capture (``--redact`` or not) had the secrets of its server's arguments
(placeholders in the header's ``argv``) replaced wherever they reappeared
(``known_secrets.py``, after the scrub rules); their values are not in the capture, so
``recover CAPTURE -- CMD ARGS...`` takes the server's command again: it must
scrub to the header's ``argv`` (the same values and this user's key), and the
appended records get the same replacement (the same ``line_filter``, on
whole lines). Without it, or with another command, nothing is appended (exit 2,
the spill file left): the bytes would put in clear what the live tap hid.

Exit status: 0 (recovered, or nothing to recover); 2 when the capture cannot
be read or written, or its redaction cannot be redone.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import click
import orjson

from mcptap.capture.format import decode_bytes, message_from_record
from mcptap.capture.reader import CaptureStream
from mcptap.cli import options
from mcptap.cli.errors import Fail, say, usage
from mcptap.cli.output import nameless
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name
from mcptap.records import Chunk, Gap
from mcptap.records.end import says_ended
from mcptap.redact.keyed import PLACEHOLDER
from mcptap.redact.original import place_original
from mcptap.transport.spill import SUFFIX, entries, is_spill_file, spill_path

_DIRS = ("c2s", "s2c")


def _spill_beside(capture: str, named: Any) -> tuple[str, str] | None:
    """The spill file of ``capture`` (path, name): the one its header names
    (``named``), or the one ``spill_path`` gives its own name (a capture
    renamed, or a name the header holds as text). Only a regular file that
    ends in ``.spill``, is not the capture and holds spill entries and nothing
    else is taken: ``recover`` removes it, and a capture's header (edited, or
    from someone else) must not make it remove anything else. None (said on
    stderr) when there is none; raises Fail when the file there is not one."""
    where = os.path.dirname(os.path.abspath(capture))
    names = [named] if isinstance(named, str) and named else []
    names.append(os.path.basename(spill_path(capture)))
    refused = None
    for name in dict.fromkeys(names):
        if os.path.basename(name) != name or name in (".", "..") or not name.endswith(SUFFIX):
            refused = refused or (name, "not a spill file name")
            continue
        path = os.path.join(where, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        try:
            why = ("not a regular file" if not stat.S_ISREG(st.st_mode) else "it is the capture itself" if os.path.samefile(path, capture)
                   else None if is_spill_file(path) else "its bytes are not spill entries")
        except OSError as exc:
            why = f"cannot read it: {exc.strerror or exc}"
        if why is None:
            return path, name
        refused = refused or (name, why)
    if refused is not None and os.path.lexists(os.path.join(where, refused[0])):
        raise Fail(f"{escape_name(capture)}: its header names {escape_name(refused[0])}, which is not mcptap's spill file "
                   f"({refused[1]}): left alone, nothing recovered")
    say(f"no {escape_name(names[0])} beside the capture: nothing to recover")
    return None


def _recorded(path: str) -> tuple[dict[str, Any], bool | None, int, int, dict[str, int], dict[str, int]]:
    """(header, has end record (None: one marked ``incomplete``, a transform's copy of
    a capture that had none: ``records.end.says_ended``), last seq, last t_us, where the bytes recorded end per
    direction in the forwarded stream, and in the stream the capture holds). The two differ
    in a scrubbed capture (``record --redact``): a placeholder is not as long as its secret,
    and such a record's ``original`` says where its bytes were forwarded."""
    stream = CaptureStream(path)
    ends = {"c2s": 0, "s2c": 0}
    held = {"c2s": 0, "s2c": 0}
    seq = t = 0
    complete: bool | None = False
    for rec in stream:
        typ = rec["type"]
        seq = max(seq, rec.get("seq") or 0)
        t = max(t, rec.get("t_us") or 0)
        if typ == "end":
            complete = True if says_ended(rec) else None
        elif typ in ("chunk", "message") and rec.get("dir") in ends and (typ == "chunk" or rec.get("session") is None):
            n = len(decode_bytes(rec, "data") or b"") if typ == "chunk" else len(message_from_record(rec).raw)
            held[rec["dir"]] = rec.get("offset", 0) + n
            src = rec.get("original")
            if isinstance(src, dict) and isinstance(src.get("offset"), int) and isinstance(src.get("bytes"), int):
                ends[rec["dir"]] = src["offset"] + src["bytes"]
            else:
                ends[rec["dir"]] = held[rec["dir"]]
        elif typ == "gap" and rec.get("dir") in ends and type(rec.get("bytes")) is int and rec["bytes"] > 0:
            # forwarded, not recorded (``Recorder.lost``): the stream goes on after them, in both
            # streams' terms; else the spill entries after them read as bytes held only in memory
            ends[rec["dir"]] += rec["bytes"]
            held[rec["dir"]] += rec["bytes"]
    return stream.header, complete, seq, t, ends, held


def _scrubbers(capture: str, header: dict[str, Any]) -> list[Any]:
    """For a scrubbed capture (``record --redact``): a Scrubber for each of its passes, made
    with the rules the header names and this user's key, so appended bytes get the
    placeholders its own records have ([] for a capture that is not scrubbed). Raises Fail
    when they cannot be redone (another key, rules that cannot be rebuilt): appending the
    spill file's bytes unscrubbed would put the secrets it holds in clear into a capture
    that says it has none."""
    if not header.get("scrubbed"):
        return []
    from mcptap.redact.keyfile import existing_keyer
    from mcptap.redact.live import live_redactors
    from mcptap.redact.scrub import Scrubber

    redactors, why = live_redactors(header, existing_keyer())
    if redactors is None:
        raise Fail(f"{escape_name(capture)} was recorded with --redact, and the bytes in its spill file cannot be redacted as its "
                   f"records were: {why or 'its scrub passes are unreadable'}; nothing recovered, the spill file is "
                   "left in place")
    return [Scrubber(r) for r in redactors]


def _argv_secrets(capture: str, header: dict[str, Any], server: list[str]) -> Any:
    """For a capture whose server's arguments held secrets
    (placeholders in the header's ``argv``): the ``KnownSecrets`` the live tap replaced,
    from ``server`` (the command given again); None when there are none. Raises Fail when
    ``server`` is missing or does not scrub to the header's ``argv`` (other values, or
    another key): the recovered bytes would hold those secrets in clear."""
    target = header.get("target")
    shown = target.get("argv") if isinstance(target, dict) else None
    if not isinstance(shown, list) or not any(isinstance(a, str) and PLACEHOLDER.search(a) for a in shown):
        return None
    from mcptap.known_secrets import known_secrets
    from mcptap.redact.argv import placeholder, scrub_argv

    if server and scrub_argv(server) == shown:
        return known_secrets(server, shown, placeholder)
    raise Fail(f"{escape_name(capture)}: its server's arguments held secrets, which the tap replaced wherever they reappeared; their "
               "values are not in the capture, so the bytes in its spill file cannot be searched for them "
               + ("(the command given does not scrub to the one in its header: other values, or another redaction key)"
                  if server else "(give the server's command: mcptap recover CAPTURE -- CMD ARGS...)")
               + "; nothing recovered, the spill file is left in place")


class _Appender:
    """The records ``recover`` appends, as encoded lines (``out``). Chunk bytes are cut after
    their last newline (the rest waits for the direction's next entry, or the end), so a
    scrubbed capture's patterns see whole lines, never a secret cut in two by the relay's
    reads; their ``offset`` continues the stream the capture holds (``held``), with
    ``original`` where that is not where they were forwarded (a placeholder's length)."""

    def __init__(self, scrubbers: list[Any], seq: int, held: dict[str, int], known: Any = None) -> None:
        self.scrubbers = scrubbers
        self.known = known            # the server's argv secrets (KnownSecrets), replaced as the live tap's writer does
        self.seq = seq
        self.held = held
        self.out: list[bytes] = []
        self.added = 0
        self._wait: dict[str, tuple[int, int, bytes]] = {}      # dir -> (t_us, source offset, bytes)

    def emit(self, rec: dict[str, Any]) -> None:
        line = orjson.dumps(rec) + b"\n"
        self.out.append(self.known.line(rec, line) if self.known is not None else line)

    def gap(self, t_us: int, why: str, key: str | None = None, lost: int = 0) -> None:
        if key is not None:
            self.flush(key)
            self.held[key] += lost        # forwarded bytes a directed gap counts: offsets count them too
        self.seq += 1
        self.emit(Gap(self.seq, t_us, why, dir=key, bytes=lost).to_json() if key else Gap(self.seq, t_us, why).to_json())

    def add(self, key: str, t_us: int, offset: int, data: bytes) -> None:
        if key in self._wait:
            _, offset, before = self._wait.pop(key)
            data = before + data
        cut = data.rfind(b"\n") + 1 if self.scrubbers or self.known is not None else len(data)
        if cut < len(data):
            self._wait[key] = (t_us, offset + cut, data[cut:])
        if cut:
            self._chunk(key, t_us, offset, data[:cut])

    def flush(self, key: str) -> None:
        if key in self._wait:
            t_us, offset, data = self._wait.pop(key)
            self._chunk(key, t_us, offset, data)

    def finish(self) -> None:
        for key in list(self._wait):
            self.flush(key)

    def _chunk(self, key: str, t_us: int, offset: int, data: bytes) -> None:
        self.seq += 1
        rec = Chunk(self.seq, t_us, key, offset, data).to_json()
        for s in self.scrubbers:
            rec = s.record(rec)
        new = decode_bytes(rec, "data") or b""
        rec["offset"] = self.held[key]
        moved = self.held[key] != offset or len(new) != len(data)
        rec = place_original(rec, {"offset": offset, "bytes": len(data)} if moved else None)
        self.held[key] += len(new)
        self.added += len(data)
        self.emit(rec)


@click.command("recover", epilog=options.example("mcptap recover cap.jsonl"),
               short_help="Add the bytes a killed stdio tap left in its spill file to its capture.")
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False))
@click.argument("server", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
def command(capture: str, server: tuple[str, ...]) -> None:
    """Append to CAPTURE the forwarded bytes its killed tap had set aside in
    its spill file (CAPTURE.spill), as chunk records. When the server's
    arguments held secrets (placeholders in the capture's header), give its
    command again after --: the recovered bytes get the placeholders the tap
    gave them (without it nothing is recovered)."""
    if nameless(capture):
        # the bytes are appended to CAPTURE and its spill file is beside it: a pipe has neither
        # (and opening a FIFO waited for a writer forever)
        usage("CAPTURE gets the recovered bytes and has its spill file beside it: give it as a file, not "
              + ("standard input" if capture == "-" else "a pipe, device or descriptor"))
    try:
        header, complete, seq, t, ends, held = _recorded(capture)
    except (CaptureReadError, OSError) as exc:
        raise Fail(f"cannot read {escape_name(capture)}: {getattr(exc, 'strerror', None) or exc}") from None
    if header.get("transport", "stdio") != "stdio" or "spill" not in header:
        say(f"{escape_name(capture)}: no spill file named in its header (not a stdio capture of this mcptap): nothing to recover")
        return
    found = _spill_beside(capture, header.get("spill"))
    if found is None:
        return
    spill, name = found
    if complete is None:
        # a scrubbed copy names its source's spill file: neither remove it nor add its bytes after this end record
        raise Fail(f"{escape_name(capture)} is a copy of an incomplete capture (its end record says incomplete, as scrub writes it): "
                   f"recover the capture it was made from, then make the copy again; {escape_name(name)} was left as it is")
    if complete:
        os.unlink(spill)
        say(f"{escape_name(capture)} is complete (it has its end record); removed the stale {escape_name(name)}")
        return
    scrubbers = _scrubbers(capture, header)
    known = _argv_secrets(capture, header, list(server))
    # unscrubbed: offsets stay the forwarded stream's (argv secrets replaced at record time keep them)
    app = _Appender(scrubbers, seq, held if scrubbers else dict(ends), known)
    lost = 0
    try:
        with open(capture, "rb") as fp:
            fp.seek(max(0, os.path.getsize(capture) - 1))
            cut = fp.read(1) not in (b"\n", b"")
        if cut:                                   # a record cut by the kill: the gap record after it says so
            app.out.append(b"\n")
            app.gap(t, "mcptap was killed while writing this record")
        for d, t_us, offset, data in entries(spill):
            key = _DIRS[d]
            skip = ends[key] - offset
            if skip >= len(data):
                continue                          # recorded before the kill
            if skip > 0:
                data, offset = data[skip:], ends[key]
            elif skip < 0:                        # was only in memory when mcptap died
                lost += -skip
                app.gap(t_us, "mcptap was killed: forwarded bytes it held in memory were not recorded", key, -skip)
            app.add(key, t_us, offset, data)
            ends[key] = offset + len(data)
        app.finish()
        with open(capture, "ab") as out_fp:
            out_fp.write(b"".join(app.out))
    except OSError as exc:
        raise Fail(f"cannot recover into {escape_name(capture)}: {exc.strerror or exc}") from None
    os.unlink(spill)
    more = f"; {lost} bytes held only in memory are lost (gap records)" if lost else ""
    scrubbed = " (redacted with the rules and key of its header)" if app.scrubbers else ""
    say(f"added {app.added} bytes from {escape_name(name)} to {escape_name(capture)} as chunk records{scrubbed}{more}; "
        "the capture stays incomplete (no end record)")
