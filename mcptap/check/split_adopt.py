"""Taking the second process's half into ``check --full``'s scan (check/fullsplit.py):
``Mark`` keeps what the scan adds up past the middle (counters, groups, digests) as it
was there, ``restore`` puts it back; ``adopt`` then adds what the second process sent
(its re-annotation state, counters and groups, at the middle equal to this one's)."""

from __future__ import annotations

import copy
from typing import Any

from mcptap.capture.integrity import StreamTally
from mcptap.check.fullscan import FullScan
from mcptap.check.merge import merge_groups
from mcptap.check.split_state import SCAN_STATE, snapshot


def _copied(sha: Any) -> Any:
    """A copy of a stream's digest (re-annotation's are hashlib's, which copy)."""
    return sha.copy()


class Mark:
    """What ``scan`` adds up past the middle (counters, groups, digests), as
    it was there: put back (``restore``) before the second process's half is
    added. Its re-annotation state is the second process's then (``_adopt``)."""

    def __init__(self, scan: FullScan, tallies: dict[str, StreamTally]) -> None:
        rec, rep = scan.rec, scan.rep
        self.snap = snapshot(scan)
        self.digests = {name: t.sha.copy() for name, t in tallies.items()}
        self.tallies = tallies
        self.streams = [(s, s.bytes, s.messages, _copied(s.sha)) for s in (*rec.streams.values(), rec.stderr_stream)]
        self.rec = dict(rec.severities), dict(rec.codes)
        self.rep = copy.deepcopy(rep.groups), dict(rep.severities), rep.records, rep.messages, rep.duration_us
        self.scan = scan.n, scan.cut, scan.gaps, {name: list(c) for name, c in scan.counts.items()}

    def restore(self, scan: FullScan) -> None:
        rec, rep = scan.rec, scan.rep
        for name, sha in self.digests.items():
            self.tallies[name].sha = sha
        for s, nbytes, nmsg, sha in self.streams:
            s.bytes, s.messages, s.sha = nbytes, nmsg, sha
        rec.severities.clear()
        rec.severities.update(self.rec[0])
        rec.codes.clear()
        rec.codes.update(self.rec[1])
        rep.groups, rep.severities, rep.records, rep.messages, rep.duration_us = self.rep
        scan.n, scan.cut, scan.gaps, counts = self.scan
        for name, c in counts.items():
            scan.counts[name][:] = c
        for buf in scan.bufs.values():
            buf.clear()
        scan.buffered = 0


def adopt(scan: FullScan, got: dict[str, Any]) -> None:
    """``scan`` (at the middle) as if it had re-annotated the second process's lines."""
    rec, rep = scan.rec, scan.rep
    mine = rec.annotator.shape_check
    state = got["rec"]
    severities, codes = rec.severities, rec.codes
    for s, k in state.pop("severities").items():
        severities[s] += k
    for c, k in state.pop("codes").items():
        codes[c] = codes.get(c, 0) + k
    vars(rec).update(state)
    rec.severities, rec.codes = severities, codes
    rec.annotator.shape_check = mine
    streams = {d.value: s for d, s in rec.streams.items()} | {"stderr": rec.stderr_stream}
    for d, (nbytes, nmsg) in got["streams"].items():
        streams[d].bytes += nbytes
        streams[d].messages += nmsg
    for k, v in zip(SCAN_STATE, got["scan"], strict=True):
        if k != "oracle":
            setattr(scan, k, v)
    merge_groups(rep.groups, rep.severities, [(got["groups"], got["sev"], got["firsts"])], scan.keep, scan.n + scan.cut)
    scan.n += got["n"]
    scan.gaps += got["gaps"]
    for name, (nbytes, nmsg) in got["counts"].items():
        scan.counts[name][0] += nbytes
        scan.counts[name][1] += nmsg
    rep.records += got["records"]
    rep.messages += got["messages"]
    rep.duration_us = max(rep.duration_us, got["duration"])
