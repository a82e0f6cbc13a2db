"""How the twin-connection relay tests feed a wire: in pieces of the drawn lengths."""

from __future__ import annotations


def fed_pieces(wire: bytes, lengths: list[int], eof: bool = False) -> list[bytes]:
    """``wire`` cut into pieces of ``lengths`` (then the rest), then with ``eof`` an empty piece
    (the peer closed: ``receive_data(b"")``). Empty pieces are left out without ``eof``; with it
    they stay, so a close may also come early, before bytes that follow it."""
    pieces, at = [], 0
    for n in lengths:
        pieces.append(wire[at:at + n])
        at += n
    pieces.append(wire[at:])
    return [p for p in pieces if p or eof] + ([b""] if eof else [])
