"""Memory held by a group of processes that share pages after a fork.

mcptap's taps are two processes (the HTTP relay and its recorder process; the
stdio tap and its relay process), forked after the imports, so most of their
pages are the same physical pages. Summing their RSS counts those twice; PSS
divides a page among *all* its sharers, other programs' too (libc). What the
memory targets mean is what the tap holds in RAM: the number of distinct
physical pages resident in any of its processes. ``resident_union`` counts
exactly that from ``/proc/PID/pagemap`` (page frame numbers need root or
CAP_SYS_ADMIN; without them it returns None and the benches print PSS).

Source: Documentation/admin-guide/mm/pagemap.rst (bit 63 present, bits 0-54 PFN).
"""

from __future__ import annotations

import os
import struct

PAGE = os.sysconf("SC_PAGE_SIZE")
_PRESENT = 1 << 63
_PFN = (1 << 55) - 1


def _pfns(pid: int) -> set[int] | None:
    """Physical frame numbers of every resident page of ``pid``; None when the
    kernel hides them (not root) or the process is gone."""
    out: set[int] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pm:
            for line in maps:
                span, _, rest = line.partition(" ")
                if rest.rstrip().endswith("[vsyscall]"):
                    continue
                lo, hi = (int(x, 16) for x in span.split("-"))
                n = (hi - lo) // PAGE
                data = os.pread(pm.fileno(), n * 8, lo // PAGE * 8)
                for entry in struct.unpack(f"={len(data) // 8}Q", data):
                    if entry & _PRESENT:
                        out.add(entry & _PFN)
    except (OSError, ValueError):
        return None
    if out and out <= {0}:
        return None          # PFNs zeroed: not allowed to see them
    out.discard(0)
    return out


def resident_union(pids: list[int]) -> float | None:
    """MiB of distinct physical pages resident in any of ``pids`` (float), or None
    when page frame numbers are not readable here."""
    seen: set[int] = set()
    for pid in pids:
        frames = _pfns(pid)
        if frames is None:
            return None
        seen |= frames
    return len(seen) * PAGE / (1 << 20)

