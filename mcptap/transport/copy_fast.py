"""The round trip's path through the relay's copy queue (``copy_queue.CopyQueue``).

Every chunk a pump moves goes through ``take`` (its place in the copy stream,
before it is written on) and ``put`` (its copy, once it was). For a round trip's
two small chunks that Python was most of the relay process's own CPU: 15,300
instructions a chunk for ``take`` and ``put`` alone (callgrind), the relay 37,400 a
round trip against a plain threaded relay's 12,700 (28,100 with this module and
``forward._reader``). Here both are closures over the queue's lock, deques and pipe,
with the common case inline: the lock taken by its bound ``acquire``/``release``
(``with`` builds two bound methods a time), the copy joined to its header and
sent by one ``write`` while it is small (``os.writev`` of a list of two buffers
costs more than copying a small message), everything else handed to the queue's
own ``put`` (lock held) unchanged. The stream's bytes and order are the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcptap.transport.copy_stream import CHUNK, HEADER

if TYPE_CHECKING:
    from mcptap.transport.copy_queue import CopyQueue

#: a copy up to this size is joined to its header and sent by one ``write``; a
#: bigger one goes by ``writev`` uncopied (the queue's own ``put``)
JOIN_BELOW = 16 << 10
SENT = 1                       # a ticket's state (as ``copy_queue``'s; OPEN is 0)


def ends(q: CopyQueue, direction: int) -> tuple[Callable[[memoryview], list[Any]], Callable[[list[Any], int], bool]]:
    """``(take, put)`` for one pump of ``direction``: ``take(view)`` is
    ``q.take(direction, view)``, ``put(ticket, sent)`` is ``q.put(ticket, sent)``
    (same stream, same results), with the round trip's case inline."""
    lock = q._lock
    acquire, release = lock.acquire, lock.release
    streamed, clock, opened, waiting = q._streamed, q._clock, q._open, q._q
    append, popleft = opened.append, opened.popleft
    pack, write, fd = HEADER.pack, os.write, q._fd
    slow = q._put

    def take(data: memoryview) -> list[Any]:
        n = len(data)
        acquire()
        try:
            offset = streamed[direction]
            streamed[direction] = offset + n
            ticket = [0, direction, clock(), offset, n, data]
            append(ticket)
        finally:
            release()
        return ticket

    def put(ticket: list[Any], sent: int, join_below: int = JOIN_BELOW) -> bool:
        acquire()
        try:
            state, _, t, offset, n, data = ticket
            if state or sent != n or n > join_below or waiting or q._broken or opened[0] is not ticket or type(data) is not memoryview:
                return slow(ticket, sent)
            popleft()
            ticket[0] = SENT
            ticket[5] = None
            item = pack(CHUNK, direction, 0, t, n) + data
            try:
                done = write(fd, item)
            except BlockingIOError:
                done = 0
            except OSError:
                q._broken = True                             # mcptap is gone: forwarding goes on
                return False
            if done < len(item):
                q._rest(direction, t, offset, data, item, done)
            return False
        finally:
            release()

    return take, put
