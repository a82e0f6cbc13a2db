"""The stdio tap's spill file as a file format (level 1): where it goes beside
a capture (``spill_path``), its entries (``ENTRY`` heads, each followed by its
bytes) and how they are read back (``entries``, ``is_spill_file``): what
``recover``, ``ls`` and ``prune`` need without the relay that writes it
(``transport/spill.py``, which describes the file in full)."""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator

from mcptap.capture.writer import try_flock

ENTRY = struct.Struct("<BqQI")
#: the longest file name, in bytes (Linux file systems)
NAME_MAX = 255
SUFFIX = ".spill"


def spill_path(capture_path: str) -> str:
    """Where the spill file of the capture at ``capture_path`` goes:
    ``<capture>.spill`` beside it. When that name would be longer than a file
    name may be (``NAME_MAX``, 255 bytes), the capture name's first
    characters, ``~``, 12 hex digits of its SHA-256 and ``.spill`` instead
    (the header's ``spill`` names the file: ``recover`` finds either)."""
    where, name = os.path.split(capture_path)
    if len(os.fsencode(name + SUFFIX)) <= NAME_MAX:
        return capture_path + SUFFIX
    tag = "~" + hashlib.sha256(os.fsencode(name)).hexdigest()[:12] + SUFFIX
    room = NAME_MAX - len(tag)
    short = ""
    for ch in name:         # whole characters: the header stores the name as UTF-8 text
        if len(os.fsencode(short + ch)) > room:
            break
        short += ch
    return os.path.join(where, short + tag)


def hold(fd: int) -> None:
    """Mark the spill file open on ``fd`` as in use while it stays open: a
    shared ``flock`` (the relay that writes it and mcptap that reads it back
    each take one), so ``in_use`` says so and ``prune`` never removes it, even
    when its capture was deleted by hand while it records. Never raises."""
    try_flock(fd, exclusive=False)


def in_use(fd: int) -> bool | None:
    """Whether a process ``hold``s the spill file open on ``fd`` (another
    descriptor of it): True, an exclusive lock cannot be taken; False, it
    could (it is then held on ``fd`` until that is closed: nothing starts
    using the file meanwhile); None where locks are not supported."""
    got = try_flock(fd, exclusive=True)
    return None if got is None else not got


def entries(path: str) -> Iterator[tuple[int, int, int, bytes]]:
    """``(direction, t_us, stream offset, data)`` of each whole entry of the
    spill file at ``path``, in the order the relay read them (a cut last
    entry is skipped). Raises OSError if it cannot be read."""
    with open(path, "rb") as fp:
        while True:
            head = fp.read(ENTRY.size)
            if len(head) < ENTRY.size:
                return
            direction, t_us, offset, n = ENTRY.unpack(head)
            data = fp.read(n)
            if len(data) < n or direction > 1:
                return
            yield direction, t_us, offset, data


def is_spill_file(path: str) -> bool:
    """Whether the file at ``path`` holds spill entries and nothing else
    (every entry head whole with a direction of 0 or 1; the last entry's data
    may be cut): what ``recover`` may read and then remove, where a capture's
    header names it. Raises OSError if it cannot be read."""
    size = os.path.getsize(path)
    pos = 0
    with open(path, "rb") as fp:
        while pos < size:
            fp.seek(pos)
            head = fp.read(ENTRY.size)
            if len(head) < ENTRY.size:
                return False
            direction, _t_us, _offset, n = ENTRY.unpack(head)
            if direction > 1:
                return False
            pos += ENTRY.size + n
    return True
