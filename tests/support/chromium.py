"""A real headless Chromium for the console's browser test, driven over the DevTools
protocol through a pipe (``--remote-debugging-pipe``: JSON messages ending in NUL on file
descriptors 3 and 4), so no WebSocket library or driver binary is needed.

The browser is the headless shell that the npm package ``@sparticuz/chromium`` ships in its
registry tarball (``tests/js/package.json``; ``make install`` unpacks it with
``tests/js/chromium.mjs``). It needs only libc, libgcc and libexpat from the system.
``B3OS_CHROMIUM`` names another Chromium or Chrome binary instead (Debian's ``chromium``).
Text is set in the fonts shipped with the package plus the system's, through a fontconfig
file of our own, so a machine without fonts still renders the page.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

JS_DIR = Path(__file__).resolve().parents[1] / "js"
ENV = "B3OS_CHROMIUM"


class BrowserMissing(RuntimeError):
    pass


def chromium_path() -> Path:
    if configured := os.environ.get(ENV):
        return Path(configured)
    if not (JS_DIR / "node_modules" / "@sparticuz" / "chromium").is_dir():
        raise BrowserMissing("@sparticuz/chromium is not installed in tests/js/node_modules: "
                             "run `make install` (or set B3OS_CHROMIUM to a Chromium binary)")
    node = shutil.which("node")
    if node is None:
        raise BrowserMissing("node is needed to unpack @sparticuz/chromium")
    done = subprocess.run([node, str(JS_DIR / "chromium.mjs")], capture_output=True, text=True,
                          check=True, timeout=300)
    return Path(done.stdout.strip().splitlines()[-1])


def fonts_conf(binary: Path, into: Path) -> Path:
    """A fontconfig file: the fonts unpacked beside the binary, then the system's."""
    dirs = [binary.parent / "fonts", Path("/usr/share/fonts"), Path("/usr/local/share/fonts")]
    lines = "".join(f"  <dir>{d}</dir>\n" for d in dirs if d.is_dir())
    conf = into / "fonts.conf"
    conf.write_text('<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
                    f"<fontconfig>\n{lines}  <cachedir>{into / 'fonts-cache'}</cachedir>\n"
                    "</fontconfig>\n")
    return conf


class CdpError(RuntimeError):
    pass


class Browser:
    """One Chromium process; ``call`` sends a DevTools command and waits for its answer."""

    def __init__(self, binary: Path, profile: Path, width: int = 1280, height: int = 900) -> None:
        ours_read, theirs_write = os.pipe()   # chromium writes fd 4, we read
        theirs_read, ours_write = os.pipe()   # we write, chromium reads fd 3
        env = {**os.environ, "FONTCONFIG_FILE": str(fonts_conf(binary, profile))}
        self.log = (profile / "chromium.log").open("w")

        def plumb() -> None:
            os.dup2(theirs_read, 3)
            os.dup2(theirs_write, 4)

        self.process = subprocess.Popen(
            [str(binary), "--headless", "--no-sandbox", "--no-zygote", "--single-process",
             "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
             "--font-render-hinting=none", f"--window-size={width},{height}",
             f"--user-data-dir={profile / 'profile'}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=plumb, env=env, stdout=self.log, stderr=self.log)
        os.close(theirs_read)
        os.close(theirs_write)
        self._out = os.fdopen(ours_write, "wb", buffering=0)
        self._in = os.fdopen(ours_read, "rb", buffering=0)
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._next = 0
        self._lock = threading.Lock()
        self.console: list[str] = []   # console messages and exceptions of the pages
        self.requests: list[dict[str, Any]] = []   # Network.requestWillBeSent's requests
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while chunk := self._in.read(1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                self._dispatch(json.loads(raw))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                answer = self._answers.get(message["id"])
            if answer is not None:
                answer.put(message)
        elif message.get("method") == "Network.requestWillBeSent":
            self.requests.append(message["params"]["request"])
        elif message.get("method") == "Runtime.consoleAPICalled":
            args = message["params"]["args"]
            self.console.append(" ".join(str(a.get("value", a.get("description", "")))
                                         for a in args))
        elif message.get("method") == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.console.append("exception: " + str(details.get("exception", {})
                                                    .get("description", details.get("text"))))

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        with self._lock:
            self._next += 1
            number = self._next
            answer: queue.Queue[dict[str, Any]] = queue.Queue(1)
            self._answers[number] = answer
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            raise CdpError(f"{method}: no answer in {timeout} s") from None
        finally:
            with self._lock:
                del self._answers[number]
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.requests.clear()
        page = Page(self, session["sessionId"], target)
        for domain in ("Page", "Runtime", "Network"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._out.close()
        self._reader.join(timeout=10)   # the pipe ends with the process
        self._in.close()
        self.log.close()


class Page:
    """One tab: navigate, evaluate JavaScript, wait for a condition, screenshot."""

    def __init__(self, browser: Browser, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def call(self, method: str, params: dict[str, Any] | None = None,
             timeout: float = 30) -> dict[str, Any]:
        return self.browser.call(method, params, self.session, timeout)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait("document.readyState === 'complete'")

    def eval(self, expression: str) -> Any:
        """The expression's value (awaited if it is a promise), as JSON."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 30) -> Any:
        """Until ``expression`` is truthy; its value (true for an element). Fails with the
        page's console."""
        probe = f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := self.eval(probe):
                return value
            time.sleep(0.05)
        raise CdpError(f"not true after {timeout} s: {expression}\nconsole: "
                       f"{self.browser.console}")

    def fill(self, selector: str, text: str) -> None:
        """Types ``text`` into a field as a user would (input events included)."""
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        self.eval(f"document.querySelector({json.dumps(selector)}).select?.()")
        self.call("Input.insertText", {"text": text})

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.wait(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
            if (!el) return null; el.scrollIntoView({{block: "center"}});
            const r = el.getBoundingClientRect();
            return r.width ? {{x: r.x + r.width / 2, y: r.y + r.height / 2}} : null; }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", {"format": "png",
                                                    "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path
