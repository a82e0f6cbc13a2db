"""The re-annotation state of a :class:`~mcptap.check.fullscan.FullScan` as
bytes, for check/fullsplit.py's two processes to compare at the middle (level
3, pure): equal bytes, equal state.

    snapshot(scan) -> bytes | None
"""

from __future__ import annotations

import io
import pickle
from typing import IO, Any

from mcptap.check.fullscan import FullScan
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.lifecycle import SessionState

#: Reannotator fields the halves add up (or that are not state): not compared, merged by split_adopt.adopt
_REC_OWN = frozenset({"annotator", "streams", "stderr_stream", "severities", "codes", "t_us", "on_message"})
#: FullScan fields compared at the middle (the rest are counters, merged, or this process's own)
SCAN_STATE = ("methods", "last_seq", "t_floor", "gap_since_last", "end_seen", "pending", "old_end", "had_end", "order", "truncated",
               "oracle")


class _Snap(pickle.Pickler):
    """Pickles the state for comparison only (``fast``: no memo, so equal strings
    are equal whichever objects hold them): an object met again as a reference to
    the first time, the annotator without its shape check callable, sessions
    without their capability cache (the contracts' compiled validators pickle
    empty on their own: protocol/contracts ``_Schemas``; the schemas are compared)."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.fast = True
        self.met: dict[int, tuple[int, Any]] = {}

    def reducer_override(self, obj: Any) -> Any:
        if type(obj).__module__.startswith("mcptap."):
            met = self.met.get(id(obj))
            if met is not None:
                return _named, ("again", met[0])
            self.met[id(obj)] = (len(self.met), obj)      # (obj: kept alive, its id not reused meanwhile)
        if isinstance(obj, Annotator):
            return _named, ("Annotator", {k: v for k, v in vars(obj).items() if k != "shape_check"})
        if isinstance(obj, SessionState):
            return _named, ("SessionState", {k: getattr(obj, k) for k in obj.__dataclass_fields__ if k != "cap_cache"})
        return NotImplemented


def _named(name: str, state: Any) -> Any:       # (the reduce callable of _Snap: its pickles are never loaded)
    return name, state


def snapshot(scan: FullScan) -> bytes | None:
    """The re-annotation state of ``scan`` as bytes (equal bytes: equal state), or None when it cannot be taken."""
    rec = scan.rec
    state = ({k: v for k, v in vars(rec).items() if k not in _REC_OWN}, rec.annotator, [getattr(scan, k) for k in SCAN_STATE])
    buf = io.BytesIO()
    p = _Snap(buf)
    try:
        p.dump(state)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
        return None
    return buf.getvalue()
