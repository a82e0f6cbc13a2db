"""SHA-256 of forwarded bytes off the relay's thread (for the HTTP tap).

The end record's per-direction digest costs ~0.5 ns a byte (35 ms for a
64 MiB SSE event) on the thread that forwards the next chunk. ``hashlib``
releases the GIL while it hashes more than 2 KiB, so ``BackgroundSha`` hands
large updates to one worker thread of the process and the relay goes on;
small updates (a JSON-RPC round trip) are hashed in place as before, unless
earlier bytes are still queued (order is kept: one FIFO, one worker).
``hexdigest`` waits for the queued updates, so the digest is the one
``hashlib.sha256`` gives for the same bytes in the same order.

At most ``QUEUE_LIMIT`` bytes wait: a further update blocks until the worker
caught up (memory stays bounded if hashing ever falls behind the network).
"""

from __future__ import annotations

import collections
import hashlib
import threading

#: updates of at least this many bytes go to the worker (smaller ones are hashed in place)
OFFLOAD_FROM = 32 << 10
#: bytes queued at most before an update waits for the worker
QUEUE_LIMIT = 16 << 20


class _Worker:
    """One daemon thread hashing queued (sha, bytes) jobs in order."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._jobs: collections.deque[tuple[BackgroundSha, bytes]] = collections.deque()
        self._queued = 0
        self._thread: threading.Thread | None = None

    def submit(self, sha: BackgroundSha, data: bytes) -> None:
        with self._cv:
            while self._queued > QUEUE_LIMIT:
                self._cv.wait()
            self._jobs.append((sha, data))
            self._queued += len(data)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcptap-sha256", daemon=True)
                self._thread.start()
            self._cv.notify_all()

    def wait(self, sha: BackgroundSha) -> None:
        with self._cv:
            while sha.done < sha.submitted:
                self._cv.wait()

    def _run(self) -> None:
        cv, jobs = self._cv, self._jobs
        while True:
            with cv:
                while not jobs:
                    cv.wait()
                sha, data = jobs[0]
            sha.digest_object.update(data)      # without the GIL
            with cv:
                jobs.popleft()
                self._queued -= len(data)
                sha.done += 1
                cv.notify_all()


_WORKER = _Worker()


class BackgroundSha:
    """``hashlib.sha256()`` with ``update``/``hexdigest``, large updates hashed
    on the worker thread (see module doc)."""

    __slots__ = ("digest_object", "submitted", "done")

    def __init__(self) -> None:
        self.digest_object = hashlib.sha256()
        #: jobs handed to the worker (written by the caller's thread only) and finished (by the worker only)
        self.submitted = 0
        self.done = 0

    def update(self, data: bytes) -> None:
        if self.done == self.submitted and len(data) < OFFLOAD_FROM:
            self.digest_object.update(data)
            return
        self.submitted += 1
        _WORKER.submit(self, data)

    def hexdigest(self) -> str:
        if self.done != self.submitted:
            _WORKER.wait(self)
        return self.digest_object.hexdigest()
