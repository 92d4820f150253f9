"""Headless Chromium for the tests (Debian's `chromium`): its command line (a fresh profile, no
network of its own, no sandbox for root in a container), and a tab kept open and driven over
Chromium's DevTools pipe, for a test that watches a page change while it is open (a meta refresh
honoured, a page rewritten under a reload).

The pipe is `--remote-debugging-pipe`: JSON messages, each ended by a NUL byte, that Chromium
reads on its file descriptor 3 and writes on 4. No port is opened and no client library is
needed: the test's side is below.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
from collections import deque
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# skipped where chromium is missing, but in CI, where its absence fails the test
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium not installed (.ci/run installs it)",
)


def chromium_flags(profile: Path) -> list[str]:
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]


class Tab:
    """One tab of a headless Chromium of its own: `open(url)`, then `next_load()` for each load
    after it (the events that led to it: a page's own meta refresh is a
    `Page.frameRequestedNavigation` of reason `metaTagRefresh`), `evaluate(js)` on the DOM as
    Chromium rendered it, `reload()`. Every wait is bounded by `hang_guard_s`, which a page that
    behaves never reaches."""

    def __init__(self, profile: Path, hang_guard_s: float):
        self.hang_guard_s = hang_guard_s
        reading, self._to_chromium = os.pipe()
        self._from_chromium, writing = os.pipe()
        # Chromium's ends, moved above 9 so that none is 3 or 4 (the descriptors bash gives
        # Chromium them as) before they are handed over
        to_chromium, from_chromium = (
            fcntl.fcntl(end, fcntl.F_DUPFD, 10) for end in (reading, writing)
        )
        os.close(reading)
        os.close(writing)
        handed = f"3<&{to_chromium} 4>&{from_chromium} {to_chromium}<&- {from_chromium}>&-"
        self.process = subprocess.Popen(
            [
                "bash",
                "-c",
                f'exec "$@" {handed}',
                "bash",
                *chromium_flags(profile),
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(to_chromium, from_chromium),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chromium)
        os.close(from_chromium)
        self._inbox: queue.Queue = queue.Queue()
        self._events: deque = deque()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._last_id = 0
        self._session: str | None = None

    def _read(self) -> None:
        rest = b""
        with os.fdopen(self._from_chromium, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                *messages, rest = (rest + chunk).split(b"\0")
                for message in messages:
                    self._inbox.put(json.loads(message))
        self._inbox.put(None)  # Chromium has ended

    def _receive(self) -> dict:
        try:
            message = self._inbox.get(timeout=self.hang_guard_s)
        except queue.Empty:
            raise AssertionError(f"Chromium said nothing in {self.hang_guard_s} s") from None
        assert message is not None, "Chromium ended"
        return message

    def _send(self, method: str, params: dict) -> None:
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if self._session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        os.write(self._to_chromium, json.dumps(message).encode() + b"\0")

    def call(self, method: str, **params) -> dict:
        """A DevTools command and its result; the events that come meanwhile are kept."""
        self._send(method, params)
        while True:
            got = self._receive()
            if got.get("id") == self._last_id:
                assert "error" not in got, f"{method}: {got['error']}"
                return got["result"]
            self._events.append(got)

    def next_load(self) -> list[dict]:
        """Waits for the tab's next load; returns the events since the one before it."""
        before = []
        while True:
            got = self._events.popleft() if self._events else self._receive()
            if got.get("method") == "Page.loadEventFired":
                return before
            before.append(got)

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.next_load()

    def reload(self) -> None:
        self.call("Page.reload", ignoreCache=True)
        self.next_load()

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"]["value"]

    def close(self) -> None:
        try:
            self._send("Browser.close", {})  # its answer may never come: Chromium ends
            self.process.wait(timeout=self.hang_guard_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self._to_chromium)

    def __enter__(self) -> Tab:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
