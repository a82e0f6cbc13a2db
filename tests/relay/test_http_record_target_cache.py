"""``record_target`` remembers the request targets that hold no secret (the
same few come in every exchange): what it returns must be what ``scrub_url``
gives, every time, for targets with and without secrets in them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.redact import scrub_url
from mcptap.relay.http import credentials
from mcptap.relay.http.credentials import record_target

PIECES = ["/mcp", "/sse", "/messages/", "?session_id=abc", "?token=hunter2", "&api_key=k123", "?code=xyz&state=1",
          "/u/ghp_0123456789abcdefghijABCDEFGHIJ012345/mcp", "/mcp/sk-live-0123456789abcdef0123456789", "#frag", "?a=b",
          "%2F", "//user:pw@host/", "?redirect=https%3A%2F%2Fh%2Fcb%3Ftoken%3Dsecretvalue12345"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=5))
def test_record_target_is_scrub_url_cached_or_not(parts: list[str]) -> None:
    target = "".join(parts)
    want = scrub_url(target)
    assert record_target(target) == want
    assert record_target(target) == want            # the second time from the cache when clean
    assert record_target(target, record_secrets=True) == target


def test_only_clean_targets_are_remembered() -> None:
    credentials._CLEAN_TARGETS.clear()
    record_target("/mcp?x=1")
    record_target("/mcp?token=hunter2")
    assert "/mcp?x=1" in credentials._CLEAN_TARGETS
    assert "/mcp?token=hunter2" not in credentials._CLEAN_TARGETS
    assert record_target("/mcp?token=hunter2") != "/mcp?token=hunter2"


def test_the_cache_is_bounded() -> None:
    credentials._CLEAN_TARGETS.clear()
    for i in range(credentials._CLEAN_MAX + 10):
        record_target(f"/mcp/{i}")
    assert len(credentials._CLEAN_TARGETS) <= credentials._CLEAN_MAX
