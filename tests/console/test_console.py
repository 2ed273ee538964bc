"""The console of `mqstate serve --http` in a real browser (issue 58, docs/console.md).

Each test runs its own `mqstate serve --http` and headless chromium (conftest.py); the
project's Python binding plays the app whose keys, watches and locks the console shows.

Run: scripts/lib/suites/console (or `python -m pytest tests/console` with the project venv,
after scripts/lib/setup/browser, with MQSTATE_BIN naming the mqstate binary).
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import time
import urllib.error
import urllib.request
from typing import Optional, Tuple, Union

import pytest

import mqstate
from conftest import WAIT, Page, Serve, attr_int


def b64url(key: Union[str, bytes]) -> str:
    raw = key.encode() if isinstance(key, str) else key
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def local_iso(wall_ms: int) -> str:
    """What the page shows for an HLC's wall clock: local time, ISO 8601, milliseconds."""
    when = datetime.datetime.fromtimestamp(wall_ms / 1000).astimezone()
    return when.isoformat(timespec="milliseconds")


def client(serve: Serve, client_id: str) -> mqstate.Client:
    return mqstate.Client(serve.mqtt_url, client_id=client_id, request_timeout=WAIT)


def next_change(
    changes: "mqstate.Subscription[Union[mqstate.Change, mqstate.ConnectionEvent]]",
    timeout: float = WAIT,
) -> mqstate.Change:
    """The next Change of a subscription (connection events skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        event = changes.next(timeout=max(0.1, deadline - time.monotonic()))
        if isinstance(event, mqstate.Change):
            return event


def open_key(page: Page, key: Union[str, bytes], pattern: Optional[str] = None) -> None:
    """Lists the keys matching `pattern` in the Keys view and opens `key`."""
    b64 = b64url(key)
    label = key if isinstance(key, str) else repr(key)
    page.tab("keys")
    page.fill("#key-pattern", pattern or label)
    page.find("#keys-list").click()
    page.click(f'#key-list button[data-b64="{b64}"]', f"{label} in the list")
    page.wait(lambda: page.find("#key-detail").get_attribute("data-b64") == b64
              and page.find("#key-detail").is_displayed(), f"{label}'s detail")


def test_a_key_set_by_a_client_shows_its_decoded_version(serve: Serve, page: Page) -> None:
    value = {"celsius": 21.5, "sensor": "room-1"}
    with client(serve, "keys-app") as app:
        app.set("sensor/other", "x")
        result = app.set("sensor/room-1", json.dumps(value), expiry=120, persist=True)
        assert result.applied and result.version is not None
        version = result.version

        page.open()
        # The token went from the address bar into the tab's storage.
        assert "token" not in page.driver.current_url
        assert page.js("return sessionStorage.getItem('mqstate-console-token')") == serve.token
        assert page.find("#token-state").text == "token set"

        open_key(page, "sensor/room-1", pattern="sensor/*")
        assert len(page.finds("#key-list button")) == 2
        shown = page.find("#detail-version .version")
        assert attr_int(shown, "data-wall-ms") == version.wall_ms
        assert attr_int(shown, "data-counter") == version.counter
        assert shown.get_attribute("data-node") == version.node_id
        assert page.find("#detail-version .version-time").text == local_iso(version.wall_ms)
        assert page.find("#detail-version .version-counter").text == str(version.counter)
        assert page.find("#detail-version .version-node").text == version.node_id
        assert page.find("#detail-persisted").text == "yes"
        assert page.find("#detail-size").text.startswith(f"{len(json.dumps(value))} bytes")
        # JSON is the best fit, pretty-printed.
        assert page.find("#key-value").get_attribute("data-as") == "json"
        assert json.loads(page.find("#key-value").text) == value
        assert "\n  " in page.find("#key-value").text
        # The expiry counts down.
        countdown = page.find("#detail-expiry .countdown")
        first = attr_int(countdown, "data-left-ms")
        assert 0 < first <= 120_000
        page.wait(lambda: attr_int(countdown, "data-left-ms") <= first - 1000,
                  "the expiry to count down")
        page.screenshot("keys")
        # The hex switch.
        page.find('input[name="value-as"][value="hex"]').click()
        assert page.find("#key-value").text.startswith("00000000  7b 22 63 65")
        # "/" focuses the pattern box.
        page.find("#tab-live").click()
        page.find("body").send_keys("/")
        assert page.js("return document.activeElement.id") == "key-pattern"
        assert page.find("#view-keys").is_displayed()


def test_a_watch_shows_in_the_live_stream_within_a_second(serve: Serve, page: Page) -> None:
    page.open()
    page.tab("live")
    page.wait(lambda: page.find("#live-state").text == "live", "the live stream to open")
    with client(serve, "watcher") as watcher:
        sent_ms = time.time() * 1000
        with watcher.observe("alarm/door"):
            row = page.live_row("the KEYNOTIFY in the live stream", kind="request", verb="KEYNOTIFY",
                                client=watcher.client_id, key="alarm/door")
            # The store saw the registration within a second of its sending (server's at_ms,
            # this machine's clock for both); how long the page took is only reported.
            at_ms, seen_ms = int(row["atMs"]), int(row["seenMs"])
            assert sent_ms - 50 <= at_ms <= sent_ms + 1000, (at_ms - sent_ms)
            assert row["outcome"] == "ok"
            print(f"KEYNOTIFY: at_ms - sent {at_ms - sent_ms:.0f} ms, on the page after {seen_ms - sent_ms:.0f} ms")
            # A filter on the client reconnects the stream with only that client's events.
            page.fill("#live-client", watcher.client_id)
            page.find("#live-apply").click()
            page.wait(lambda: page.find("#live-state").text == "live", "the filtered stream")
            watcher.set("alarm/door", "open")
            page.live_row("the watcher's notification", kind="notification", verb="SET",
                          client=watcher.client_id, key="alarm/door")
            assert all(r["client"] == watcher.client_id for r in page.live_rows())
            page.screenshot("live")


def test_a_delete_from_the_page_notifies_the_observer(serve: Serve, page: Page) -> None:
    with client(serve, "orders-app") as app, client(serve, "observer") as observer:
        app.set("orders/42", "pending")
        with observer.observe("orders/42") as changes:
            page.open()
            open_key(page, "orders/42", pattern="orders/*")
            dialog = page.find("#confirm-dialog")
            # Cancelled: nothing deleted.
            page.find("#detail-delete").click()
            page.wait(lambda: dialog.get_attribute("open") is not None, "the confirmation")
            page.find("#confirm-cancel").click()
            page.wait(lambda: dialog.get_attribute("open") is None, "the dialog to close")
            assert app.get("orders/42") is not None
            # Confirmed: deleted, and the observer told.
            page.find("#detail-delete").click()
            page.wait(lambda: dialog.get_attribute("open") is not None, "the confirmation")
            assert "orders/42" in page.find("#confirm-text").text
            page.screenshot("keys-delete-confirm")
            page.find("#confirm-ok").click()
            page.wait(lambda: "deleted 1" in page.status(), "the delete's answer")
            change = next_change(changes)
            assert (change.key, change.kind) == (b"orders/42", "delete")
            assert app.get("orders/42") is None
            page.wait(lambda: not page.find("#key-detail").is_displayed(), "the detail to go")
            # The live stream shows the console's DEL and the observer's notification.
            page.tab("live")
            page.live_row("the console's DEL", kind="request", verb="DEL", key="orders/42", outcome="ok")
            page.live_row("the notification", kind="notification", verb="DELETE",
                          client=observer.client_id, key="orders/42")


def test_a_lock_holder_and_its_takeover_show_in_clients(serve: Serve, page: Page) -> None:
    key = "jobs/nightly"
    b64 = b64url(key)
    with client(serve, "worker-a") as a, client(serve, "worker-b") as b:
        # (A lease long enough for the page to show it on a busy machine.)
        lock_a = a.lock(key, lease=60)
        lock_a.acquire(timeout=WAIT)
        with b.observe("jobs/other"):  # a registration to show
            page.open()
            page.tab("clients")

            def holder() -> str:
                return str(page.find(f'#locks-rows tr[data-key="{b64}"]').get_attribute("data-holder"))

            page.wait(lambda: holder() == lock_a.holder_id, "worker-a as the holder")
            lease = page.find(f'#locks-rows tr[data-key="{b64}"] .countdown')
            assert 0 < attr_int(lease, "data-left-ms") <= 60_000
            ids = {r.get_attribute("data-client"): r for r in page.finds("#clients-rows tr")}
            assert {"worker-a", "worker-b"} <= set(ids)
            assert ids["worker-b"].get_attribute("data-connected") == "true"
            assert "jobs/other" in ids["worker-b"].text
            page.screenshot("clients")
            # worker-a lets go and worker-b, waiting, takes the lock; the view refreshes itself.
            lock_b = b.lock(key, lease=30)
            assert lock_b.try_acquire() is None  # held by worker-a
            assert lock_a.release()
            token_b = lock_b.acquire(timeout=WAIT)
            page.wait(lambda: holder() == lock_b.holder_id, "worker-b as the holder (auto-refresh)")
            shown = page.find(f'#locks-rows tr[data-key="{b64}"] .version')
            assert attr_int(shown, "data-wall-ms") == token_b.wall_ms
            assert attr_int(shown, "data-counter") == token_b.counter
            page.screenshot("clients-takeover")
            lock_b.release()


def test_a_cut_from_the_faults_view_makes_the_client_reconnect(serve: Serve, page: Page) -> None:
    with client(serve, "cut-me") as app:
        app.set("counter", "1")
        page.open()
        page.tab("faults")
        page.fill("#cut-client", app.client_id)
        page.find("#cut-submit").click()
        page.wait(lambda: page.find("#cut-result").text.startswith("{"), "the cut's answer")
        assert json.loads(page.find("#cut-result").text)["cut"] == 1
        page.screenshot("faults")
        page.tab("live")
        gone = page.live_row("the disconnect", kind="disconnect", client=app.client_id)
        page.live_row("the fault", kind="fault", verb="cut")
        page.wait(lambda: any(r["kind"] == "connect" and r["client"] == app.client_id
                              and int(r["seq"]) > int(gone["seq"]) for r in page.live_rows()),
                  "the reconnection")
        # The app goes on working over its new connection.
        assert app.set("counter", "2").applied
        assert app.get("counter").text == "2"  # type: ignore[union-attr]
        page.screenshot("live-cut")


def test_writes_without_the_token_are_refused(serve: Serve, page: Page) -> None:
    with client(serve, "config-app") as app:
        app.set("config/mode", "auto")
        page.open(token=None)
        assert page.find("#token-state").text.startswith("no token")
        page.fill("#set-key", "config/mode")
        page.fill("#set-value", "manual")
        page.find("#set-submit").click()
        page.wait(lambda: "401" in page.status(), "the 401 in the status area")
        assert page.find("#status").get_attribute("role") == "alert"
        assert "401" in page.find("#set-result").text
        assert app.get("config/mode").text == "auto"  # type: ignore[union-attr]
        page.screenshot("unauthorized")
        # A fault without the token: refused too.
        page.tab("faults")
        page.find("#cut-submit").click()
        page.wait(lambda: "401" in page.find("#cut-result").text, "the cut's 401")
        # A wrong token pasted: still refused; the right one: done.
        page.fill("#token", "not-the-token")
        page.find("#token-save").click()
        page.tab("keys")
        page.js("document.getElementById('set-result').textContent = ''")
        page.find("#set-submit").click()
        page.wait(lambda: "401" in page.find("#set-result").text, "the wrong token's 401")
        assert app.get("config/mode").text == "auto"  # type: ignore[union-attr]
        page.fill("#token", serve.token)
        page.find("#token-save").click()
        page.find("#set-submit").click()
        page.wait(lambda: page.find("#set-result").text.startswith("set: version"), "the set")
        assert app.get("config/mode").text == "manual"  # type: ignore[union-attr]


@pytest.mark.http_host("0.0.0.0")
def test_off_loopback_reads_need_the_token_and_the_page_sends_it(serve: Serve, page: Page) -> None:
    with client(serve, "plant-app") as app:
        app.set("plant/line-1", "running")
        try:
            urllib.request.urlopen(serve.url("/api/keys"), timeout=WAIT)
            raise AssertionError("a read without the token was answered")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401
        # The token may also come in the query (the next test opens the URL serve prints).
        page.driver.get(serve.url("/?token=" + serve.token))
        page.wait(lambda: page.js("return document.readyState") == "complete", "the page")
        assert "token" not in page.driver.current_url
        page.wait(lambda: page.find(f'#key-list button[data-b64="{b64url("plant/line-1")}"]'),
                  "the keys, read with the token")
        page.tab("live")
        page.wait(lambda: page.find("#live-state").text == "live", "the stream, opened with the token")
        app.set("plant/line-1", "stopped")
        page.live_row("the SET", kind="request", verb="SET", client=app.client_id, key="plant/line-1")


@pytest.mark.http_host("0.0.0.0")
def test_off_loopback_the_printed_url_opens_the_console(serve: Serve, page: Page) -> None:
    page.open()
    assert page.finds("#tab-keys"), page.find("body").text[:300]


def test_live_pause_holds_500_events_and_counts_the_rest(serve: Serve, page: Page) -> None:
    page.open()
    page.tab("live")
    page.wait(lambda: page.find("#live-state").text == "live", "the live stream to open")
    page.fill("#live-pattern", "burst/*")
    page.find("#live-apply").click()
    page.wait(lambda: page.find("#live-state").text == "live", "the filtered stream")
    page.find("#live-pause").click()
    assert page.find("#live-pause").get_attribute("aria-pressed") == "true"
    with client(serve, "burst-app") as app:
        for i in range(620):
            app.set(f"burst/{i % 7}", str(i))
    # 620 SETs (and the client's connect: events without a key pass the pattern) seen while
    # paused: 500 wait, the rest are counted as dropped.
    def paused_counts() -> Optional[Tuple[int, int]]:
        found = re.search(r"(\d+) waiting, (\d+) dropped", page.find("#live-count").text)
        return (int(found[1]), int(found[2])) if found and int(found[2]) >= 120 else None

    waiting, dropped = page.wait(paused_counts, "the paused count", timeout=60)
    assert waiting == 500 and dropped >= 120
    assert page.live_rows() == []
    page.find("#live-pause").click()
    rows = page.live_rows()
    assert len(rows) == 500 and rows[0]["kind"] == "skipped"
    # (Events may still come between the count read above and the resume: the client's
    # disconnect, the console's own probes.)
    said = re.search(r"dropped (\d+) events while paused", page.find("#live-rows tr").text)
    assert said and int(said[1]) >= dropped
    sets = [r for r in rows if r["kind"] == "request"]
    assert len(sets) >= 497 and all(r["verb"] == "SET" for r in sets)
    seqs = [int(r["seq"]) for r in rows[1:]]
    assert seqs == sorted(seqs, reverse=True)  # newest first
    page.screenshot("live-paused")
    # More events: still at most 500 rows.
    with client(serve, "burst-app-2") as app:
        for i in range(30):
            app.set("burst/late", str(i))
    page.wait(lambda: page.live_rows()[0]["client"] == "burst-app-2", "the new events")
    assert len(page.live_rows()) == 500


def test_faults_fail_pause_and_restart_show_their_answers(serve: Serve, page: Page) -> None:
    with client(serve, "faulty-app") as app:
        page.open()
        page.tab("live")
        page.find("#live-outcome").send_keys("error")
        page.find("#live-apply").click()
        page.wait(lambda: page.find("#live-state").text == "live", "the errors-only stream")
        page.tab("faults")
        page.fill("#fail-n", "1")
        page.fill("#fail-error", "quota_exceeded")
        page.find("#fail-command").send_keys("SET")
        page.find("#fail-submit").click()
        page.wait(lambda: page.find("#fail-result").text.startswith("{"), "the fail's answer")
        assert json.loads(page.find("#fail-result").text) == {"armed": 1}
        try:
            app.set("quota/probe", "1")
            raise AssertionError("the armed SET was answered")
        except mqstate.QuotaExceededError:
            pass
        assert app.set("quota/probe", "2").applied
        page.fill("#pause-ms", "300")
        page.find("#pause-submit").click()
        page.wait(lambda: page.find("#pause-result").text.startswith("{"), "the pause's answer")
        assert json.loads(page.find("#pause-result").text)["paused_ms"] == 300
        page.find("#restart-submit").click()
        page.wait(lambda: page.find("#confirm-dialog").get_attribute("open") is not None, "the confirmation")
        page.find("#confirm-ok").click()
        page.wait(lambda: page.find("#restart-result").text.startswith("{"), "the restart's answer")
        assert json.loads(page.find("#restart-result").text)["restarted"] is True
        page.screenshot("faults-answers")
        # The app reconnects to the restarted store (its session is gone: a new one).
        page.wait(lambda: app.set("after/restart", "1", timeout=5).applied, "the app after the restart")
        page.tab("live")
        row = page.live_row("the failed SET", kind="request", verb="SET", client=app.client_id,
                            key="quota/probe")
        assert row["outcome"] == "store_error"
        assert "quota_exceeded" in page.finds("#live-rows tr.outcome-error")[-1].text
        assert all(r["kind"] != "request" or r["outcome"] not in ("ok", "duplicate") for r in page.live_rows())


def test_keys_page_on_and_untrusted_bytes_stay_text(serve: Serve, page: Page) -> None:
    hostile = '<img src=x onerror="window.__pwned = 1">'
    with client(serve, "bulk-app") as app:
        for i in range(105):
            app.set(f"bulk/{i:03}", str(i))
        app.set(f"bulk/{hostile}", f"<script>window.__pwned = 2</script>{hostile}")
        app.set(b"bulk/\xff\x00raw", b"\x00\x01\xfe\xff")
        page.open()
        page.fill("#key-pattern", "bulk/*")
        page.find("#keys-list").click()
        page.wait(lambda: len(page.finds("#key-list button")) == 100, "the first page of 100")
        assert page.find("#keys-more").is_enabled()
        page.find("#keys-more").click()
        page.wait(lambda: len(page.finds("#key-list button")) == 107, "the second page")
        page.wait(lambda: not page.find("#keys-more").is_enabled(), "the end of the keys")
        # Markup in a key or a value is text, never elements.
        open_key(page, f"bulk/{hostile}", pattern="bulk/<*")
        assert page.find("#key-value").text == f"<script>window.__pwned = 2</script>{hostile}"
        assert page.find("#detail-key").text == f"bulk/{hostile}"
        assert page.finds("main img, main script") == []
        assert page.js("return window.__pwned") is None
        # Bytes that are not UTF-8: the key in hex, the value as a hex dump.
        open_key(page, b"bulk/\xff\x00raw", pattern="bulk/*raw")
        assert page.find("#detail-key").text == "0x" + b"bulk/\xff\x00raw".hex()
        assert page.find("#key-value").get_attribute("data-as") == "hex"
        assert page.find("#key-value").text.startswith("00000000  00 01 fe ff")
        page.screenshot("keys-binary")
