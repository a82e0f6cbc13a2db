"""Helpers to run real peers in tests: free loopback ports and server
subprocesses that are ready once their port accepts connections."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect_when_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 10) -> socket.socket:
    """A connection to 127.0.0.1:``port`` once it accepts one (blocking; a
    tap started as ``proc``, which fails the test if it dies first)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            assert proc.poll() is None, "the process died before it listened"
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.05)


@asynccontextmanager
async def listening(argv: Sequence[str], port: int, env: dict[str, str] | None = None,
                    timeout: float = 30) -> AsyncIterator[subprocess.Popen[bytes]]:
    """Start ``argv``; yield once 127.0.0.1:``port`` accepts a connection
    (fails if the process dies first); terminate it afterwards."""
    proc = subprocess.Popen(list(argv), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with trio.fail_after(timeout):
            while True:
                try:
                    s = await trio.open_tcp_stream("127.0.0.1", port)
                    await s.aclose()
                    break
                except OSError:
                    assert proc.poll() is None, f"{argv[0]} died at start"
                    await trio.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)
