"""Wrap and unwrap the servers of a host configuration (pure).

Wrapping a stdio entry replaces its command and arguments::

    "command": "python", "args": ["server.py"]
 →  "command": "/abs/.venv/bin/mcptap",
    "args": ["record", "--dir", "/abs/captures", "--name", "NAME", "--", "python", "server.py"]

Everything mcptap needs travels in the arguments, because hosts start servers
with a filtered environment; the launcher is an absolute path because hosts do
not share the user's PATH. ``env``, ``cwd``, ``type`` and every other field
stay as they are (the host passes them to mcptap, and mcptap to the server).
With ``http=True`` a URL entry is pointed at a local tap on a port derived
from the server name (the same on every run; the next free one when another
tap of the file has it, and an entry already wrapped keeps its port), and the note for it carries the
one command that starts that tap.

The memo. For each wrapped server the memo keeps the smallest text change
wrapping made (``before`` → ``after``, the differing span of the file) and the
original command/arguments or URL. ``unwrap`` puts ``before`` back where
``after`` is (at exactly one place where the change stays inside this
server's own entry: another scope may hold the same text), so it restores the original
bytes even after the user edited other parts of the file; when ``after`` is
no longer there (the entry itself was edited) it restores the original
command and arguments from the wrapped arguments themselves (or the URL from
the memo), keeping the user's edits. Each record also keeps the SHA-256 of
the entry's original text (``entry_sha256``): ``unwrap`` says an entry is
restored exactly only when the restored entry has that digest. No host documents that it tolerates
unknown fields in an entry (Codex's schema denies them), so the CLI keeps the
memo in a sidecar file beside the configuration, never in the entry. A
record whose server was renamed in the file is found by the entry's content
(mcptap/hosts/memo.py ``claim``); one whose server is gone is stale: wrap
reports it, unwrap (of all servers) drops it.

Wrapping is idempotent: an entry already wrapped the same way is left alone;
one wrapped differently (another ``--dir``) is unwrapped and wrapped again,
keeping the record options the user added to it (mcptap/hosts/tapline.py).
A tap line wrap did not write (no wrap record: wrapped by hand) is never
rewritten by ``wrap``, nor removed by ``unwrap`` unless it has exactly the
shape ``wrap`` writes (then its record was lost).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mcptap.hosts.dialects import Dialect, ServerEntry
from mcptap.hosts.errors import ConfigError
from mcptap.hosts.memo import check_memo, claim, empty_memo, launchers, record, splice_at, stale, usable
from mcptap.hosts.tapline import WrapSpec, is_tap_of, matches, parse_tap_line, pick_port, tap_command, tap_port, tap_port_of, tap_url, untappable, wrapped_argv
from mcptap.hosts.tapline import parse_wrapped as parse_wrapped

__all__ = ["Note", "check_memo", "empty_memo", "Outcome", "WrapSpec", "parse_wrapped", "tap_port", "tap_url", "text_change", "unwrap", "wrap", "wrapped_argv"]

@dataclass(frozen=True)
class Note:
    """What happened to one server: ``action`` is ``wrapped``, ``rewrapped``,
    ``unchanged``, ``skipped``, ``restored`` (exact: the entry's digest
    verified), ``restored-args`` (the original command and args or URL back,
    the rest of the entry as it is now), ``not-wrapped``, ``left`` (runs
    ``mcptap record`` but wrap did not write it: the user's own tap, never
    rewritten or removed), ``refused`` (an entry of the wrong shape, such as
    args that are not strings, or a URL no tap can stand in front of: untouched), ``failed`` (still wrapped: the original is lost
    with the wrap record), ``stale`` (wrap: a record of a server no longer in
    the file) or ``dropped`` (unwrap: such a record removed); ``detail``
    a human sentence; ``command`` a command the user must run (--http)."""

    name: str
    action: str
    detail: str = ""
    command: tuple[str, ...] | None = None


@dataclass
class Outcome:
    """The new text, the new memo (a JSON-able dict) and one note per server."""

    text: str
    memo: dict[str, Any]
    notes: list[Note] = field(default_factory=list)
    #: server name -> the digest its exactly restored entry must have (checked once at the end)
    verify: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(n.action in ("wrapped", "rewrapped", "restored", "restored-args") for n in self.notes)


# -- the memo's text change ------------------------------------------------------------


def text_change(old: str, new: str) -> tuple[str, str]:
    """(before, after): the differing middle of ``old`` and ``new``, widened
    until ``after`` occurs exactly once in ``new``."""
    n = min(len(old), len(new))
    p = _same_run(old, new, n, lambda i, k: old[i:i + k] == new[i:i + k])
    s = _same_run(old, new, n - p, lambda i, k: old[len(old) - i - k:len(old) - i] == new[len(new) - i - k:len(new) - i])
    while True:
        before, after = old[p:len(old) - s], new[p:len(new) - s]
        if after and new.count(after) == 1:
            return before, after
        if p == 0 and s == 0:
            return before, after
        p, s = max(p - 16, 0), max(s - 16, 0)


def _same_run(old: str, new: str, limit: int, same: Callable[[int, int], bool]) -> int:
    """How many characters (at most ``limit``) match, from one end, where
    ``same(i, k)`` compares ``k`` characters ``i`` from that end: block by
    block (C comparisons; a 36 MB file is compared at once), then halving."""
    i, k = 0, 1 << 16
    while k:
        if i + k <= limit and same(i, k):
            i += k
        else:
            k >>= 1
    return i


# -- wrap / unwrap ------------------------------------------------------------------------


def _select(entries: dict[str, ServerEntry], names: Iterable[str]) -> list[ServerEntry]:
    wanted = list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in entries]
    if missing:
        have = ", ".join(entries) or "none"
        raise ConfigError(f"no server named {missing[0]!r} in this configuration (servers: {have})")
    return [entries[n] for n in wanted] if wanted else list(entries.values())


def wrap(dialect: Dialect, text: str, memo: dict[str, Any] | None, spec: WrapSpec, names: Iterable[str] = ()) -> Outcome:
    """Wrap the named servers (default: all) of ``text``. Raises ConfigError
    for a name not in the configuration or a malformed entry. Wrapping all
    of them also reports the stale records (servers no longer in the file)."""
    out = Outcome(text, _copy(memo))
    wanted = list(names)
    entries = dialect.servers(text)
    selected = _select(entries, wanted)
    originals = _digests(dialect, text)         # each entry's own text stays as it is until wrapped
    # the ports of the taps already in this file stay theirs; a new tap gets a port none of them has
    taken = {port for e in entries.values() if (port := tap_port_of(e.url)) is not None}
    renamed: dict[str, str] = {}
    for entry in selected:
        if (old := claim(dialect, out.text, out.memo, entry, entries)) is not None:
            renamed[entry.name] = old
        _wrap_one(dialect, out, entry, spec, originals, taken)
    if not wanted:
        out.notes += [Note(n, "stale", "no server of that name in this file any more (renamed or removed?); "
                                       "`mcptap unwrap` drops it") for n in stale(dialect, out.memo, entries)]
    out.notes = [_carried(n, renamed.get(n.name)) for n in out.notes]
    return out


def unwrap(dialect: Dialect, text: str, memo: dict[str, Any] | None, names: Iterable[str] = (),
           backup: str | None = None) -> Outcome:
    """Undo ``wrap`` for the named servers (default: all; then the stale
    records, of servers no longer in the file, are dropped). ``backup``: the
    text of the configuration before mcptap first changed it, if known: a
    local tap URL without its record counts as wrapped only when the backup
    holds another URL for that entry."""
    out = Outcome(text, _copy(memo))
    urls = _urls(dialect, backup)
    wanted = list(names)
    entries = dialect.servers(text)
    renamed: dict[str, str] = {}
    for entry in _select(entries, wanted):
        if (old := claim(dialect, out.text, out.memo, entry, entries)) is not None:
            renamed[entry.name] = old
        out.notes.append(_unwrap_one(dialect, out, entry, urls.get(entry.name)))
    if out.verify:
        now = _digests(dialect, out.text)
        out.notes = [_verified(n, out.verify[n.name], now.get(n.name)) if n.name in out.verify else n for n in out.notes]
        out.verify = {}
    if not wanted:
        for n, key in stale(dialect, out.memo, entries).items():
            del out.memo["servers"][key]
            out.notes.append(Note(n, "dropped", "no server of that name in this file any more (renamed or removed?)"))
    out.notes = [_carried(n, renamed.get(n.name)) for n in out.notes]
    return out


def _carried(note: Note, old: str | None) -> Note:
    """``note``, saying the entry carried the wrap record of server ``old`` (its key was renamed)."""
    if old is None:
        return note
    said = f"it carried the wrap record of server {old!r} (renamed since)"
    return Note(note.name, note.action, f"{note.detail}; {said}" if note.detail else said, note.command)


def _verified(note: Note, want: str, got: str | None) -> Note:
    if got == want:
        return Note(note.name, "restored", "original entry restored exactly (SHA-256 verified)")
    return Note(note.name, "restored-args", "original command and args put back; the entry was edited after wrapping "
                                            "and differs from the original (the edits are kept)")


def _urls(dialect: Dialect, text: str | None) -> dict[str, str]:
    """The URL of each URL entry of ``text`` (none when it is None or does not parse)."""
    try:
        entries = dialect.servers(text) if text is not None else {}
    except ConfigError:
        return {}
    return {name: e.url for name, e in entries.items() if e.kind == "url" and e.url is not None}


def _copy(memo: dict[str, Any] | None) -> dict[str, Any]:
    base = empty_memo() if memo is None else check_memo(memo)
    return {**base, "servers": dict(base["servers"])}


def _wrap_one(dialect: Dialect, out: Outcome, entry: ServerEntry, spec: WrapSpec, originals: dict[str, str],
              taken: set[int]) -> None:
    name = entry.name
    key = dialect.memo_key(name)
    records = out.memo["servers"]
    if entry.kind == "other":
        out.notes.append(Note(name, "skipped", "neither a command nor a URL given as a string (nothing mcptap can start)"))
        return
    if entry.kind == "bad":
        out.notes.append(Note(name, "refused", f"{entry.problem}; left as it is"))
        return
    if entry.kind == "url":
        rec = records.get(key)
        if not usable(rec) or rec.get("kind") != "url":
            rec = None                  # a record edited by hand is treated as absent, as unwrap does
        wrapped = rec is not None and is_tap_of(entry.url, rec["original"]["url"])
        if not spec.http:
            out.notes.append(Note(name, "unchanged" if wrapped else "skipped",
                                  "URL entry points at its tap" if wrapped else "a URL entry (--http wraps it through a local tap)"))
            return
        upstream = rec["original"]["url"] if wrapped and rec else entry.url
        assert upstream is not None
        if wrapped:
            port = tap_port_of(entry.url)
            assert port is not None
            out.notes.append(Note(name, "unchanged", "already points at its tap; start the tap with:",
                                  tap_command(spec, name, upstream, port)))
            return
        if (why := untappable(upstream, dialect.substitutes)) is not None:
            out.notes.append(Note(name, "refused", why))
            return
        port = pick_port(name, taken)
        taken.add(port)
        cmd = tap_command(spec, name, upstream, port)
        new = dialect.set_url(out.text, name, tap_url(name, upstream, port))
        before, after = text_change(out.text, new)
        records[key] = {"kind": "url", "before": before, "after": after,
                         "original": {"url": upstream, "key": entry.url_key}, "entry_sha256": originals[name]}
        out.text = new
        out.notes.append(Note(name, "wrapped", f"now {tap_url(name, upstream, port)}; start the tap with:", cmd))
        return
    assert entry.command is not None
    args = list(entry.args or ())
    action = "wrapped"
    rec = record(records, key, "stdio")
    line = parse_tap_line(entry.command, args, launchers(spec.launcher, rec))
    extras: list[str] = []
    if line is not None:
        if rec is None:
            # no record: the user's own tap line (README "Wrap a stdio server by hand") or one whose
            # record is lost; rewriting it would drop the user's options and make unwrap remove it
            if line.as_wrap_writes(name):
                out.notes.append(Note(name, "left", "it is wrapped as mcptap wrap writes it, but its wrap record is "
                                                    "missing (sidecar lost?); `mcptap unwrap` removes that tap, "
                                                    "then wrap again"))
            else:
                out.notes.append(Note(name, "left", "it already runs `mcptap record` and has no wrap record "
                                                    "(wrapped by hand?)"))
            return
        if matches(line, spec, name):
            out.notes.append(Note(name, "unchanged", "already wrapped"))
            return
        extras = line.extras()                      # options the user added to the wrapped line stay
        _unwrap_one(dialect, out, entry)
        out.verify.pop(name, None)
        originals = _digests(dialect, out.text)     # the entry as unwrapping gave it back
        action = "rewrapped"
        entry = dialect.servers(out.text)[name]
        assert entry.command is not None
        args = list(entry.args or ())
    assert entry.command is not None
    command, wargs = wrapped_argv(spec, name, entry.command, args, extras)
    new = dialect.set_stdio(out.text, name, command, wargs)
    before, after = text_change(out.text, new)
    records[key] = {"kind": "stdio", "before": before, "after": after,
                     "original": {"command": entry.command, "args": None if entry.args is None else list(entry.args)},
                     "launcher": list(spec.launcher), "entry_sha256": originals[name]}
    out.text = new
    out.notes.append(Note(name, action, f"records into {spec.directory}"))


def _digests(dialect: Dialect, text: str) -> dict[str, str]:
    """SHA-256 (hex) of each server entry's text in ``text``, by name."""
    return {name: hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest() for name, t in dialect.entry_texts(text).items()}


def _splice_back(dialect: Dialect, out: Outcome, name: str, before: str, after: str) -> bool:
    """Put ``before`` back where ``after`` is (``memo.splice_at``); True if done."""
    at = splice_at(dialect, out.text, name, before, after)
    if at is None:
        return False
    out.text = out.text[:at] + before + out.text[at + len(after):]
    return True


def _unwrap_one(dialect: Dialect, out: Outcome, entry: ServerEntry, was_url: str | None = None) -> Note:
    """``was_url``: the entry's URL in the backup (before mcptap changed the file)."""
    name = entry.name
    key = dialect.memo_key(name)
    if entry.kind == "bad":
        return Note(name, "refused", f"{entry.problem}; left as it is")
    rec = out.memo["servers"].get(key)
    damaged = key in out.memo["servers"] and not usable(rec)
    if damaged:
        rec = None
    if rec is not None and _splice_back(dialect, out, name, rec["before"], rec["after"]):
        del out.memo["servers"][key]
        want = rec.get("entry_sha256")
        if not isinstance(want, str):
            return Note(name, "restored", "the text wrapping changed is put back (not verified: the wrap record, "
                                         "written by an older mcptap, has no digest of the entry)")
        out.verify[name] = want
        return Note(name, "restored")
    if entry.kind == "stdio":
        assert entry.command is not None
        stdio_rec = rec if rec is not None and rec.get("kind") == "stdio" else None
        line = parse_tap_line(entry.command, entry.args or (), launchers(None, stdio_rec))
        if line is None:
            out.memo["servers"].pop(key, None)
            return Note(name, "not-wrapped")
        if stdio_rec is None and not line.as_wrap_writes(name):
            # wrap did not write this line (no record, and not its shape): the user's own tap
            if damaged:
                out.memo["servers"].pop(key, None)
            return Note(name, "left", "it runs `mcptap record`, but not as mcptap wrap writes it, and has "
                                      "no wrap record (wrapped by hand?)")
        out.text = dialect.set_stdio(out.text, name, line.command, line.args)
        out.memo["servers"].pop(key, None)
        why = ("the entry was edited after wrapping" if rec is not None else
               "its wrap record in the sidecar is damaged" if damaged else "no wrap record in the sidecar")
        return Note(name, "restored-args", f"command and args restored from the wrapped arguments ({why}); the rest of the entry is as it is now")
    if entry.kind == "url" and rec is not None and rec.get("kind") == "url":
        upstream = rec["original"]["url"]
        if is_tap_of(entry.url, upstream):
            out.text = dialect.set_url(out.text, name, upstream)
            del out.memo["servers"][key]
            return Note(name, "restored-args", "URL restored (the entry was edited after wrapping)")
        del out.memo["servers"][key]
        return Note(name, "not-wrapped", "the URL no longer points at its tap; left as it is")
    if entry.kind == "url" and tap_port_of(entry.url) is not None:
        # a loopback URL on a tap port is any local server's, unless a damaged record or the backup
        # (another URL there) shows mcptap pointed it at its tap
        if damaged or (was_url is not None and was_url != entry.url):
            out.memo["servers"].pop(key, None)
            why = "is damaged" if damaged else "is missing"
            return Note(name, "failed", f"still points at its local tap: the original URL was only in the wrap record, which {why}; "
                                        "set it back by hand (the backup file beside the configuration holds it)")
        return Note(name, "not-wrapped", "a local URL, and nothing shows mcptap wrap pointed it there (no wrap record)")
    if damaged:
        out.memo["servers"].pop(key, None)
    return Note(name, "not-wrapped")
