"""Live OTLP export while recording (``mcptap record --otlp-endpoint URL``).

Spans are the ones ``mcptap export --format otlp-json`` gives for the finished
capture (``mcptap/export/spans.py``: same names, attributes and ids), sent over
OTLP/HTTP (protobuf) by the OpenTelemetry SDK's ``OTLPSpanExporter`` behind a
``BatchSpanProcessor`` — in a process of its own (``mcptap/otel/child.py``).

Off the relay path, twice over: the recorder calls ``LiveExporter.observe``
after it wrote a message record (the relay already forwarded the bytes), and
``observe`` only appends the message to a queue. A feeder thread reduces each
message to the few fields spans need and pipes it to the export process, whose
SDK work (span objects, protobuf encoding, HTTP) therefore never holds the
relay's GIL — measured in ``scripts/bench_otel.py``: in-process, the SDK's work
added 20 % to the stdio round trip. An unreachable or slow collector costs
spans, never the session: the first failure is one ``mcptap: …`` line on
stderr and a ``note`` record in the capture; at the end a ``note`` gives the
span counts. The SDK's own log output never reaches a terminal.

Needs the ``otel`` extra (``pip install 'mcptap[otel]'``): ``prepare`` checks
for it before anything starts and raises ``OtelUnavailable`` naming that command.
"""

from __future__ import annotations

import importlib
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from mcptap.capture.dumps import dumps
from mcptap.errors import McptapError
from mcptap.escape import escape_controls
from mcptap.export.digest import digest
from mcptap.model import Message
from mcptap.recorder import Recorder
from mcptap.redact import scrub_url
from mcptap.transport.signal_latch import handled

INSTALL_HINT = "pip install 'mcptap[otel]'"
TRACES_PATH = "v1/traces"
#: seconds the final flush may delay the capture's end record, then more
#: seconds it may delay mcptap's exit (hosts kill a server that lingers)
CLOSE_WAIT_S = 1.2
JOIN_S = 2.0
#: messages waiting for the feeder at most (then dropped and reported)
INBOX_MAX = 100_000
#: the feeder's period (s): it batches the pipe writes; it yields the GIL
#: after every YIELD_EVERY digests
FEED_EVERY_S = 0.02
YIELD_EVERY = 8


class OtelUnavailable(McptapError):
    """The OpenTelemetry SDK / OTLP exporter is not installed."""


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for ``endpoint``: a base URL, as
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is (``/v1/traces`` appended), or a URL that
    already ends in ``/v1/traces``. Raises McptapError for a non-http(s) URL."""
    try:
        u = urlsplit(endpoint.strip())
        host = u.hostname
    except ValueError as exc:
        raise McptapError(f"--otlp-endpoint {endpoint!r}: {exc}") from None
    if u.scheme not in ("http", "https") or not host:
        raise McptapError(f"--otlp-endpoint {endpoint!r}: expected an http:// or https:// URL (OTLP/HTTP, e.g. http://127.0.0.1:4318)")
    url = endpoint.strip()
    if u.path.rstrip("/").endswith("/" + TRACES_PATH):
        return url
    # the signal path goes on the path, before a query or fragment
    return urlunsplit(u._replace(path=u.path.rstrip("/") + "/" + TRACES_PATH))


def parse_headers(pairs: Iterable[str]) -> dict[str, str]:
    """``K=V`` strings → dict. Raises McptapError for one without ``=``."""
    out: dict[str, str] = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise McptapError(f"--otlp-header {p!r}: expected NAME=VALUE")
        out[k.strip()] = v.strip()
    return out


def prepare(endpoint: str, header_pairs: Iterable[str] = ()) -> tuple[str, dict[str, str] | None]:
    """Check a live export can start, before anything else does: the URL, the
    ``K=V`` headers and the SDK. Returns (traces URL, headers or None: the SDK
    then reads ``OTEL_EXPORTER_OTLP_HEADERS``). Raises McptapError /
    OtelUnavailable with a one-line message."""
    url = traces_url(endpoint)
    headers = parse_headers(header_pairs) or None
    try:
        for name in ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.sdk.trace.export"):
            importlib.import_module(name)
    except ImportError as exc:
        raise OtelUnavailable(f"--otlp-endpoint needs the OpenTelemetry SDK ({exc.name} is missing): {INSTALL_HINT}") from None
    return url, headers


@contextmanager
def closing_phase(active: bool = True) -> Iterator[list[int]]:
    """Hold off SIGINT, SIGTERM and SIGHUP while the export's notes and the
    capture's end record are written (at most CLOSE_WAIT_S with a slow
    collector): a host that signals mcptap then still gets a complete capture.
    Yields the list the signals received are appended to (then exit promptly)."""
    got: list[int] = []
    if not active or threading.current_thread() is not threading.main_thread():
        yield got
        return
    sigs = handled((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))     # one ignored since start stays so
    old = {s: signal.signal(s, lambda n, _f: got.append(n)) for s in sigs}
    try:
        yield got
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def capture_header(rec: Recorder, target: dict[str, Any]) -> dict[str, Any]:
    """The header record of a live Recorder (spans need its ``started``,
    ``transport``, ``target`` and ``mcptap``)."""
    from mcptap import __version__
    from mcptap.capture.format import FORMAT, VERSION
    from mcptap.records import Header

    return Header(FORMAT, VERSION, __version__, rec.started, rec.transport, target).to_json()


class LiveExporter:
    """Stream a recording's spans to an OTLP/HTTP collector through the
    export process. ``url``: the traces URL (``prepare``); ``headers``: request
    headers or None; ``header``: the capture header (``started``,
    ``transport``, ``target``); ``say``: one line to stderr; ``scrub``: what
    ``record --redact`` does to records, applied to each message digest before
    it leaves (so spans hold the placeholders the capture holds). Raises
    OSError when the export process cannot be started."""

    def __init__(self, url: str, headers: dict[str, str] | None, header: dict[str, Any],
                 say: Callable[[str], None], timeout: float = 5.0,
                 scrub: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.url = url
        #: the URL as messages and the capture show it: user info and secret-like query values as placeholders
        self.shown_url = scrub_url(url)
        self.say = say
        self._scrub = scrub
        # own session: a Ctrl-C meant for the tap must not cut the final flush short
        self.proc = subprocess.Popen([sys.executable, "-m", "mcptap.otel.child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._pipe = self.proc.stdin
        self._pipe.write(orjson.dumps({"url": url, "headers": headers, "header": header, "timeout": timeout}) + b"\n")
        self._pipe.flush()
        self.failure: str | None = None
        self.summary: dict[str, Any] | None = None
        self._summary_seen = threading.Event()
        self.messages = 0          # messages handed to the export process
        self.dropped = 0           # messages dropped: the queue was full
        self._inbox: deque[Message | dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._stop = False
        self._noted = False
        self.closed = False
        self._rec: Recorder | None = None
        self._feeder = threading.Thread(target=self._feed, name="mcptap-otlp-feed", daemon=True)
        self._reader = threading.Thread(target=self._read, name="mcptap-otlp-read", daemon=True)
        self._feeder.start()
        self._reader.start()

    def attach(self, rec: Recorder) -> None:
        """Subscribe to ``rec`` (a Recorder): its annotated messages feed the
        export, and notes are written into its capture."""
        self._rec = rec
        rec.observers.append(self.observe)
        rec.record_observers.append(self.observe)      # an http/process/stderr record's findings: its own span

    # -- the relay's thread ----------------------------------------------------------------------------
    def observe(self, msg: Message | dict[str, Any]) -> None:
        """One annotated message, or another record (its JSON) that carries
        findings: queued (a deque append), and a failure seen since the last
        call reported. Never raises, never blocks."""
        if self.closed:
            return
        if len(self._inbox) < INBOX_MAX:
            self._inbox.append(msg)
        else:
            self.dropped += 1
            if self.failure is None:
                self.failure = f"more than {INBOX_MAX} messages waiting to be exported, spans dropped"
        if self.failure is not None and not self._noted:
            self._report()

    def _report(self) -> None:
        self._noted = True
        line = f"OTLP export to {self.shown_url} failed ({self.failure}); recording and relaying go on, spans are dropped"
        self.say(escape_controls(line))      # the reason may quote the collector's answer
        if self._rec is not None:
            self._rec.note("otlp", message=line, endpoint=self.shown_url)

    # -- feeder and reader threads ---------------------------------------------------------------------
    def _feed(self) -> None:
        while True:
            self._wake.wait(FEED_EVERY_S)
            stop = self._stop
            self._feed_batch()
            if stop:
                return

    def _feed_batch(self) -> None:
        inbox = self._inbox
        if not inbox:
            return
        chunk: list[bytes] = []
        while inbox:
            try:
                item = inbox.popleft()
                rec = digest(item) if isinstance(item, Message) else item
                if self._scrub is not None:
                    rec = self._scrub(rec)
                chunk.append(dumps(rec) + b"\n")      # a peer's id beyond 64 bits goes exactly (stdlib fallback)
            except Exception as exc:  # noqa: BLE001 - one odd message costs its span only
                self.failure = self.failure or f"span mapping failed: {type(exc).__name__}: {exc}"
            if len(chunk) % YIELD_EVERY == 0:
                # hand the GIL back now and then: the relay waits at most a few
                # digests, never a whole batch (or a 5 ms switch interval)
                time.sleep(0)
        self.messages += len(chunk)
        try:
            self._pipe.write(b"".join(chunk))
            self._pipe.flush()
        except (OSError, ValueError):
            self.failure = self.failure or "the export process ended"
            self._inbox.clear()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        for line in out:
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if ev.get("event") == "failure" and self.failure is None:
                self.failure = str(ev.get("reason") or "export failed")
            elif ev.get("event") == "summary":
                self.summary = ev
                self._summary_seen.set()
        self._summary_seen.set()

    # -- the end ------------------------------------------------------------------------------------------
    def close(self, t_us: int | None = None, wait: float = CLOSE_WAIT_S) -> None:
        """Hand over what is queued, end open spans (unanswered requests) at
        ``t_us``, wait for the final flush at most ``wait`` seconds and write the
        closing note (spans, exported, failed: not taken by the collector or
        given up, dropped_spans: the export queue was full, pending: still being
        sent to a collector that answers). Call before the
        recorder's ``close`` (the end record does not wait on a slow
        collector), then ``join``. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        self._stop = True
        self._wake.set()
        self._feeder.join(wait)
        try:
            self._pipe.write(orjson.dumps({"type": "close", "t_us": t_us}) + b"\n")
            self._pipe.close()
        except (OSError, ValueError):
            self.failure = self.failure or "the export process ended"
        self._summary_seen.wait(wait)
        s = self.summary or {}
        if self.failure is None and not s:
            self.failure = f"no answer from the export process within {wait:g} s (collector slow?)"
        if self.failure is not None and not self._noted:
            self._report()
        if self._rec is not None:
            self._rec.note("otlp", endpoint=self.shown_url, messages=self.messages, dropped_messages=self.dropped,
                           spans=s.get("spans"), exported=s.get("exported"), failed=s.get("failed"),
                           dropped_spans=s.get("dropped"), pending=s.get("pending"))

    def join(self, timeout: float = JOIN_S) -> bool:
        """After the capture is closed: give the export process ``timeout``
        more seconds to hand the last spans over. True when it ended; else it
        is left to finish on its own (its own deadline bounds it, and a signal
        to mcptap's process group does not reach it)."""
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

def start_live_export(otlp: tuple[str, dict[str, str] | None] | None, rec: Recorder, target: dict[str, Any],
                      say: Callable[[str], None], redactor: Any = None) -> LiveExporter | None:
    """Start the live export ``prepare`` validated (None: no export) and
    subscribe it to ``rec``; ``redactor``: ``record --redact``'s, applied to
    what is exported too. A failure to start is reported like an export
    failure (one line, a note) and the session goes on without export."""
    if otlp is None:
        return None
    url, headers = otlp
    scrub = None
    if redactor is not None:
        from mcptap.redact.scrub import Scrubber

        scrub = Scrubber(redactor).record
    try:
        live = LiveExporter(url, headers, capture_header(rec, target), say, scrub=scrub)
    except Exception as exc:  # noqa: BLE001 - never the session
        line = f"OTLP export to {scrub_url(url)} could not start ({type(exc).__name__}: {exc}); recording without it"
        say(line)
        rec.note("otlp", message=line, endpoint=scrub_url(url))
        return None
    live.attach(rec)
    return live
