"""The HTTP tap's socket helpers (transport/http_io.py): one send per run of
writes, writes of several tasks never interleave, a closed stream reads as
closed (never as another descriptor)."""

from __future__ import annotations

import socket
from typing import Any
from unittest import mock

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.relay.http import events as r
from mcptap.transport.http import _COMMANDS
from mcptap.transport.http_io import coalesce, receive, send


def test_coalesce_joins_writes_across_facts_up_to_the_next_command():
    items = [r.SendClient(1, b"head"), r.RequestEnded(7, 1), r.SendClient(1, b"body"), r.ResponseEnded(7, 1, "complete"),
             r.SendUpstream(1, 1, b"x"), r.SendClient(1, b"later")]
    assert coalesce(items, 1, b"head", r.SendClient, None, _COMMANDS) == (b"headbody", 3)
    # nothing to join: the same bytes, the same position
    assert coalesce(items, 5, b"x", r.SendUpstream, 1, _COMMANDS) == (b"x", 5)


def test_coalesce_keeps_upstream_generations_apart():
    items = [r.SendUpstream(1, 1, b"a"), r.SendUpstream(1, 1, b"b"), r.SendUpstream(1, 2, b"c")]
    assert coalesce(items, 1, b"a", r.SendUpstream, 1, _COMMANDS) == (b"ab", 2)


def test_coalesce_keeps_a_large_body_apart_from_its_framing():
    body = b"x" * (64 << 10)
    items = [r.SendClient(1, b"10000\r\n"), r.SendClient(1, body), r.SendClient(1, b"\r\n"), r.CloseClient(1)]
    parts, end = coalesce(items, 1, b"10000\r\n", r.SendClient, None, _COMMANDS)
    assert end == 3 and type(parts) is list and parts[1] is body        # for writev: never joined
    # many pieces are joined whatever their size (writev takes at most IOV_MAX of them)
    many = [r.SendClient(1, b"y" * 2048) for _ in range(40)]
    assert coalesce(many, 1, many[0].data, r.SendClient, None, _COMMANDS) == (b"y" * 2048 * 40, 40)


async def test_pieces_partly_taken_by_the_socket_arrive_whole_and_in_order():
    a, b = await _pair()
    lock = trio.Lock()
    pieces = [b"head", bytes(range(256)) * (32 << 10), b"tail"]      # 8 MiB between: a partial writev
    got = bytearray()

    async def reader() -> None:
        while len(got) < sum(map(len, pieces)) + 3:
            await trio.sleep(0.001)
            got.extend(await receive(b))

    async with trio.open_nursery() as n:
        n.start_soon(reader)
        n.start_soon(send, a, lock, pieces)
        await trio.sleep(0.01)
        await send(a, lock, b"end")
    assert bytes(got) == b"".join(pieces) + b"end"
    await a.aclose()
    await b.aclose()


async def _pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    a = await trio.open_tcp_stream("127.0.0.1", port)
    b = await listener.accept()
    await listener.aclose()
    return a, b


async def test_writes_of_two_tasks_never_interleave():
    a, b = await _pair()
    lock = trio.Lock()
    big = bytes(range(256)) * (32 << 10)          # 8 MiB: more than the socket takes at once
    got = bytearray()

    async def reader() -> None:
        while len(got) < len(big) + 5:
            await trio.sleep(0.001)
            got.extend(await receive(b))

    async with trio.open_nursery() as n:
        n.start_soon(reader)
        n.start_soon(send, a, lock, big)
        await trio.sleep(0.01)                    # the big write is in progress, under the lock
        await send(a, lock, b"tail!")
    assert bytes(got) == big + b"tail!"
    await a.aclose()
    await b.aclose()


async def test_closed_stream_reads_as_closed():
    a, b = await _pair()
    await send(a, trio.Lock(), b"hi")
    assert await receive(b) == b"hi"
    await a.aclose()
    assert await receive(b) == b""                # the peer closed
    await b.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await receive(b)                          # we closed it: never a read of a reused descriptor
    with pytest.raises(trio.ClosedResourceError):
        await send(b, trio.Lock(), b"x")


async def test_receive_wakes_with_closed_when_another_task_closes_it():
    a, b = await _pair()
    seen: list[BaseException] = []

    async def waiting() -> None:
        try:
            await receive(b)
        except trio.ClosedResourceError as exc:
            seen.append(exc)

    async with trio.open_nursery() as n:
        n.start_soon(waiting)
        await trio.sleep(0.01)
        await b.aclose()
    assert len(seen) == 1
    await a.aclose()


@pytest.mark.parametrize("wait", [False, True])
async def test_receive_after_a_short_read_waits_before_reading(monkeypatch, wait):
    """``wait=True`` (the caller's last read was short): no read that could
    only fail before the bytes are there; the bytes are read all the same."""
    import mcptap.transport.http_io as hio

    a, b = await _pair()
    reads: list[int] = []
    real_read = hio.os.read

    def counting_read(fd: int, n: int) -> bytes:
        reads.append(fd)
        return real_read(fd, n)

    monkeypatch.setattr(hio.os, "read", counting_read)
    async with trio.open_nursery() as n:
        async def later() -> None:
            await trio.sleep(0.02)
            await send(a, trio.Lock(), b"ping")
        n.start_soon(later)
        assert await receive(b, wait=wait) == b"ping"
    # without the wait first, the empty socket was read once before the bytes came (EAGAIN)
    assert len(reads) == (1 if wait else 2)
    # bytes already there: the wait returns at once
    await send(a, trio.Lock(), b"pong")
    await trio.sleep(0.01)
    assert await receive(b, wait=wait) == b"pong"
    await a.aclose()
    await b.aclose()


def _inq(stream: trio.SocketStream) -> int:
    import fcntl
    import termios

    return int.from_bytes(fcntl.ioctl(stream.socket.fileno(), termios.FIONREAD, bytes(4)), "little")


def _lowat(stream: trio.SocketStream) -> int:
    import socket

    return int(stream.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT))


async def test_read_ahead_takes_a_large_body_in_large_pieces(monkeypatch):
    """Inside a body announced as large, a read waits until BIG_CHUNK bytes are
    there (the socket's low-water mark) instead of taking each segment as it comes."""
    import mcptap.transport.http_io as hio

    monkeypatch.setattr(hio, "LOWAT_WAIT", 30.0)          # only the mark decides here
    a, b = await _pair()
    ra = hio.ReadAhead(b)
    ra.expect(4 * hio.BIG_CHUNK)
    assert ra.lowat == _lowat(b) == hio.BIG_CHUNK
    body = bytes(range(256)) * (4 * hio.BIG_CHUNK // 256)
    sizes: list[int] = []
    async with trio.open_nursery() as n:
        async def writer() -> None:
            for k in range(0, len(body), 8192):           # small segments: without the mark, small reads
                await send(a, trio.Lock(), body[k:k + 8192])
                await trio.sleep(0)
        n.start_soon(writer)
        with trio.fail_after(10):
            got = bytearray()
            while len(got) < len(body):
                data = await ra.receive(hio.CHUNK, False)
                sizes.append(len(data))
                got += data
                ra.expect(len(body) - len(got))
    assert bytes(got) == body
    assert sizes == [hio.BIG_CHUNK] * 4
    assert ra.lowat == _lowat(b) == 1 and not ra.slow
    await a.aclose()
    await b.aclose()


async def test_read_ahead_never_holds_back_a_slow_body_or_the_end_of_the_stream(monkeypatch):
    import mcptap.transport.http_io as hio

    a, b = await _pair()
    ra = hio.ReadAhead(b)
    ra.expect(4 * hio.BIG_CHUNK)
    got: list[bytes] = []
    async with trio.open_nursery() as n:
        async def dribble() -> None:
            for k in range(3):
                await send(a, trio.Lock(), b"%d" % k * 1000)
                await trio.sleep(0.05)                      # far longer than LOWAT_WAIT
        n.start_soon(dribble)
        with trio.fail_after(10):
            while len(got) < 3:
                got.append(await ra.receive(hio.CHUNK, False))
                ra.expect(4 * hio.BIG_CHUNK)                # still announced as large: the mark stays down
    assert got == [b"0" * 1000, b"1" * 1000, b"2" * 1000]
    assert ra.slow and ra.lowat == _lowat(b) == 1
    ra.expect(0)                                            # that body ended: the next large one is read ahead again
    ra.expect(4 * hio.BIG_CHUNK)
    assert ra.lowat == hio.BIG_CHUNK and not ra.slow
    monkeypatch.setattr(hio, "LOWAT_WAIT", 30.0)
    await send(a, trio.Lock(), b"last")
    await a.aclose()                                        # the peer closes below the mark: woken at once
    with trio.fail_after(5):
        assert await ra.receive(hio.CHUNK, False) == b"last"
        assert await ra.receive(hio.CHUNK, False) == b""
    await b.aclose()


@given(sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=4), reads=st.lists(st.integers(2048, 200_000), min_size=1,
       max_size=8), as_bytes=st.booleans())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_write_the_socket_takes_in_part_arrives_whole_without_trio_send_all(sizes, reads, as_bytes):
    """What the socket does not take at once is written as it drains (``wait_writable``
    and ``writev``, no pass through trio's ``send_all``): any pieces, any pace of the
    reader give the bytes ``send_all`` would have sent, and a second task's write
    waits for the first to end (never interleaved)."""
    calls: list[int] = []
    real = trio.SocketStream.send_all

    async def counting(self: trio.SocketStream, data: Any) -> None:
        calls.append(len(data))
        await real(self, data)

    pieces = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    want = b"".join(pieces) + b"tail!"

    async def main() -> bytes:
        a, b = await _pair()
        a.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)       # partial writes
        lock = trio.Lock()
        got = bytearray()

        async def reader() -> None:
            k = 0
            while len(got) < len(want):
                await trio.sleep(0.0005 * (k % 3))
                got.extend(await receive(b, reads[k % len(reads)]))
                k += 1

        done = trio.Event()

        async def first() -> None:
            await send(a, lock, pieces[0] if as_bytes and len(pieces) == 1 else pieces)
            done.set()

        with trio.fail_after(30):
            async with trio.open_nursery() as n:
                n.start_soon(reader)
                n.start_soon(first)
                while not (lock.locked() or done.is_set()):      # the first write began (and waits) or ended
                    await trio.sleep(0)
                await send(a, lock, b"tail!")
        await a.aclose()
        await b.aclose()
        return bytes(got)

    with mock.patch.object(trio.SocketStream, "send_all", counting):
        assert trio.run(main) == want
    # the second write found the lock held (the first still draining) or the socket free:
    # only a write that waits for another task's goes through send_all
    assert sum(calls) <= len(b"tail!")


async def test_read_ahead_reads_at_once_when_the_marks_bytes_are_there(monkeypatch):
    """With the low-water mark up and at least that many bytes queued (the relay is
    behind the upstream), a read takes them without a wait (no cancel scope, no pass
    through the scheduler): the same pieces as after the wait, which would return at once."""
    import mcptap.transport.http_io as hio

    a, b = await _pair()
    b.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    body = bytes(range(256)) * (3 * hio.BIG_CHUNK // 256) + b"end"
    waits: list[int] = []
    real_wait = trio.lowlevel.wait_readable

    async def counting_wait(fd: Any) -> None:
        waits.append(1)
        await real_wait(fd)

    monkeypatch.setattr(hio.trio.lowlevel, "wait_readable", counting_wait)
    ra = hio.ReadAhead(b)
    got: list[bytes] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as n:
            n.start_soon(send, a, trio.Lock(), body)
            while _inq(b) < 2 * hio.BIG_CHUNK:
                await trio.sleep(0.001)
            for _ in range(2):
                ra.expect(len(body) - sum(map(len, got)))
                got.append(await ra.receive(hio.CHUNK, False))
    assert waits == [] and all(len(g) >= hio.BIG_CHUNK for g in got)
    assert b"".join(got) == body[:sum(map(len, got))]
    await a.aclose()
    await b.aclose()


async def test_read_ahead_still_passes_through_the_scheduler_now_and_then(monkeypatch):
    """However long the mark's bytes keep being there, every ``UNWAITED + 1``-th read
    goes through the wait (a scheduler pass): other tasks are not starved."""
    import mcptap.transport.http_io as hio

    a, b = await _pair()
    b.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    waits: list[int] = []
    real_wait = trio.lowlevel.wait_readable

    async def counting_wait(fd: Any) -> None:
        waits.append(1)
        await real_wait(fd)

    monkeypatch.setattr(hio.trio.lowlevel, "wait_readable", counting_wait)
    monkeypatch.setattr(hio, "_queued", lambda fd: 1 << 30)       # always "there" (the reads take what is)
    ra = hio.ReadAhead(b)
    ra.expect(1 << 30)
    await send(a, trio.Lock(), b"x" * (1 << 20))
    with trio.fail_after(10):
        for _ in range(2 * (hio.UNWAITED + 1)):
            got = await ra.receive(hio.CHUNK, False)
            await send(a, trio.Lock(), b"y" * len(got))         # as much there again: the mark's bytes stay queued
    assert len(waits) == 2 and ra.lowat == hio.BIG_CHUNK
    await a.aclose()
    await b.aclose()
