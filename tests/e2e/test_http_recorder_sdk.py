"""The CLI's HTTP tap records in a process of its own (transport/http_recorder.py);
the capture must be what the in-process observer writes for the same SDK
session: message records, pairing, findings, http records and the end
record's counts (times, session ids, the tap's port and Date headers aside,
and the interleaving of concurrent exchanges, which is up to the peers: the
SDK client sends ``notifications/initialized`` and opens its GET stream at
once, so which of them is exchange 2, on which connection, differs between
runs; exchanges and connections are compared by what they carry, not by
number).

One race is the peers' too: the SDK client closes a POST's SSE response once
it has the answer, before or after the server's last chunk (``0\r\n\r\n``)
reaches it, so such an exchange ends ``complete`` or ``client_closed``, 5
forwarded bytes apart; both paths record either (``RACY``)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.transport.http import HttpTap, HttpTapConfig
from mcptap.transport.http_recorder import Outcome, RecorderLink, start_recorder
from mcptap.transport.http_recorder_child import Hooks, child_main
from sdk_scenario import EXPECTED, drive
from test_http_sdk import check_capture, sdk_server, tapped

pytestmark = pytest.mark.e2e
TIMES = {"t_us", "latency_us", "duration_us", "started"}
SID = re.compile(r"\b[0-9a-f]{32}\b")
RACY = ("complete", "client_closed")


def _norm(v: Any, tap: str) -> Any:
    if isinstance(v, dict):
        return {k: _norm(x, tap) for k, x in v.items() if k not in TIMES and k != "seq"}
    if isinstance(v, list):
        if len(v) == 2 and v[0] == "date" and isinstance(v[1], str):
            return ["date", "DATE"]
        return [_norm(x, tap) for x in v]
    if isinstance(v, str):
        return SID.sub("SID", v.replace(tap, "TAP"))
    return v


def _labels(records: list[dict[str, Any]]) -> tuple[dict[int, Any], dict[int, Any]]:
    """A label for each exchange number by what it carries (method, target,
    its first client message's method and id, then the n-th such exchange)
    and for each connection number (its first exchange's label): the peers'
    concurrency decides the numbers, not what is said."""
    first: dict[int, Any] = {}
    heads: dict[int, tuple[str, str]] = {}
    conn_first: dict[int, int] = {}
    for x in records:
        if x["type"] == "http" and x.get("event") == "request":
            heads[x["exchange"]] = (x["method"], x["target"])
            conn_first.setdefault(x["conn"], x["exchange"])
        elif x["type"] == "message" and x.get("dir") == "c2s" and "transport" in x:
            j = x.get("json")
            first.setdefault(x["transport"]["exchange"], (j.get("method"), j.get("id")) if isinstance(j, dict) else None)
    seen: dict[Any, int] = defaultdict(int)
    exchanges: dict[int, Any] = {}
    for n in sorted(heads):
        what = (*heads[n], first.get(n))
        seen[what] += 1
        exchanges[n] = (*what, seen[what])
    return exchanges, {c: exchanges[e] for c, e in conn_first.items()}


def _by_exchange(path: Path, tap: str) -> tuple[dict[Any, list[Any]], dict[str, Any], dict[str, Any]]:
    """Each exchange's records (and each connection's closes), in order,
    normalized, keyed and numbered by ``_labels``; a response's ``pair`` as
    the request's exchange and id."""
    cap = read_capture(str(path))
    by_seq = {x["seq"]: x for x in cap.records}
    exchanges, conns = _labels(cap.records)
    out: dict[Any, list[Any]] = defaultdict(list)
    closed = 0
    for x in cap.records:
        if x["type"] in ("header", "end"):
            continue
        x = dict(x)
        if "exchange" in x:
            x["exchange"] = exchanges[x["exchange"]]
        if "conn" in x:
            x["conn"] = conns.get(x["conn"], ("no request", x["conn"]))
        if isinstance(x.get("transport"), dict):
            t = x["transport"] = dict(x["transport"])
            for k, table in (("exchange", exchanges), ("conn", conns)):
                if k in t:
                    t[k] = table.get(t[k], ("no request", t[k]))
        if x.get("event") == "end" and x["how"] in RACY:
            closed += x["how"] == "client_closed"
            x["how"] = "|".join(RACY)
            x.pop("detail", None)
        if x.get("event") == "conn_close" and x["side"] == "client":
            x.pop("idle")        # not idle when it cut such an exchange
        if "pair" in x:
            req = by_seq[x["pair"]]
            x["pair"] = (exchanges[req["transport"]["exchange"]], req.get("id"))
        key = ("conn", x["conn"]) if x.get("event") == "conn_close" else x.get("exchange", x.get("transport", {}).get("exchange"))
        out[key].append(_norm(x, tap))
    end = dict(cap.end or {})
    for d in ("c2s", "s2c"):
        end[d] = {k: v for k, v in end[d].items() if k != "sha256"}    # the session ids and dates differ
    end["s2c"]["bytes"] += 5 * closed
    return out, _norm(cap.header, tap), _norm(end, tap)


async def _through_cli(base: str, cap: Path) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.record_http", "--upstream", base + "/mcp", "-o", str(cap)],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = await trio.to_thread.run_sync(proc.stderr.readline)
    url = line.split()[3]
    async with Client(url, mode="legacy") as client:
        got, _ = await drive(client)
    assert got == EXPECTED
    proc.send_signal(signal.SIGINT)
    err = await trio.to_thread.run_sync(proc.stderr.read)
    assert await trio.to_thread.run_sync(proc.wait) == 0
    assert re.fullmatch(r"mcptap: recording to \S+\nmcptap: stopped: \d+ exchange\(s\) on \d+ client connection\(s\)\n", err), err
    return url.split("/mcp")[0].removeprefix("http://")


@pytest.mark.parametrize("mode", [("streamable-http",), ("streamable-http", "--json")], ids=["sse", "json"])
async def test_the_recorder_process_writes_what_the_in_process_observer_writes(mode: tuple[str, ...], tmp_path: Path) -> None:
    inproc, cli = tmp_path / "in.jsonl", tmp_path / "cli.jsonl"
    async with sdk_server(*mode) as base:
        async with tapped(base + "/mcp", inproc) as (url, _):
            async with Client(url, mode="legacy") as client:
                got, _ = await drive(client)
        assert got == EXPECTED
        cli_tap = await _through_cli(base, cli)
    check_capture(cli)
    a, ha, ea = _by_exchange(inproc, url.split("/mcp")[0].removeprefix("http://"))
    b, hb, eb = _by_exchange(cli, cli_tap)
    assert a == b
    assert len(a) > 8 and sum(len(v) for v in a.values()) > 40
    assert "exit_code" not in ea and eb.pop("exit_code") == 0     # the in-process harness closes without one
    assert ea == eb
    assert {k: v for k, v in ha.items() if k != "name"} == {k: v for k, v in hb.items() if k != "name"}


class _Tee:
    """Hands each relay batch to the in-process observer and to the recorder
    process, under one clock that advances per batch: both see the same facts
    at the same times."""

    def __init__(self, observer: HttpObserver, link: RecorderLink, tick: list[int]) -> None:
        self.observer, self.link, self.tick = observer, link, tick

    def handle(self, items: list[Any]) -> None:
        self.tick[0] += 1000
        self.observer.handle(items)
        self.link.handle(items)


@pytest.mark.parametrize("mode", [("streamable-http",), ("streamable-http", "--json")], ids=["sse", "json"])
def test_same_facts_give_the_same_capture_byte_for_byte(mode: tuple[str, ...], tmp_path: Path) -> None:
    """The recorder process's capture of a real SDK session is the in-process
    observer's, byte for byte, when both get the same facts at the same times."""
    tick = [0]
    started = "2026-01-01T00:00:00.000000Z"
    recs = [Recorder(CaptureWriter.open(str(tmp_path / f"{n}.jsonl")), "http", {"url": "u"}, clock=lambda: tick[0], started=started)
            for n in ("in", "proc")]
    proc_rec = recs[1]
    hooks = Hooks(proc_rec, lambda authority: HttpObserver(proc_rec, r.Upstream.parse("http://127.0.0.1:1/mcp"), authority),
                  lambda: None, lambda code, extra: proc_rec.close(exit_code=code, **extra))
    # forked before trio starts, as the CLI does
    link = start_recorder(lambda f, s, spill: child_main(f, s, spill, hooks), lambda: tick[0], print, str(tmp_path))

    async def main() -> None:
        async with sdk_server(*mode) as base, trio.open_nursery() as nursery:
            nursery.start_soon(link.run)
            tap = HttpTap(HttpTapConfig(upstream=base + "/mcp"), None)
            tap.observer_for = lambda authority: _Tee(HttpObserver(recs[0], tap.upstream, authority), link.observer(authority), tick)
            url = await nursery.start(tap.serve)
            async with Client(url, mode="legacy") as client:
                got, _ = await drive(client)
            assert got == EXPECTED
            nursery.cancel_scope.cancel()

    trio.run(main)
    tick[0] += 1000
    recs[0].close(exit_code=0, tap={"x": 1})
    assert link.finish(0, {"tap": {"x": 1}}) == Outcome()
    a, b = (tmp_path / "in.jsonl").read_bytes(), (tmp_path / "proc.jsonl").read_bytes()
    assert a.count(b'"type":"message"') > 15 and a.count(b'"type":"http"') > 30
    assert a == b
