"""A sans-IO HTTP tap for tests: ``HttpRelay`` + ``HttpObserver`` + a real
Recorder writing a capture, driven by bytes (no sockets, no trio)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.relay.http.proxy import HttpRelay

UP = r.Upstream.parse("http://127.0.0.1:9000/mcp")
HOST = b"127.0.0.1:7000"


class SansIoTap:
    """``client(bytes)`` / ``upstream(bytes)`` feed one client connection and its
    upstream; what each side received is in ``to_client`` / ``to_upstream``."""

    def __init__(self, path: Path, record_secrets: bool = False, **relay: Any) -> None:
        self.path = path
        ticks = itertools.count(1000, 1000)
        self.rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "sansio"}, clock=lambda: next(ticks), started="2026-01-01T00:00:00.000000Z")
        self.relay = HttpRelay(UP, listen_authority="127.0.0.1:7000", record_secrets=record_secrets, **relay)
        self.obs = HttpObserver(self.rec, UP, "127.0.0.1:7000", record_secrets=record_secrets)
        self.cid: int | None = None
        self.gen = 0
        self.to_client = bytearray()
        self.to_upstream = bytearray()
        self.items: list[Any] = []

    def _take(self, items: list[Any]) -> list[Any]:
        for i in items:
            if isinstance(i, r.OpenUpstream):
                self.gen = i.gen
            elif isinstance(i, r.SendClient):
                self.to_client += i.data
            elif isinstance(i, r.SendUpstream):
                self.to_upstream += i.data
        self.obs.handle(items)
        self.items += items
        return items

    def client(self, data: bytes) -> list[Any]:
        if self.cid is None:
            self.cid, items = self.relay.client_opened()
            self._take(items)
        return self._take(self.relay.client_data(self.cid, data))

    def upstream(self, data: bytes) -> list[Any]:
        assert self.cid is not None
        return self._take(self.relay.upstream_data(self.cid, self.gen, data))

    def records(self) -> list[dict[str, Any]]:
        self._take(self.relay.shutdown())
        self.rec.close()
        return read_capture(str(self.path)).records


def post(target: bytes, body: bytes, ctype: bytes = b"application/json", extra: bytes = b"") -> bytes:
    return (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nAccept: application/json, text/event-stream\r\n%s"
            b"Content-Length: %d\r\n\r\n%s" % (target, HOST, ctype, extra, len(body), body))


def response(status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> bytes:
    head = b"".join(b"%s: %s\r\n" % (n, v) for n, v in headers)
    return b"HTTP/1.1 %d X\r\n%sContent-Length: %d\r\n\r\n%s" % (status, head, len(body), body)


#: a tools/list request, the one the answers below answer
LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def list_answer(filler: bytes) -> bytes:
    """A tools/list answer (id 1) whose ``result.x`` is ``filler``."""
    return b'{"jsonrpc":"2.0","id":1,"result":{"tools":[],"x":"' + filler + b'"}}'


def gzip_answered(path: Path, body: bytes, ctype: bytes = b"application/json") -> list[dict[str, Any]]:
    """The records of a tap (capture at ``path``) that relayed LIST and its answer:
    ``body`` (gzip bytes) as a chunked ``ctype`` body in 16 KiB chunks."""
    tap = SansIoTap(path)
    tap.client(post(b"/mcp", LIST))
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" % ctype)
    for i in range(0, len(body), 16384):
        tap.upstream(chunk(body[i:i + 16384]))
    tap.upstream(b"0\r\n\r\n")
    return tap.records()


def finding_codes(recs: list[dict[str, Any]]) -> set[str]:
    """The codes of every finding the records carry."""
    return {f["code"] for r in recs for f in r.get("findings") or ()}
