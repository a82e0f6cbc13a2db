"""The HTTP tap's socket helpers (transport/http_io.py): one send per run of
writes, writes of several tasks never interleave, a closed stream reads as
closed (never as another descriptor)."""

from __future__ import annotations

import pytest
import trio

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
