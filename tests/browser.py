"""Headless Chromium driven over the DevTools protocol, with only the standard library: what the
browser tests need to look at a page as a person would (open it, wait for it, click, read it,
see its console errors, take a screenshot), and nothing more.

The protocol runs over a pipe (``--remote-debugging-pipe``): Chromium reads commands from its fd 3
and writes replies and events to its fd 4, each a JSON message ended by a NUL byte. A pipe needs
no port (two test workers never collide) and dies with the browser.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("CODEBENCH_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--headless=new",
    "--remote-debugging-pipe",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--hide-scrollbars",
)
# A command's reply, or a page's readiness, that takes longer is a hang: the test fails saying so.
TIMEOUT = 30.0
Message = dict[str, Any]


class BrowserError(RuntimeError):
    """The browser died, did not answer in time, or answered a command with an error."""


class Browser:
    """One Chromium process and its protocol pipe; :meth:`tab` opens pages in it."""

    def __init__(self, profile: Path, executable: Path = CHROMIUM) -> None:
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        # Chromium's ends moved above fd 9, so that putting them on 3 and 4 cannot overwrite one.
        commands_read, replies_write = (_above_nine(fd) for fd in (commands_read, replies_write))
        # bash (dash takes no fd above 9) puts the pipe's ends on fds 3 and 4, where Chromium looks,
        # and execs it, in a session of its own, so that closing kills every process it started
        # (zygotes, renderers, the GPU process).
        script = f'exec "$0" "$@" 3<&{commands_read} 4>&{replies_write} {commands_read}<&- {replies_write}>&-'
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", script, str(executable), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(commands_read, replies_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next_id = 0
        self._events: list[Message] = []

    def close(self) -> None:
        """Ends the browser and every process it started, whatever state it is in."""
        if self.process.poll() is None:
            with contextlib.suppress(BrowserError, OSError):
                self.send("Browser.close", timeout=5)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        # Every process of its session, those in process groups of their own (crashpad) too,
        # until none runs: a SIGKILL takes effect a moment after it is sent.
        deadline = time.monotonic() + 10
        while (left := session_processes(self.process.pid)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        self.process.wait()
        for fd in (self._commands, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._commands = self._replies = -1

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(
        self, method: str, params: Message | None = None, session: str | None = None, timeout: float = TIMEOUT
    ) -> Message:
        """Sends a command and returns its result; events read meanwhile are kept for :meth:`events`."""
        self._next_id += 1
        message: Message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._commands, data) :]
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                result: Message = reply.get("result", {})
                return result
            if "method" in reply:
                self._events.append(reply)

    def events(self) -> list[Message]:
        """The events received so far (console calls, exceptions, log entries...), then forgets them."""
        # Anything already in the pipe counts: read it without waiting.
        while select.select([self._replies], [], [], 0)[0] or b"\0" in self._buffer:
            message = self._read(time.monotonic() + TIMEOUT, "events")
            if "method" in message:
                self._events.append(message)
        events, self._events = self._events, []
        return events

    def _read(self, deadline: float, waiting_for: str) -> Message:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise BrowserError(f"no answer from the browser in time (waiting for {waiting_for})")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser exited (status {self.process.poll()}) while waiting for {waiting_for}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: Message = json.loads(message)
        return parsed

    @contextlib.contextmanager
    def tab(self, width: int = 1280, height: int = 800) -> Iterator[Tab]:
        """A new page of ``width`` x ``height`` CSS pixels, closed on leaving."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session)
        for domain in ("Page", "Runtime", "Log", "Performance"):
            tab.send(f"{domain}.enable")
        tab.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        try:
            yield tab
        finally:
            with contextlib.suppress(BrowserError):
                self.send("Target.closeTarget", {"targetId": target})


class Tab:
    """One page: navigate, evaluate, click, read its errors, screenshots and metrics."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self._errors: list[str] = []

    def send(self, method: str, params: Message | None = None) -> Message:
        result = self.browser.send(method, params, self.session)
        self._collect()
        return result

    def goto(self, url: str) -> None:
        """Navigates to ``url`` (a fragment-only change stays in the document, as a click would)."""
        reply = self.send("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise BrowserError(f"navigating to {url}: {reply['errorText']}")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited); its exception fails."""
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True, "userGesture": True},
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise BrowserError(f"{expression!r} threw: {details.get('exception', {}).get('description') or details}")
        return reply["result"].get("value")

    def wait_ready(self, route: str, timeout: float = TIMEOUT) -> None:
        """Waits until the page says it rendered ``route`` (``document.body.dataset.ready``);
        fails at once where the page reports an error meanwhile (it will not render, or wrongly)."""
        ready = f"document.body?.dataset.ready === {json.dumps(route)}"
        seen = self.wait_for(ready, timeout, quiet=True, errors=True)
        if seen is not True:
            ready = self.evaluate("document.body?.dataset.ready ?? null")
            raise BrowserError(f"the page did not render {route!r} (ready: {ready!r}; errors: {self.errors})")

    def wait_for(self, expression: str, timeout: float = TIMEOUT, quiet: bool = False, errors: bool = False) -> Any:
        """The value of ``expression`` once it is truthy, polled; where it stays falsy, fails
        (or, ``quiet``, returns its last value); with ``errors``, stops at the page's first error."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                break
            if errors and self._errors:
                # The page erred: as it stands now (the error may have come after the expression held).
                value = self.evaluate(expression)
                break
            time.sleep(0.05)
        if not value and not quiet:
            raise BrowserError(f"{expression} still {value!r} after {timeout:g} s (errors: {self.errors})")
        return value

    def open(self, url: str, route: str) -> None:
        """Navigates to ``url`` and waits for it to render ``route``."""
        self.goto(url)
        self.wait_ready(route)

    def click(self, selector: str) -> None:
        """Clicks the first element ``selector`` matches, as a mouse would at its centre."""
        box = self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return null;
                el.scrollIntoView({{block: "center"}});
                const r = el.getBoundingClientRect();
                return [r.left + r.width / 2, r.top + r.height / 2];
            }})()"""
        )
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector!r}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Types ``text`` into the field ``selector`` matches, in place of what it held, as a keyboard would."""
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        self.send("Input.insertText", {"text": text})

    def choose(self, selector: str, value: str) -> None:
        """Picks ``value`` in the <select> ``selector`` matches, with the events a person's pick fires."""
        found = self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el || ![...el.options].some(o => o.value === {json.dumps(value)})) return false;
                el.focus();
                el.value = {json.dumps(value)};
                el.dispatchEvent(new Event("input", {{bubbles: true}}));
                el.dispatchEvent(new Event("change", {{bubbles: true}}));
                return true;
            }})()"""
        )
        if not found:
            raise BrowserError(f"no option {value!r} in {selector!r}")

    def text(self, selector: str) -> str | None:
        """The text of the first element ``selector`` matches (None where none does)."""
        return self.evaluate(f"document.querySelector({json.dumps(selector)})?.textContent ?? null")  # type: ignore[no-any-return]

    def screenshot(self, path: Path | None = None, full_page: bool = False) -> bytes:
        """A PNG of the viewport (or the whole page), written to ``path`` where given."""
        params: Message = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params |= {"captureBeyondViewport": True, "clip": {**size, "x": 0, "y": 0, "scale": 1}}
        png = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        if path is not None:
            path.write_bytes(png)
        return png

    def metrics(self) -> dict[str, float]:
        """Chromium's performance metrics of the page (JSHeapUsedSize, Nodes, TaskDuration...)."""
        return {m["name"]: m["value"] for m in self.send("Performance.getMetrics")["metrics"]}

    @property
    def errors(self) -> list[str]:
        """Every console error, uncaught exception and error log entry the page has made so far."""
        self._collect()
        return list(self._errors)

    def _collect(self) -> None:
        for event in self.browser.events():
            if event.get("sessionId") == self.session:
                error = console_error(event)
                if error is not None:
                    self._errors.append(error)


def session_processes(session: int) -> list[int]:
    """The processes of a session that still run (a killed one may linger unreaped, a zombie)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            pids.append(int(stat.parent.name))
    return pids


def _above_nine(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def console_error(event: Message) -> str | None:
    """The error an event reports, as a line of text, or None where it reports none."""
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        values = [arg.get("value", arg.get("description", "")) for arg in params.get("args", [])]
        return "console.error: " + " ".join(str(value) for value in values)
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        description = details.get("exception", {}).get("description") or details.get("text", "")
        return f"uncaught: {description} ({details.get('url', '')}:{details.get('lineNumber', '?')})"
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        return f"log: {entry.get('text', '')} {entry.get('url', '')}".rstrip()
    return None
