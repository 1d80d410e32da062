"""Headless Chromium driven over the Chrome DevTools Protocol, for the viewer's browser tests (no tests here).

:class:`Chromium` starts the browser on a fresh profile with the protocol on a free loopback port, attaches to its
page over a websocket (the ``websockets`` package, which viser brings) and offers what a test does as a user would:
open an address, wait for something on the page, press keys, take screenshots, read the page with JavaScript. The
browser and every process it started end with :meth:`Chromium.close`. Software WebGL on a loaded 2-core machine is
slow, so every wait has a generous cap (``timeout``, s) and fails with what it waited for.
"""

from __future__ import annotations

import base64
import ctypes
import io
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

TIMEOUT = 300.0  # s: the cap on one wait (start, page load, a redraw) on a loaded machine
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


class Chromium:
    """A headless Chromium with one page of ``size`` (width, height) px, profile in ``profile``."""

    def __init__(self, executable: str, profile: Path, size: tuple[int, int] = (1200, 800),
                 timeout: float = TIMEOUT) -> None:
        self.timeout = timeout
        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "--remote-debugging-port=0",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=_killed_with_the_test)
        self._id = 0
        try:
            port = self.wait_until(lambda: _port(profile / "DevToolsActivePort"), "Chromium's DevTools port")
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=timeout) as answer:
                page = next(t for t in json.load(answer) if t["type"] == "page")
            from websockets.sync.client import connect

            self.socket = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout)
        except BaseException:
            self._end()
            raise

    def wait_until(self, probe, what: str, timeout: float | None = None) -> Any:
        """The first truthy value of ``probe()``, tried every 0.2 s; AssertionError naming ``what`` after the cap."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = probe()
            if value:
                return value
            assert time.monotonic() < deadline, f"gave up waiting for {what}"
            time.sleep(0.2)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command's result (events arriving meanwhile are dropped)."""
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=self.timeout))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, what: str) -> Any:
        """The first truthy value of a JavaScript expression, polled."""
        return self.wait_until(lambda: self.evaluate(expression), what)

    def press(self, key: str, code: int, times: int = 1) -> None:
        """Press and release a key (DOM ``key`` name, Windows virtual key ``code``) on the focused element."""
        for _ in range(times):
            for kind in ("keyDown", "keyUp"):
                self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code)

    def click(self, x: float, y: float) -> None:
        """A left click at page point (x, y) px (the pointer moved there first)."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=float(x), y=float(y), clickCount=1,
                      button="none" if kind == "mouseMoved" else "left")

    def box(self, selector: str) -> np.ndarray:
        """(x, y, width, height) px of the first element matching a CSS selector."""
        return np.array(self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                                      ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()"))

    def screenshot(self) -> np.ndarray:
        """The page as (height, width, 3) RGB in [0, 1]."""
        import matplotlib.image

        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        return matplotlib.image.imread(io.BytesIO(data), format="png")[..., :3]

    def settled_screenshot(self, shots: int = 3, interval: float = 1.0) -> np.ndarray:
        """A screenshot equal to the ``shots - 1`` taken before it, ``interval`` s apart: the page has finished
        drawing (viser fades its scene in; software WebGL on a loaded machine can pause between frames)."""
        deadline = time.monotonic() + self.timeout
        previous, same = self.screenshot(), 1
        while same < shots:
            time.sleep(interval)
            current = self.screenshot()
            same = same + 1 if np.array_equal(current, previous) else 1
            previous = current
            assert time.monotonic() < deadline, "gave up waiting for the page to stop changing"
        return previous

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            self._end()

    def _end(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _killed_with_the_test() -> None:
    """In the browser's process before it runs Chromium: SIGKILL when the test process that started it ends, so a
    test run killed by a timeout (no :meth:`Chromium.close`) does not leave a browser drawing on the machine."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def screen_point(point: np.ndarray, camera_position: np.ndarray, camera_wxyz: np.ndarray, fov: float,
                 canvas: np.ndarray) -> np.ndarray:
    """(x, y) page px where a pinhole camera draws world ``point`` (3,) m onto ``canvas`` (x, y, width, height) px:
    ``camera_wxyz`` the world <- camera rotation in viser's (OpenCV) convention, +z forward, +x right, +y down;
    ``fov`` the vertical field of view, rad."""
    from scipy.spatial.transform import Rotation

    rotation = Rotation.from_quat(np.roll(camera_wxyz, -1)).as_matrix()  # scipy takes x, y, z, w
    x, y, z = rotation.T @ (np.asarray(point, float) - camera_position)
    assert z > 0, "the point is behind the camera"
    focal = canvas[3] / 2 / np.tan(fov / 2)  # px
    return canvas[:2] + canvas[2:] / 2 + focal * np.array([x, y]) / z


def _port(path: Path) -> str | None:
    """The DevTools port Chromium writes into its profile once it listens (None before)."""
    lines = path.read_text().split() if path.exists() else []
    return lines[0] if len(lines) >= 2 else None
