"""`mcptap ls`, `mcptap prune`, `record --dir/--name/--keep`: listing from
header and end record only, status words, no-traffic captures, control
characters, retention that never touches non-captures or live captures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from mcptap.catalog import COMPLETE, RECORDING, TRUNCATED, parse_age, read_info, scan, select_prune

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
#: answers initialize (so the capture has a negotiated revision), ignores the rest
ECHO = ("import sys\nfor line in sys.stdin:\n if 'initialize' in line: print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"
        "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}', flush=True)")
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        b'"clientInfo":{"name":"t","version":"1"}}}\n')


def run(*args: str, input: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MCPTAP, *args], input=input, capture_output=True, timeout=60)


def record(d: Path, *opts: str, input: bytes = b"") -> Path:
    p = run("record", "--dir", str(d), *opts, "--", sys.executable, "-c", ECHO, input=input)
    assert p.returncode == 0, p.stderr
    return Path(p.stderr.decode().split("recording to ", 1)[1].split("\n", 1)[0])


def test_record_dir_name_and_ls(tmp_path: Path) -> None:
    d = tmp_path / "caps"
    a = record(d, "--name", "my server", input=INIT)
    b = record(d, input=b"")
    assert a.parent == d and a.name.split("-", 1)[1].startswith("my-server-")
    assert b.name.split("-", 1)[1].startswith("python-") or "-c" not in b.name
    p = run("ls", "--dir", str(d), "--format", "json")               # no-traffic captures left out, and said so
    assert [json.loads(x)["path"] for x in p.stdout.splitlines()] == [str(a)]
    assert b"1 capture(s) with no traffic not listed (--all lists them)" in p.stderr
    p = run("ls", "--all", "--dir", str(d), "--format", "json")
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["path"] for r in rows] == [str(b), str(a)]            # newest first
    assert rows[1]["name"] == "my-server" and rows[1]["messages"] == 2 and rows[1]["revision"] == "2025-06-18"
    assert rows[0]["no_traffic"] and rows[0]["messages"] == 0 and rows[0]["status"] == COMPLETE
    text = run("ls", "--all", "--dir", str(d)).stdout.decode().splitlines()
    assert text[0].split() == ["STARTED", "NAME", "TRANSPORT", "REVISION", "MSGS", "LIVE-FINDINGS", "STATUS", "SIZE", "PATH"]
    assert "complete, no traffic" in text[1] and "2025-06-18" in text[2] and str(a) in text[2]


def test_truncated_recording_and_non_captures(tmp_path: Path) -> None:
    d = tmp_path
    full = record(d, input=INIT)
    lines = full.read_bytes().splitlines(keepends=True)
    cut = d / "20260101T000000Z-cut-999999999.jsonl"
    cut.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])          # killed mid-write
    live = d / f"20260101T000001Z-live-{os.getpid()}.jsonl"           # our pid, and we write it
    live.write_bytes(b"".join(lines[:-1]))
    (d / "notes.jsonl").write_text('{"hello": 1}\n')
    (d / "readme.txt").write_text("x")
    with open(live, "ab"):
        infos = {i.name: i for i in scan(d)}
        assert len(infos) == 3 and {"cut", "live"} < set(infos)
        assert infos["cut"].status == TRUNCATED and infos["cut"].messages is None
        assert infos["live"].status == RECORDING
        assert read_info(d / "notes.jsonl") is None
        # prune never removes a live capture or a non-capture
        p = run("prune", "--dir", str(d), "--keep", "0")
        assert p.returncode == 0, p.stderr
        assert sorted(os.listdir(d)) == sorted([live.name, "notes.jsonl", "readme.txt"])


def test_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    record(tmp_path, "--name", "ok", input=INIT)
    (path,) = tmp_path.iterdir()
    data = path.read_bytes().replace(b'"name":"ok"', b'"name":"\\u001b[31mred\\u0007"', 1)
    path.write_bytes(data)
    out = run("ls", "--dir", str(tmp_path)).stdout
    assert b"\x1b" not in out and b"\x07" not in out


def test_record_keep(tmp_path: Path) -> None:
    made = [record(tmp_path, "--name", "srv", "--keep", "2") for _ in range(3)]
    other = record(tmp_path, "--name", "other", "--keep", "2")
    assert sorted(tmp_path.iterdir()) == sorted([made[1], made[2], other])
    p = run("record", "-o", str(tmp_path / "x.jsonl"), "--keep", "2", "--", "true")
    assert p.returncode == 2 and b"--keep" in p.stderr


def test_prune_by_age_keeps_newest_per_name(tmp_path: Path) -> None:
    paths = [record(tmp_path, "--name", n) for n in ("a", "a", "a", "b")]
    old = time.time() - 10 * 86400
    for p in paths:
        os.utime(p, (old, old))
    dry = run("prune", "--dir", str(tmp_path), "--older-than", "7d", "--keep", "1", "-n")
    assert dry.returncode == 0 and dry.stdout.decode().count("would remove") == 2
    assert len(list(tmp_path.iterdir())) == 4
    assert run("prune", "--dir", str(tmp_path), "--older-than", "7d", "--keep", "1").returncode == 0
    assert sorted(tmp_path.iterdir()) == sorted([paths[2], paths[3]])
    assert run("prune", "--dir", str(tmp_path), "--older-than", "30d").returncode == 0
    assert len(list(tmp_path.iterdir())) == 2
    bad = run("prune", "--dir", str(tmp_path), "--older-than", "soon")
    assert bad.returncode == 2 and b"soon" in bad.stderr
    assert run("prune", "--dir", str(tmp_path)).returncode == 2


def test_prune_refuses_a_bare_number(tmp_path: Path) -> None:
    """``--older-than 7`` (meant as days) once meant 7 seconds and removed every
    capture older than that: a number without a unit is a usage error."""
    cap = tmp_path / "20240101T000000Z-x-1.jsonl"
    cap.write_bytes(b'{"type":"header","format":"mcptap-capture","version":1,"started":"2024-01-01T00:00:00Z"}\n')
    old = time.time() - 3600
    os.utime(cap, (old, old))
    for age in ("7", "7.5", " 30 "):
        bad = run("prune", "--dir", str(tmp_path), "--older-than", age)
        assert bad.returncode == 2, bad
        err = bad.stderr.decode()
        assert "7d" in err and "12h" in err and "unit" in err
    assert cap.exists()


def test_select_prune_and_parse_age() -> None:
    assert parse_age("90s") == 90 and parse_age("15m") == 900 and parse_age("2w") == 14 * 86400 and parse_age("1.5h") == 5400
    assert select_prune([], now=0, older_than=1) == []


def test_record_keep_survives_a_failed_start(tmp_path: Path) -> None:
    """--keep 1 with a start that fails (no such command; a server that dies
    before it says anything) keeps the last good capture; the next good start
    applies retention to all of them."""
    good = record(tmp_path, "--name", "srv", "--keep", "1", input=INIT)
    p = run("record", "--dir", str(tmp_path), "--name", "srv", "--keep", "1", "--", str(tmp_path / "no-such-server"))
    assert p.returncode == 127, p.stderr
    p = run("record", "--dir", str(tmp_path), "--name", "srv", "--keep", "1", "--", sys.executable, "-c", "import sys; sys.exit(3)",
            input=INIT)
    assert p.returncode == 3, p.stderr
    names = sorted(tmp_path.iterdir())
    assert good in names and len(names) == 3
    newest = record(tmp_path, "--name", "srv", "--keep", "1", input=INIT)
    assert sorted(tmp_path.iterdir()) == [newest]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_kill_9_leaves_a_reserve_that_ls_removes_and_never_lists(tmp_path: Path) -> None:
    import signal

    d = tmp_path / "caps"
    proc = subprocess.Popen([*MCPTAP, "record", "--dir", str(d), "--name", "k", "--", sys.executable, "-c", ECHO],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()              # the session runs: capture and reserve exist
    reserves = [n for n in os.listdir(d) if n.endswith(".reserve")]
    assert len(reserves) == 1
    live = run("ls", "--all", "--dir", str(d), "--format", "json")
    assert b".reserve" not in live.stdout and reserves == [n for n in os.listdir(d) if n.endswith(".reserve")]   # its owner runs
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    p = run("ls", "--all", "--dir", str(d), "--format", "json")
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["status"] for x in p.stdout.splitlines()] == [TRUNCATED]
    assert b".reserve" not in p.stdout
    assert not [n for n in os.listdir(d) if n.endswith(".reserve")]


def test_prune_and_record_remove_only_stale_reserves(tmp_path: Path) -> None:
    good = record(tmp_path, "--name", "srv", input=INIT)
    dead = _dead_pid()
    stale_tagged = tmp_path / f".{good.name}.reserve"                     # its capture ended: the owner is gone
    stale_tagged.write_bytes(b"mcptap reserve pid=%d\n" % dead + bytes(100))
    orphan = tmp_path / ".20260101T000000Z-gone-1.jsonl.reserve"          # no capture left, untagged
    orphan.write_bytes(bytes(100))
    mine = tmp_path / ".20260101T000001Z-live-1.jsonl.reserve"           # tagged with a live pid (ours)
    mine.write_bytes(b"mcptap reserve pid=%d\n" % os.getpid() + bytes(100))
    untagged_live = tmp_path / f".20260101T000002Z-x-{os.getpid()}.jsonl.reserve"
    live = tmp_path / f"20260101T000002Z-x-{os.getpid()}.jsonl"           # our pid, and we write it
    live.write_bytes(good.read_bytes().splitlines(keepends=True)[0])
    untagged_live.write_bytes(bytes(100))
    with open(live, "ab"):
        p = run("prune", "--dir", str(tmp_path), "--older-than", "9999d")
        assert p.returncode == 0, p.stderr
        left = sorted(n for n in os.listdir(tmp_path) if n.endswith(".reserve"))
        assert left == sorted([mine.name, untagged_live.name])
        stale_tagged.write_bytes(b"mcptap reserve pid=%d\n" % dead + bytes(100))
        record(tmp_path, "--name", "srv", input=INIT)                      # the next record sweeps too
        assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".reserve")) == sorted([mine.name, untagged_live.name])
    # once nothing writes it, its reserve is stale, though our pid is alive
    p = run("prune", "--dir", str(tmp_path), "--older-than", "9999d")
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".reserve")) == [mine.name]


def test_ls_and_prune_read_gzip_captures(tmp_path: Path) -> None:
    import gzip

    plain = record(tmp_path, "--name", "zipped", input=INIT)
    gz = plain.with_name(plain.name + ".gz")
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    cut = tmp_path / "20260101T000000Z-cut-1.jsonl.gz"
    cut.write_bytes(gzip.compress(plain.read_bytes()[:-20]))
    plain.unlink()
    p = run("ls", "--all", "--dir", str(tmp_path), "--format", "json")
    rows = {Path(r["path"]).name: r for r in map(json.loads, p.stdout.splitlines())}
    assert set(rows) == {gz.name, cut.name}, p.stdout
    assert rows[gz.name]["status"] == COMPLETE and rows[gz.name]["messages"] == 2 and rows[gz.name]["name"] == "zipped"
    assert rows[gz.name]["revision"] == "2025-06-18"
    assert rows[cut.name]["status"] == TRUNCATED and rows[cut.name]["messages"] is None
    (tmp_path / "not-a-capture.jsonl.gz").write_bytes(gzip.compress(b'{"hello":1}\n'))
    (tmp_path / "garbage.jsonl.gz").write_bytes(b"\x1f\x8b\x08garbage")
    p = run("prune", "--dir", str(tmp_path), "--keep", "0")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["garbage.jsonl.gz", "not-a-capture.jsonl.gz"]


def test_a_capture_rewritten_by_another_json_tool_is_listed(tmp_path: Path) -> None:
    """A capture whose lines were re-written by Python's ``json`` (spaces
    after the colons, keys in another order) is still one: ``show`` and
    ``check`` read it, so ``ls`` lists it (and ``prune`` sees it); it used to
    be skipped for not starting with the writer's exact bytes. A JSON file
    that only looks alike is not."""
    full = record(tmp_path, input=INIT)
    recs = [json.loads(x) for x in full.read_bytes().splitlines()]
    recs[0] = {"format": recs[0].pop("format"), **recs[0]}
    full.write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "other.jsonl").write_text('{"type": "header", "format": "something-else"}\n')
    assert run("check", str(full)).returncode in (0, 1)
    info = read_info(full)
    assert info is not None and info.status == COMPLETE and info.messages == 2 and info.revision == "2025-06-18"
    assert [i.path for i in scan(tmp_path)] == [str(full)] and read_info(tmp_path / "other.jsonl") is None


def _copy(src: Path, dst: Path, name: str | None = None) -> Path:
    """A copy of the capture ``src`` at ``dst``, its header's ``name`` set to ``name``."""
    lines = src.read_bytes().splitlines(keepends=True)
    head = json.loads(lines[0])
    if name is not None:
        head["name"] = name
    dst.write_bytes(json.dumps(head, separators=(",", ":")).encode() + b"\n" + b"".join(lines[1:]))
    return dst


def test_prune_never_removes_a_capture_recorded_with_o(tmp_path: Path) -> None:
    """`record -o FILE` names no pid: the tap's reserve file does, and the tap
    holds the capture open, so it lists as recording and prune leaves it
    (it was removed, and the tap wrote the whole session into a deleted file)."""
    d = tmp_path / "c"
    d.mkdir()
    live = d / "live.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(live), "--", sys.executable, "-c", ECHO],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()
        rows = [json.loads(x) for x in run("ls", "--all", "--dir", str(d), "--format", "json").stdout.splitlines()]
        assert [r["status"] for r in rows] == [RECORDING]
        p = run("prune", "--keep", "0", "--dir", str(d))
        assert p.returncode == 0 and b"removed" not in p.stdout, p.stdout
        assert live.exists()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert read_info(live).status == COMPLETE  # type: ignore[union-attr]


def test_a_live_pid_that_does_not_write_the_capture_is_not_its_tap(tmp_path: Path) -> None:
    """A pid in the name that is alive but is another process (reused, or a
    container's pid 1 seen from the host) does not make a cut capture live."""
    src = Path(__file__).parents[2] / "captures" / "killed-mid-write.jsonl"
    one = _copy(src, tmp_path / "20250101T000000Z-srv-1.jsonl")
    mine = _copy(src, tmp_path / f"20250101T000000Z-srv-{os.getpid()}.jsonl")
    assert read_info(one).status == TRUNCATED and read_info(mine).status == TRUNCATED   # type: ignore[union-attr]
    p = run("prune", "--keep", "0", "--dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert not one.exists() and not mine.exists()


def test_symbolic_links_are_neither_listed_nor_kept_nor_followed(tmp_path: Path) -> None:
    """A `latest.jsonl` link to the newest capture took its place in --keep 1,
    so both real captures were removed; a link is now no capture at all."""
    src = Path(__file__).parents[2] / "captures" / "clean-2025-06-18.jsonl"
    old = _copy(src, tmp_path / "20260101T000000Z-server-99990.jsonl")
    new = _copy(src, tmp_path / "20260102T000000Z-server-99991.jsonl")
    (tmp_path / "latest.jsonl").symlink_to(new.name)
    rows = [json.loads(x) for x in run("ls", "--all", "--dir", str(tmp_path), "--format", "json").stdout.splitlines()]
    assert len(rows) == 2 and "latest" not in str(rows)
    p = run("prune", "--keep", "1", "--dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert not old.exists() and new.exists() and (tmp_path / "latest.jsonl").exists()


def test_keep_groups_by_the_whole_server_name(tmp_path: Path) -> None:
    """Names that differ only past 40 characters or in punctuation are two servers."""
    src = Path(__file__).parents[2] / "captures" / "clean-2025-06-18.jsonl"
    names = ["analytics-warehouse-readonly-production-eu", "analytics-warehouse-readonly-production-us", "a b", "a-b"]
    for i, name in enumerate(names):
        _copy(src, tmp_path / f"2026010{i + 1}T000000Z-x-{99990 + i}.jsonl", name)
    infos = scan(tmp_path)
    assert sorted(i.server for i in infos) == sorted(names)
    assert select_prune(infos, now=0.0, keep=1) == []


def test_ls_and_prune_say_when_the_directory_cannot_be_read(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    for cmd in (("ls",), ("prune", "--keep", "1")):
        p = run(*cmd, "--dir", str(loop))
        assert p.returncode == 2 and p.stderr.decode().startswith(f"mcptap: cannot read {loop}: "), p.stderr
        assert b"output" not in p.stderr


def test_a_mistyped_dir_is_not_an_empty_one(tmp_path: Path) -> None:
    for cmd in (("ls",), ("prune", "--older-than", "1s")):
        p = run(*cmd, "--dir", str(tmp_path / "no-such"))
        assert p.returncode == 2 and b"no-such: no such directory" in p.stderr, p.stderr


def test_a_capture_stored_partly_unframed_has_no_counts_to_show(tmp_path: Path) -> None:
    """Its end record counts what live analysis framed; the chunk records'
    messages are counted only by re-framing (check): ls showed 4,686 messages
    and 2,618 errors for a 300,003-message capture (found by a breaker helper)."""
    from mcptap.capture.writer import CaptureWriter
    from mcptap.model import Direction
    from mcptap.recorder import Recorder

    cap = tmp_path / "20260101T000000Z-flood-99999.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["flood"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z")
    rec.stdio_bytes(Direction.C2S, INIT)
    rec.stdio_unframed(Direction.S2C, b'{"jsonrpc":"2.0","id":1,"result":{}}\n' * 3)
    rec.close(exit_code=0)
    (row,) = [json.loads(x) for x in run("ls", "--all", "--dir", str(tmp_path), "--format", "json").stdout.splitlines()]
    assert row["unframed"] and row["messages"] is None and row["severities"] == {} and row["status"] == COMPLETE
    p = run("ls", "--all", "--dir", str(tmp_path))
    assert p.stdout.decode().splitlines()[1].split()[5:7] == ["?", "?"]
    assert b"`mcptap check` counts their messages" in p.stderr


def test_a_killed_tap_s_reserve_beside_any_output_name_is_swept(tmp_path: Path) -> None:
    """`record -o k.jsonl.gz` (or any name) leaves `.k.jsonl.gz.reserve` when
    killed: only reserves of *.jsonl names were ever swept (found by a breaker
    helper). An untagged `.x.reserve` that is not mcptap's stays."""
    dead = _dead_pid()
    stale = tmp_path / ".k.jsonl.gz.reserve"
    stale.write_bytes(b"mcptap reserve pid=%d\n" % dead + bytes(100))
    foreign = tmp_path / ".notes.txt.reserve"
    foreign.write_bytes(b"someone else's")
    assert run("prune", "--dir", str(tmp_path), "--older-than", "9999d").returncode == 0
    assert not stale.exists() and foreign.exists()


def test_odd_captures_are_listed_as_what_they_are_and_prune_takes_them_with_their_companions(tmp_path: Path) -> None:
    """A newer mcptap's capture says its format version is not supported (not
    "truncated"); an empty capture and a gzip capture cut short are listed
    (empty: with --all) and pruned by age like any other; a removed capture's
    spill file and a killed `serve --extend`'s work file go with it."""
    import gzip

    d = tmp_path
    plain = record(d, "--name", "demo", input=INIT)
    future = d / "20270101T000000Z-future-1.jsonl"
    future.write_text('{"type":"header","format":"mcptap-capture","version":2,"started":"2027-01-01T00:00:00Z","transport":"stdio"}\n')
    cut = d / "20261208T000000Z-cut-2.jsonl.gz"
    cut.write_bytes(gzip.compress(plain.read_bytes())[:60])
    empty = d / "20261205T000000Z-empty-5.jsonl"
    empty.touch()
    (d / "notes.jsonl").touch()                                           # empty, not named by mcptap: not ours
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()                                                           # a pid no process has
    spill = d / (plain.name + ".spill")
    spill.write_bytes(b"\x01" * 30)
    work = d / f".{plain.name}.extending-{gone.pid}"
    work.write_bytes(plain.read_bytes())
    old = time.time() - 10 * 86400
    for f in d.iterdir():
        os.utime(f, (old, old))

    rows = {Path(r["path"]).name: r for r in map(json.loads, run("ls", "--all", "--dir", str(d), "--format", "json").stdout.splitlines())}
    assert set(rows) == {plain.name, future.name, cut.name, empty.name}
    assert (rows[future.name]["status"], rows[future.name]["version"]) == ("unsupported", 2)
    assert rows[cut.name]["status"] == "damaged" and rows[empty.name]["status"] == "empty"
    text = run("ls", "--dir", str(d))
    assert "format version 2 not supported" in text.stdout.decode() and empty.name not in text.stdout.decode()
    assert b"1 capture(s) with no traffic not listed" in text.stderr

    p = run("prune", "--dir", str(d), "--older-than", "1d")
    assert p.returncode == 0, p.stderr
    assert os.listdir(d) == ["notes.jsonl"]


def test_prune_keeps_the_spill_file_of_a_capture_it_keeps(tmp_path: Path) -> None:
    a = record(tmp_path, "--name", "s", input=INIT)
    b = record(tmp_path, "--name", "s", input=INIT)
    for cap in (a, b):
        (tmp_path / (cap.name + ".spill")).write_bytes(b"x")
    assert run("prune", "--dir", str(tmp_path), "--keep", "1").returncode == 0
    assert sorted(os.listdir(tmp_path)) == sorted([b.name, b.name + ".spill"])
