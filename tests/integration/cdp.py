"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON messages ended by
a NUL byte, Chromium reading fd 3 and writing fd 4), for what a command-line render cannot do: move the mouse the
way a user does (a real input event, so :hover and mouse listeners fire) and read the page and its frames back,
a sandboxed frame (another origin the page's own scripts cannot read) included."""
from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path

from tests.integration.browser import CHROME_FLAGS


class DevToolsError(RuntimeError):
    """Chromium answered a command with an error, or did not answer in time."""


class Chromium:
    """One headless Chromium with a page of its own (`session`); frames of other processes are attached too."""

    def __init__(self, profile: Path, *, width: int = 1400, height: int = 1000) -> None:
        to_read, self._to_chromium = os.pipe()  # Chromium reads commands from fd 3
        self._from_chromium, to_write = os.pipe()  # and writes answers and events to fd 4

        def fds() -> None:  # in the child, before exec: the two ends at 3 and 4 (copied high first: no clash)
            a, b = fcntl.fcntl(to_read, fcntl.F_DUPFD, 10), fcntl.fcntl(to_write, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [f"--user-data-dir={profile}", "--remote-debugging-pipe", f"--window-size={width},{height}"]
        self.proc = subprocess.Popen(["chromium", *CHROME_FLAGS, *args, "about:blank"], preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_read)
        os.close(to_write)
        self._buf, self._next, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for method in ("Page.enable", "Runtime.enable"):
            self.send(method, session=self.session)
        self.send("Target.setAutoAttach", session=self.session, autoAttach=True, waitForDebuggerOnStart=False,
                  flatten=True)

    def send(self, method: str, *, session: str | None = None, timeout: float = 60.0, **params) -> dict:
        """The result of one command (on the page's or a frame's session when given)."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chromium, json.dumps(msg).encode() + b"\0")
        until = time.monotonic() + timeout
        while True:
            for m in self._read(until):
                if m.get("id") == self._next:
                    if "error" in m:
                        raise DevToolsError(f"{method}: {m['error']}")
                    return m.get("result", {})
                self._event(m)

    def _event(self, m: dict) -> None:
        self.events.append(m)
        if m.get("method") == "Target.attachedToTarget" and m.get("sessionId"):  # a frame in a process of its own
            for method in ("Runtime.enable", "Runtime.runIfWaitingForDebugger"):
                self._post(method, m["params"]["sessionId"])

    def _post(self, method: str, session: str) -> None:
        """A command whose answer is not waited for (sent while another's is awaited)."""
        self._next += 1
        os.write(self._to_chromium, json.dumps({"id": self._next, "method": method, "params": {},
                                                "sessionId": session}).encode() + b"\0")

    def _read(self, until: float) -> list[dict]:
        while b"\0" not in self._buf:
            left = until - time.monotonic()
            if left <= 0 or not select.select([self._from_chromium], [], [], left)[0]:
                raise DevToolsError("Chromium did not answer in time")
            chunk = os.read(self._from_chromium, 1 << 20)
            if not chunk:
                raise DevToolsError("Chromium closed its pipe")
            self._buf += chunk
        *whole, self._buf = self._buf.split(b"\0")
        return [json.loads(w) for w in whole if w]

    def contexts(self) -> list[tuple[str, int, str]]:
        """(session, execution context id, frame id) of every frame's main world seen so far."""
        out = []
        for m in self.events:
            if m.get("method") == "Runtime.executionContextCreated":
                c = m["params"]["context"]
                if (c.get("auxData") or {}).get("isDefault"):
                    out.append((m.get("sessionId") or self.session, c["id"], c["auxData"].get("frameId")))
        return out

    def evaluate(self, expression: str, *, session: str | None = None, context: int | None = None):
        """The value of a JavaScript expression (awaited when a promise) in the page or one frame's context."""
        extra = {"contextId": context} if context is not None else {}
        r = self.send("Runtime.evaluate", session=session or self.session, expression=expression, returnByValue=True,
                      awaitPromise=True, **extra)
        if "exceptionDetails" in r:
            raise DevToolsError(f"{expression[:80]}: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float = 30.0, **where):
        """The first truthy value of an expression, evaluated every 0.2 s (None after `timeout`)."""
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            try:
                if v := self.evaluate(expression, **where):
                    return v
            except DevToolsError:
                pass  # a context gone with a navigation: asked again
            time.sleep(0.2)
        return None

    def mouse_move(self, x: float, y: float) -> None:
        """The pointer moved to (x, y) of the page's viewport, as a user's mouse does."""
        self.send("Input.dispatchMouseEvent", session=self.session, type="mouseMoved", x=x, y=y)

    def screenshot(self, path: Path) -> None:
        """The page's viewport as a PNG."""
        import base64
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", session=self.session)["data"]))

    def close(self) -> None:
        """Chromium ended (this object's own process, by its pid)."""
        try:
            self.send("Browser.close", timeout=10)
        except (DevToolsError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_chromium)
        os.close(self._from_chromium)
