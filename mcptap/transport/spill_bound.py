"""How large a relay's spill file (``spill.SpillFile``) may grow.

The spill file takes what the recorder cannot take yet, so the forward path
never waits. Its size used to be bounded only by the free disk: a flooding or
hostile peer (an HTTP SSE flood wrote ~1.8 GB in 3 s to /tmp) could fill the
user's disk, and a full disk hurts everything else on the machine, the
capture included. Past the bound the relay drops its copies instead (the
forward path never waits or slows); the capture says how many bytes in a
``gap`` record (``check``: ``capture.gap``), and recording resumes once the
recorder caught up and the file was rewound.

The bound of one fill of the file (from empty, or from its rewind to the
start) is ``allowance``: the smaller of ``LIMIT`` (``MCPTAP_SPILL_LIMIT``
overrides it) and half the space free on the file's filesystem beyond
``FREE_RESERVE``, measured when that fill starts.
"""

from __future__ import annotations

import os

#: the largest a spill file may grow (bytes). 1 GiB holds ~4,000 of the relay's 256 KiB
#: flood reads, tens of seconds of a recorder behind a fast peer (it records ~20-100 MB/s);
#: a backlog beyond that is a peer flooding faster than any capture can follow, and keeping
#: all of it would only move the loss to the disk.
LIMIT = 1 << 30
#: free space on the spill file's filesystem the spill file never takes (bytes): the
#: capture, the server and everything else on the machine need room to go on writing.
FREE_RESERVE = 256 << 20
#: of the free space beyond FREE_RESERVE, the spill file takes at most this fraction
#: (a half): every spilled byte is written again into the capture when the recorder reads
#: it back (a chunk record, a little larger), so the other half is the capture's.
FREE_SHARE = 2
#: environment variable overriding ``LIMIT`` (bytes; a K, M or G suffix multiplies by 1024^n)
ENV_LIMIT = "MCPTAP_SPILL_LIMIT"
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """``text`` as a size in bytes: digits, then optionally K, M or G
    (1024-based, either case, an optional ``iB``/``B``). Raises ValueError."""
    s = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = _UNITS.get(s[-1:], 1)
    if mult != 1:
        s = s[:-1]
    if not s.isdigit():
        raise ValueError(f"{ENV_LIMIT}={text!r}: not a size in bytes (e.g. 1073741824, 512M, 1G)")
    return int(s) * mult


def configured_limit(strict: bool = True) -> int:
    """``LIMIT``, or ``MCPTAP_SPILL_LIMIT`` where set. A bad value raises
    ValueError (``strict``: the CLI's check before the tap starts) or gives ``LIMIT``."""
    text = os.environ.get(ENV_LIMIT)
    if text is None or not text.strip():
        return LIMIT
    try:
        return parse_size(text)
    except ValueError:
        if strict:
            raise
        return LIMIT


def free_bytes(fd: int, where: str | None) -> int | None:
    """Bytes an unprivileged process may still write on the filesystem of the
    open file ``fd`` (or of the directory ``where`` when ``fd`` < 0); None
    where that cannot be told."""
    try:
        st = os.fstatvfs(fd) if fd >= 0 else os.statvfs(where or ".")
    except (OSError, ValueError):
        return None
    return st.f_bavail * st.f_frsize


def allowance(limit: int, free: int | None) -> int:
    """The bytes one fill of a spill file may hold: ``limit``, and no more
    than a ``FREE_SHARE`` share of ``free`` beyond ``FREE_RESERVE`` (0 when
    less is free: then the relay drops its copies at once rather than take
    the last of the disk). ``free`` None (unknown): ``limit``."""
    if free is None:
        return limit
    return max(0, min(limit, (free - FREE_RESERVE) // FREE_SHARE))
