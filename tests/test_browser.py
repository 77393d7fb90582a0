"""A real browser opens a report: no console errors, every plot visible, hostile labels shown as text.

Drives Debian's headless Chromium over the DevTools protocol with a small stdlib websocket
client (no extra packages): console messages, exceptions, log errors (failed loads) and
JavaScript dialogs are collected as events; each plot is located in the laid-out page and
screenshotted on its own, and the screenshot must not be blank. A positive control first
proves the harness sees a console error and a dialog when a page does produce them.
"""
from __future__ import annotations

import base64
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_report import XSS, make_demo_store  # noqa: E402

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-allow-origins=*", "--window-size=1280,900", "--hide-scrollbars"]


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: masked text frames out, (fragmented) frames in."""

    def __init__(self, url: str, timeout: float = 30.0):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise ConnectionError(f"websocket handshake refused: {status[:200]!r}")
        self.buf = rest

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text: str, opcode: int = 1) -> None:
        payload = text.encode() if isinstance(text, str) else text
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 9:  # ping
                self.send(data, opcode=10)
                continue
            if opcode == 8:
                raise ConnectionError("websocket closed by the browser")
            message += data
            if fin:
                return message.decode()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Browser:
    """Headless Chromium with a DevTools connection to its first page; records every event."""

    def __init__(self, exe: str, profile: Path):
        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + 30
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.time() > deadline:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.poll() is not None else ""
                self.quit()
                raise RuntimeError(f"chromium did not start a DevTools endpoint: {err}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        deadline = time.time() + 15
        while True:
            try:
                targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5).read())
                page = next(t for t in targets if t.get("type") == "page")
                break
            except (OSError, StopIteration):
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, timeout: float = 30.0, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        deadline = time.time() + timeout
        while time.time() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == "Page.javascriptDialogOpening":
                    self.ws.send(json.dumps({"id": 0, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}))
        raise TimeoutError(method)

    def wait_event(self, name: str, timeout: float = 30.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for e in self.events:
                if e["method"] == name:
                    return e
            self.call("Runtime.evaluate", expression="1")  # pumps pending events
            time.sleep(0.05)
        raise TimeoutError(name)

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        self.call("Runtime.evaluate", expression="new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))", awaitPromise=True)

    def evaluate(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def problems(self):
        """Console calls, exceptions, error log entries and dialogs seen since the last open()."""
        bad = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled":
                bad.append(f"console.{p.get('type')}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
            elif m == "Runtime.exceptionThrown":
                bad.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                bad.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Page.javascriptDialogOpening":
                bad.append(f"dialog: {p.get('type')} {p.get('message')}")
        return bad

    def screenshot(self, x: float, y: float, w: float, h: float) -> bytes:
        res = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": x, "y": y, "width": w, "height": h, "scale": 1})
        return base64.b64decode(res["data"])

    def quit(self) -> None:
        try:
            if getattr(self, "ws", None):
                try:
                    self.ws.send(json.dumps({"id": 10**6, "method": "Browser.close", "params": {}}))
                except OSError:
                    pass
                self.ws.close()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _pixels(png: bytes):
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    gray = img.mean(axis=2)
    return float(np.std(gray)), float((gray < 0.9).mean())


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); the browser test needs a real browser")
    b = Browser(exe, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.quit()


def test_harness_sees_errors_and_dialogs(browser, tmp_path):
    """Positive control: the checks below would catch a script that ran."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><p>x</p><script>console.error('boom'); alert('hi')</script></body></html>")
    browser.open(page.as_uri())
    problems = browser.problems()
    assert any("console.error" in p and "boom" in p for p in problems), problems
    assert any(p.startswith("dialog: alert") for p in problems), problems


def test_report_in_a_real_browser(browser, tmp_path):
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report

    store, edr, fdr, imported = make_demo_store(tmp_path / "demo.db")
    report = report_of(store, [edr.id, fdr.id, imported.id])
    path = write_report(report, tmp_path / "report.html")
    browser.open(path.as_uri())

    assert browser.problems() == []
    info = browser.evaluate("""(() => {
        const imgs = Array.from(document.images).map(i => {
            const r = i.getBoundingClientRect(), s = getComputedStyle(i);
            return {slug: i.dataset.slug, complete: i.complete, nw: i.naturalWidth, nh: i.naturalHeight,
                    x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
                    visible: s.display !== 'none' && s.visibility !== 'hidden' && parseFloat(s.opacity) > 0};
        });
        return {scripts: document.querySelectorAll('script').length, imgs: imgs, title: document.title,
                text: document.body.innerText, height: document.documentElement.scrollHeight};
    })()""")
    assert info["scripts"] == 0
    assert info["title"] == "fabricbench report"
    # the hostile label is on the page as text, not as an element
    assert XSS in info["text"] and "<b>lab</b>" in info["text"] and "<img src=x onerror=alert(2)>" in info["text"]

    assert len(info["imgs"]) == len(report.figures()) >= 11
    for img in info["imgs"]:
        assert img["complete"] and img["nw"] > 100 and img["nh"] > 100, img
        assert img["visible"] and img["w"] > 300 and img["h"] > 100, img
        std, ink = _pixels(browser.screenshot(img["x"], img["y"], img["w"], img["h"]))
        assert std > 0.05 and ink > 0.01, f"plot {img['slug']} looks blank (std {std:.3f}, ink {ink:.3f})"
    assert browser.problems() == []
