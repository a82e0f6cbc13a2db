#!/usr/bin/env python3
"""Size and speed of `mcptap report` on a big capture, and how fast headless
Chromium makes it usable.

Generates the synthetic capture of scripts/bench_analysis.py (default 100,000
messages), then in the same run times:

* `mcptap show --format json` on it (baseline: re-annotation alone),
* `mcptap report` (scrubbed, the default) and `mcptap report --no-scrub`,
* Chromium loading the report: the page's own time from script start to a
  rendered timeline (``data-ready``, ms) and the wall time of
  `chromium --headless --dump-dom` (baseline: the same on an empty page).

    .venv/bin/python scripts/bench_report.py              # 100,000 messages
    .venv/bin/python scripts/bench_report.py -n 20000
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
generate = importlib.import_module("bench_analysis").generate      # the same synthetic capture


def timed(args: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def chromium(browser: str, page: Path) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-dev-shm-usage", "--no-first-run", "--dump-dom", page.resolve().as_uri()],
                       capture_output=True, text=True, check=True, timeout=600)
    return time.perf_counter() - t, p.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="messages in the capture")
    args = ap.parse_args()
    env = dict(os.environ, MCPTAP_REDACT_KEY=os.environ.get("MCPTAP_REDACT_KEY", "00" * 32))
    mcptap = [sys.executable, "-m", "mcptap.cli.main"]
    with tempfile.TemporaryDirectory() as d:
        cap = Path(d) / "big.jsonl"
        n = generate(cap, args.n)
        print(f"capture: {n} messages, {cap.stat().st_size / 1e6:.1f} MB")
        t_show = timed(mcptap + ["show", str(cap), "--format", "json"], env)
        print(f"show --format json (baseline): {t_show:.2f} s")
        for extra in ([], ["--no-scrub"]):
            out = Path(d) / ("raw.html" if extra else "report.html")
            t = timed(mcptap + ["report", str(cap), "-o", str(out), *extra], env)
            print(f"report {' '.join(extra) or '(scrubbed)'}: {t:.2f} s ({t / t_show:.2f}x show), {out.stat().st_size / 1e6:.1f} MB")
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser is None:
            print("chromium: not installed, browser timing skipped")
            return 0
        empty = Path(d) / "empty.html"
        empty.write_text("<!DOCTYPE html><html><body>empty</body></html>")
        base, _ = chromium(browser, empty)
        wall, page = chromium(browser, Path(d) / "report.html")
        ready = re.search(r'data-ready="(\d+)"', page)
        script = re.search(r'data-script="(\d+)"', page)
        rows = page.count('class="row ')
        print(f"chromium: empty page {base:.2f} s; report {wall:.2f} s wall (+{wall - base:.2f} s), "
              f"navigation start to rendered timeline {ready.group(1) if ready else '?'} ms "
              f"(of which the viewer script {script.group(1) if script else '?'} ms), {rows} row elements in the DOM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
