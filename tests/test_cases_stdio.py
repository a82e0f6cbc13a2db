"""Every stdio case in ../shared/cases (B01 B02 B03 B05 B06 B07 B09 B10 B11 B12 B24):
its events are fed through the Recorder exactly as the stdio transport does, the
capture is read back, and each expected finding (and each "(no finding)") is
checked at the wire event where it must appear, with the expected pairing.
Byte-identical relay through the real process is in tests/transport/test_cases_relay.py.
"""

from __future__ import annotations

import bisect
from typing import Any

import pytest

from casefiles import CASES, Wire, as_stdio, wires
from mcptap.capture.format import message_from_record
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder

# B09 and B10 are HTTP transcripts; their JSON-RPC faults are transport-neutral,
# so the same payloads are also checked over stdio.
STDIO = wires("stdio") + [as_stdio(w) for w in wires("http") if w.case in ("B09", "B10")]
pytestmark = pytest.mark.skipif(not STDIO, reason=f"handed cases not found at {CASES}")


def record_wire(w: Wire, path) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """Feed the wire through a Recorder; return (records, wire seq -> records)."""
    now = {"t": 0}
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["case", w.case]}, clock=lambda: now["t"], started="2026-01-01T00:00:00.000000Z")
    if w.context:
        phase = w.context.get("phase", "operating")
        rec.assume(phase="initialized" if phase.startswith("initializ") else phase, revision=w.context.get("protocolVersion"))
    owner: dict[int, int] = {}          # record seq -> wire seq (non-message records)
    for e in w.events:
        now["t"] = int(e.t_ms * 1000)
        before = rec.seq
        if e.kind == "bytes" and e.dir in ("c2s", "s2c"):
            rec.stdio_bytes(Direction(e.dir), e.data)
        elif e.kind == "bytes" and e.dir == "err":
            rec.stderr(e.data)
        elif e.kind == "eof" and e.dir in ("c2s", "s2c"):
            rec.stdio_eof(Direction(e.dir))
        elif e.kind == "exit":
            rec.exit(code=e.raw.get("code"), signal=e.raw.get("signal"))
        for s in range(before + 1, rec.seq + 1):
            owner[s] = e.seq
    rec.close()
    cap = read_capture(str(path))
    # message records map to the wire event that delivered their last byte
    ends: dict[str, list[tuple[int, int]]] = {"c2s": [], "s2c": []}
    pos = {"c2s": 0, "s2c": 0}
    for e in w.events:
        if e.kind == "bytes" and e.dir in ends:
            pos[e.dir] += len(e.data)
            ends[e.dir].append((pos[e.dir], e.seq))
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for r in cap.records:
        if r["type"] == "message":
            m = message_from_record(r)
            last = m.offset + len(m.raw) - 1
            offs = [o for o, _ in ends[r["dir"]]]
            wseq = ends[r["dir"]][bisect.bisect_right(offs, last)][1]
        else:
            wseq = owner.get(r.get("seq"))
        if wseq is not None:
            by_seq.setdefault(wseq, []).append(r)
    return cap.records, by_seq


def _codes(recs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for r in recs for f in r.get("findings", ())]


@pytest.mark.parametrize("w", STDIO, ids=lambda w: f"{w.case}-{w.name}")
def test_stdio_case_findings(w: Wire, tmp_path) -> None:
    records, by_seq = record_wire(w, tmp_path / "cap.jsonl")
    for a in w.annotations:
        got = _codes(by_seq.get(a["seq"], []))
        if a["code"] == "(no finding)":
            assert got == [], f"{w.case} seq {a['seq']}: expected no finding, got {got} ({a['why']})"
        else:
            assert (a["code"], a["severity"]) in got, f"{w.case} seq {a['seq']}: expected {a['code']}/{a['severity']}, got {got} ({a['why']})"


@pytest.mark.parametrize("w", STDIO, ids=lambda w: f"{w.case}-{w.name}")
def test_stdio_case_pairs(w: Wire, tmp_path) -> None:
    records, by_seq = record_wire(w, tmp_path / "cap.jsonl")
    end = records[-1]
    assert end["type"] == "end"
    for p in w.pairs:
        reqs = [r for r in by_seq.get(p["req"], []) if r["type"] == "message"]
        assert reqs, f"no message at wire seq {p['req']}"
        req_seqs = {r["seq"] for r in reqs}
        if p["res"] is None:
            pending_ids = [q["id"] for q in end["pending"] if q["seq"] in req_seqs]
            assert p["id"] in pending_ids, f"{w.case}: request id {p['id']!r} should stay unanswered; pending={end['pending']}"
            continue
        res = [r for r in by_seq.get(p["res"], []) if r["type"] == "message"]
        pairs = set()
        for r in res:
            if "pair" in r:
                pairs.add((r["pair"], r.get("id")))
            for m in r.get("members", ()):
                if "pair" in m:
                    pairs.add((m["pair"], m.get("id")))
        assert any(ps in req_seqs for ps, _ in pairs), f"{w.case}: response at wire {p['res']} not paired with wire {p['req']} ({pairs})"


def test_reannotation_reproduces_the_recorded_annotations(tmp_path) -> None:
    """check/show re-annotate from raw bytes: same rules, same findings and pairs."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.reannotate import reannotate

    for w in STDIO:
        path = tmp_path / f"{w.case}-{w.name}.jsonl"
        records, _ = record_wire(w, path)
        stream = CaptureStream(str(path))
        again = list(reannotate(stream.header, stream, shapes=False))
        key = lambda r: (r["seq"], r["type"], r.get("findings"), r.get("pair"), r.get("members"), r.get("phase"))  # noqa: E731
        assert [key(r) for r in again] == [key(r) for r in records], f"{w.case}/{w.name}"


def test_every_stdio_byte_is_in_the_capture(tmp_path) -> None:
    """The capture reproduces each direction's bytes exactly, and the end
    record's SHA-256 matches (B05: 4.5 MiB line, B06: invalid UTF-8, ...)."""
    import hashlib

    for w in STDIO:
        records, _ = record_wire(w, tmp_path / f"{w.case}-{w.name}.jsonl")
        end = records[-1]
        for d in ("c2s", "s2c"):
            raw = b"".join(message_from_record(r).raw for r in records if r["type"] == "message" and r["dir"] == d)
            assert raw == w.stream(d), f"{w.case}/{w.name} {d}"
            assert end[d]["sha256"] == hashlib.sha256(raw).hexdigest()
            assert end[d]["bytes"] == len(raw)


def test_reannotated_end_counts_stderr_like_the_recorded_one(tmp_path) -> None:
    from mcptap.capture.reader import CaptureStream
    from mcptap.reannotate import reannotate

    w = next(w for w in STDIO if w.case == "B24")
    path = tmp_path / "b24.jsonl"
    records, _ = record_wire(w, path)
    stream = CaptureStream(str(path))
    header = dict(stream.header, rules="sha256:other")        # force the full path
    again = list(reannotate(header, stream, shapes=False))
    assert again[-1]["stderr"] == records[-1]["stderr"] and records[-1]["stderr"]["bytes"] == 262182
