"""2026-07-28 subscriptions (spec basic/patterns/subscriptions; issue 13 fixes
list): a subscription notification must ride an open `subscriptions/listen`
(`_meta io.modelcontextprotocol/subscriptionId` = the listen's id) whose
`params.notifications` filter asked for its type; else
`capability.not_subscribed`. Before, 2026-07-28 sessions were not checked at
all (legacy `resources/subscribe` bookkeeping only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.check.report import check_capture
from scripted import META, c2s, note, record, req, res, s2c

SID = "io.modelcontextprotocol/subscriptionId"
DISCOVER = [c2s(req(1, "server/discover", {"_meta": META})),
            s2c(res(1, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True}},
                        "serverInfo": {"name": "s", "version": "1"}}))]


def listen(i: Any, **wanted: Any) -> tuple[str, Any]:
    return c2s(req(i, "subscriptions/listen", {"notifications": wanted, "_meta": META}))


def ack(i: Any) -> tuple[str, Any]:
    return s2c(note("notifications/subscriptions/acknowledged", {"notifications": {}, "_meta": {SID: i}}))


def on(i: Any, method: str, **params: Any) -> tuple[str, Any]:
    return s2c(note(method, {**params, "_meta": {SID: i}} if i is not None else params))


def codes(tmp_path: Path, steps: list[tuple[str, Any]]) -> list[str]:
    rep = check_capture(str(record(tmp_path / "c.jsonl", steps)))
    return [g.code for g in rep.sorted_groups() for _ in range(g.count) if g.code == "capability.not_subscribed"]


@pytest.mark.parametrize("steps, n", [
    # asked for and open: fine
    ([listen(5, toolsListChanged=True, resourceSubscriptions=["file:///dir"]), ack(5),
      on(5, "notifications/tools/list_changed"), on(5, "notifications/resources/updated", uri="file:///dir"),
      on(5, "notifications/resources/updated", uri="file:///dir/a.txt")], 0),
    # a type the filter did not ask for
    ([listen(5, toolsListChanged=True), ack(5), on(5, "notifications/prompts/list_changed")], 1),
    ([listen(5, resourceSubscriptions=["file:///a"]), ack(5), on(5, "notifications/resources/updated", uri="file:///b")], 1),
    ([listen(5, resourceSubscriptions=["file:///dir"]), ack(5), on(5, "notifications/resources/updated", uri="file:///dirx")], 1),
    # untagged, or tagged with an id that is not an open listen
    ([listen(5, toolsListChanged=True), ack(5), on(None, "notifications/tools/list_changed")], 1),
    ([listen(5, toolsListChanged=True), ack(5), on(6, "notifications/tools/list_changed")], 1),
    ([listen(5, toolsListChanged=True), ack(5), on("5", "notifications/tools/list_changed")], 1),      # ids are typed
    # the subscription ended: the listen answered, or cancelled by the client
    ([listen(5, toolsListChanged=True), ack(5), s2c(res(5, {"resultType": "complete", "_meta": {SID: 5}})),
      on(5, "notifications/tools/list_changed")], 1),
    ([listen(5, toolsListChanged=True), ack(5), c2s(note("notifications/cancelled", {"requestId": 5})),
      on(5, "notifications/tools/list_changed")], 1),
    # two listens, each with its own filter
    ([listen(5, toolsListChanged=True), listen(7, resourcesListChanged=True), ack(5), ack(7),
      on(7, "notifications/resources/list_changed"), on(5, "notifications/tools/list_changed"),
      on(5, "notifications/resources/list_changed")], 1),
])
def test_subscription_notifications_follow_the_listen_filter(tmp_path: Path, steps: list[tuple[str, Any]], n: int) -> None:
    assert len(codes(tmp_path, DISCOVER + steps)) == n


def test_a_capture_that_began_mid_session_is_not_judged(tmp_path: Path) -> None:
    """No discover and no listen seen: the listen may have been opened before
    the capture started, so nothing is claimed."""
    assert codes(tmp_path, [on(5, "notifications/tools/list_changed")]) == []
