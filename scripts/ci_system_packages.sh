#!/usr/bin/env bash
# System packages some tests need, installed where missing (CI runs as root on
# Debian). Tests that need one skip with a reason when it is absent, so a
# failed install here never fails the run by itself.
#   chromium: headless browser for the HTML report tests (tests/test_html_report.py)
set -uo pipefail
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "ci: installing chromium (HTML report tests)" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/ci-chromium.log 2>&1 \
            || echo "ci: chromium could not be installed (see /tmp/ci-chromium.log); the browser tests will skip" >&2
    else
        echo "ci: chromium missing and apt-get unavailable (not root?); the browser tests will skip" >&2
    fi
fi
exit 0
