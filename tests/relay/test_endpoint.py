"""The legacy endpoint rewriter: only the endpoint event's data changes, nothing
else is held back, any chunking gives the same output."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.protocol.sse import parse_all
from mcptap.relay.http.endpoint import HOLD_LIMIT, EndpointRewriter

UP = "http://10.0.0.7:9000"


def rw(data: str) -> str | None:
    return "http://127.0.0.1:5555" + data[len(UP):] if data.startswith(UP) else None


def run(chunks, rewrite=rw):
    r = EndpointRewriter(rewrite)
    return b"".join(r.feed(c) for c in chunks) + r.flush(), r


def test_absolute_endpoint_rewritten_rest_untouched():
    stream = b"event: endpoint\ndata: http://10.0.0.7:9000/messages/?session_id=1\n\nevent: message\ndata: {}\n\n"
    out, r = run([stream])
    assert out == stream.replace(b"http://10.0.0.7:9000", b"http://127.0.0.1:5555")
    assert r.rewrites == [(UP + "/messages/?session_id=1", "http://127.0.0.1:5555/messages/?session_id=1")]


def test_relative_endpoint_and_sse_starlette_layout_unchanged():
    stream = b"id: 1\r\nevent: endpoint\r\ndata: /messages/?session_id=9\r\n\r\n"
    out, r = run([stream])
    assert out == stream and r.rewrites == []


def test_crlf_and_field_order_kept_when_rewriting():
    stream = b": hi\r\nid: 7\r\nevent:endpoint\r\ndata:http://10.0.0.7:9000/m\r\nretry: 5\r\n\r\n"
    out, _ = run([stream])
    assert out == b": hi\r\nid: 7\r\nevent:endpoint\r\ndata:http://127.0.0.1:5555/m\r\nretry: 5\r\n\r\n"


def test_only_the_endpoint_block_is_held():
    r = EndpointRewriter(rw)
    # everything up to and including the event line goes out at once
    assert r.feed(b"data: x\n\nevent: endpoint\n") == b"data: x\n\nevent: endpoint\n"
    assert r.feed(b"data: http://10.0.0.7:9000/m\n") == b""          # held until the blank line
    assert r.feed(b"\n") == b"data: http://127.0.0.1:5555/m\n\n"
    assert r.feed(b"data: big streaming line") == b"data: big streaming line"  # not held


def test_oversized_endpoint_block_released_unchanged():
    r = EndpointRewriter(rw)
    big = b"data: " + b"x" * (HOLD_LIMIT + 10)
    out = r.feed(b"event: endpoint\n") + r.feed(big)
    assert out == b"event: endpoint\n" + big and r.gave_up == 1


def test_unfinished_block_released_at_flush():
    out, r = run([b"event: endpoint\ndata: http://10.0.0.7:9000/m\n"])
    assert out == b"event: endpoint\ndata: http://10.0.0.7:9000/m\n" and r.rewrites == []


_parts = st.lists(st.sampled_from([b"event: endpoint", b"event: message", b"data: http://10.0.0.7:9000/p?q=1", b"data: /rel",
                                   b"data: {}", b"id: 3", b": c", b"\n", b"\r", b"\r\n", b"\xef\xbb\xbf", b"x"]), max_size=30).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(stream=_parts, cuts=st.lists(st.integers(0, 400), max_size=10))
def test_chunking_independent_and_identity_without_rewrite(stream, cuts):
    cuts = sorted({c for c in cuts if 0 < c < len(stream)})
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)], strict=False)]
    whole, _ = run([stream])
    assert run(chunks)[0] == whole
    assert run(chunks, rewrite=lambda d: None)[0] == stream
    assert whole.replace(b"http://127.0.0.1:5555", b"http://10.0.0.7:9000") == stream


class _ByteLoopRewriter(EndpointRewriter):
    """The original byte-at-a-time ``feed``: the reference the regex scan must match."""

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        start = i = 0
        n = len(data)
        while i < n:
            b = data[i]
            if self._after_cr:
                self._after_cr = False
                if b == 0x0A:
                    i += 1
                    continue
            if b == 0x0A or b == 0x0D:
                self._after_cr = b == 0x0D
                i += 1
                if self._holding:
                    if not self._line_has_bytes:
                        self._held += data[start:i]
                        start = i
                        out += self._release(rewrite=True)
                    elif len(self._held) + (i - start) > HOLD_LIMIT:
                        self._held += data[start:i]
                        start = i
                        self.gave_up += 1
                        out += self._release(rewrite=False)
                elif self._line_has_bytes and self._is_endpoint_line(bytes(self._line)):
                    out += data[start:i]
                    start = i
                    self._holding = True
                    self._held.clear()
                self._first = False
                self._line.clear()
                self._line_has_bytes = False
                continue
            self._line_has_bytes = True
            if len(self._line) < 64:
                self._line.append(b)
            i += 1
        if self._holding:
            self._held += data[start:]
            if len(self._held) > HOLD_LIMIT:
                self.gave_up += 1
                out += self._release(rewrite=False)
        else:
            out += data[start:]
        return bytes(out)


_lines = st.lists(st.sampled_from([b"event: endpoint", b"event:endpoint", b"\xef\xbb\xbfevent: endpoint", b"event: endpoint ",
                                   b"data: http://10.0.0.7:9000/p?q=1", b"data:http://10.0.0.7:9000/x", b"data: /rel", b"data: {}",
                                   b"id: 3", b": c", b"\n", b"\r", b"\r\n", b"x", b"e" * 70, b"data: " + b"y" * 3000]),
                  max_size=40).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(stream=_lines, cuts=st.lists(st.integers(0, 40000), max_size=12))
def test_same_output_and_state_as_the_byte_loop(stream, cuts):
    cuts = sorted({c for c in cuts if 0 < c < len(stream)})
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)], strict=False)]
    new, ref = EndpointRewriter(rw), _ByteLoopRewriter(rw)
    for c in chunks:
        assert new.feed(c) == ref.feed(c)
        assert (bytes(new._line), new._after_cr, new._first, new._holding, new._line_has_bytes) == \
               (bytes(ref._line), ref._after_cr, ref._first, ref._holding, ref._line_has_bytes)
    assert new.flush() == ref.flush()
    assert (new.rewrites, new.gave_up) == (ref.rewrites, ref.gave_up)


def test_hold_limit_same_as_the_byte_loop():
    stream = b"event: endpoint\n" + (b"data: " + b"z" * 1000 + b"\n") * 70 + b"\n" + b"event: endpoint\ndata: http://10.0.0.7:9000/m\n\n"
    for size in (1, 7, 4096, 65536, len(stream)):
        chunks = [stream[k:k + size] for k in range(0, len(stream), size)]
        new, ref = EndpointRewriter(rw), _ByteLoopRewriter(rw)
        assert b"".join(new.feed(c) for c in chunks) + new.flush() == b"".join(ref.feed(c) for c in chunks) + ref.flush()
        assert (new.rewrites, new.gave_up) == (ref.rewrites, ref.gave_up) and new.gave_up == 1


def test_chunks_without_endpoint_skip_the_line_loop(monkeypatch):
    """At a line start, a chunk without "endpoint" is forwarded as it is after
    one search (the lines of an ordinary SSE stream are not classified), and a
    line or CR LF cut at its end is picked up by the next chunk."""
    seen: list[bytes] = []
    real = EndpointRewriter._is_endpoint_line

    def spy(self, line: bytes) -> bool:
        seen.append(line)
        return real(self, line)

    monkeypatch.setattr(EndpointRewriter, "_is_endpoint_line", spy)
    r = EndpointRewriter(rw)
    assert r.feed(b": open\n\n") == b": open\n\n"         # the first line goes through the loop (BOM)
    seen.clear()
    ev = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\n'
    for _ in range(3):
        assert r.feed(ev) is ev
    assert seen == []
    # an endpoint event cut in its event line, then after a CR cut from its LF: still rewritten
    out = r.feed(b"event: endp") + r.feed(b"oint\r") + r.feed(b"\ndata: http://10.0.0.7:9000/m\r\n\r\n")
    assert out == b"event: endpoint\r\ndata: http://127.0.0.1:5555/m\r\n\r\n"
    assert r.rewrites == [(UP + "/m", "http://127.0.0.1:5555/m")]


@settings(max_examples=300, deadline=None)
@given(stream=_parts, cuts=st.lists(st.integers(0, 400), max_size=10))
def test_every_block_is_forwarded_once_its_blank_line_has_arrived(stream, cuts):
    """The rewriter holds an endpoint block only until its blank line: a CR
    ends it at once, the LF of a CR LF is not waited for (as the recorder's
    parser, protocol/sse.py, reads it)."""
    dues = [e.end - 1 if e.raw.endswith(b"\r\n") else e.end for e in parse_all(stream) if e.terminated]
    cuts = sorted({c for c in cuts if 0 < c < len(stream)})
    r, fed, out = EndpointRewriter(rw), 0, b""
    for c in [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)], strict=False)]:
        out += r.feed(c)
        fed += len(c)
        sent = len(out.replace(b"http://127.0.0.1:5555", UP.encode()))
        assert all(d <= sent for d in dues if d <= fed)
