"""A small headless-Chromium driver for the rendered-book check (``tests/test_rendered_book.py``).

It speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe``: Chromium reads commands from
file descriptor 3 and writes replies and events to file descriptor 4, each message JSON ended by a NUL
byte. Only the standard library is needed. Pages are opened with the network off twice over: host
names resolve to nothing (``--host-resolver-rules``) and the page's network is emulated offline, so a
page reads only what lies beside it on disk (``file://``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from lib.core.atomic import atomic_write

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class BrowserError(RuntimeError):
    """Chromium did not start, did not answer in time, or answered a command with an error."""


def find_browser() -> str | None:
    """The first of :data:`BROWSERS` on ``PATH``, or ``None``."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """One headless Chromium; use as a context manager, then :meth:`open` pages in it."""

    def __init__(self, executable: str, width: int = 1280, height: int = 1600, timeout: float = 60.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self._profile = tempfile.TemporaryDirectory(prefix="tkbook-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def at_fds_3_and_4() -> None:  # the pipe protocol's fixed descriptors, in the child only
            write_end = os.dup(from_browser_write) if from_browser_write == 3 else from_browser_write
            os.dup2(to_browser_read, 3)
            os.dup2(write_end, 4)

        self._process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=at_fds_3_and_4,
            pass_fds=(3, 4),  # kept open in the child after at_fds_3_and_4 ran
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        self._next_id = 0

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ask the browser to quit, end it if it does not within 10 s, and remove its profile folder."""
        try:
            self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium gave no answer within {self.timeout:.0f} s")
            readable, _, _ = select.select([self._from_browser], [], [], left)
            if readable:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium closed its pipe (exit code {self._process.poll()})")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one DevTools command (to the page ``session``, else to the browser); its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") != self._next_id:
                self._events.append(reply)
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error']}")
            return reply.get("result", {})

    def _wait_for_event(self, method: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self._events:
                if event.get("method") == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return
            self._events.append(self._read_message(deadline))

    def open(self, url: str) -> str:
        """Open ``url`` offline in a new tab, wait for its load event; the tab's session id."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session)
        self.call("Network.enable", session)
        self.call(
            "Network.emulateNetworkConditions",
            session,
            offline=True,
            latency=0,
            downloadThroughput=-1,
            uploadThroughput=-1,
        )
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.call("Page.navigate", session, url=url)
        self._wait_for_event("Page.loadEventFired", session)
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        """The value of a JavaScript ``expression`` in the tab (a promise is awaited)."""
        result = self.call("Runtime.evaluate", session, expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"JavaScript raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, path: Path) -> None:
        """Write the tab's first screen (``width`` × ``height``) as a PNG to ``path``."""
        data = self.call("Page.captureScreenshot", session, format="png")["data"]
        with atomic_write(path, "wb", encoding=None) as handle:
            handle.write(base64.b64decode(data))
