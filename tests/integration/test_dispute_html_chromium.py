"""The dispute HTML report in a real browser: Debian's headless Chromium, driven over the DevTools
Protocol on ``--remote-debugging-pipe`` (no port, no network: the page is a local file).

At 1280×900, as an analyst opens it: the verdict and the first failure are inside the first
viewport, nothing scrolls horizontally, headings are in order, and every piece of text meets the
WCAG 2.x AA contrast ratio against the background it is drawn on.  The page itself carries no
script; the measurements run through DevTools ``Runtime.evaluate``.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import select
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT

WIDTH, HEIGHT = 1280, 900
_DEADLINE = 60.0

#: Chromium flags: headless, no sandbox (containers), nothing that phones home.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    f"--window-size={WIDTH},{HEIGHT}",
)

#: Measures the page (runs in DevTools, not in the page: the page's CSP allows no script).
MEASURE = r"""
(() => {
  const inView = (el) => { const r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, inside: r.top >= 0 && r.bottom <= window.innerHeight}; };
  const rgba = (text) => { const m = text.match(/[\d.]+/g).map(Number);
    return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const background = (el) => { for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor); if (c.a > 0) return c; }
    return {r: 255, g: 255, b: 255, a: 1}; };
  const lowContrast = [];
  for (const el of document.body.querySelectorAll("*")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    const fg = rgba(style.color), bg = background(el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    if (ratio < (large ? 3 : 4.5)) lowContrast.push({tag: el.tagName, text: el.textContent.slice(0, 40), ratio});
  }
  const headings = [...document.querySelectorAll("h1,h2,h3,h4,h5,h6")].map((h) => Number(h.tagName[1]));
  const failure = document.querySelector(".failure");
  return {
    viewport: [window.innerWidth, window.innerHeight],
    scrollWidth: document.documentElement.scrollWidth,
    verdict: inView(document.getElementById("verdict")),
    verdictText: document.getElementById("verdict").innerText,
    firstFailure: failure ? inView(failure) : null,
    firstFailureText: failure ? failure.innerText : null,
    headings, lowContrast,
    scripts: document.scripts.length,
  };
})()
"""


class DevTools:
    """A minimal Chrome DevTools Protocol client over the pipe (fd 3: commands in, fd 4: out)."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child, before exec: the pipe ends at fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire_pipes,  # noqa: PLW1509 - single-threaded here; needed to place fds 3/4
            pass_fds=(3, 4),  # kept open across exec (the ends wire_pipes placed there)
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[str] = []
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        for reply in self._messages():
            if "method" in reply:
                self._events.append(reply["method"])  # e.g. a load event that beats the reply
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
        raise AssertionError("the browser closed the pipe")

    def wait_for(self, event: str) -> None:
        if event in self._events:
            return
        for message in self._messages():
            if message.get("method") == event:
                return

    def _messages(self) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + _DEADLINE
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                yield json.loads(raw)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], remaining)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    return
                self._buffer += chunk

    def close(self) -> None:
        try:
            self.session = None
            self.send("Browser.close")
        except (AssertionError, OSError):
            pass
        finally:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            os.close(self._to_browser)
            os.close(self._from_browser)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    return path


def _report(tmp_path: Path) -> Path:
    """The HTML report of a bundle whose amount was raised after the user signed it."""
    document = json.loads(BUNDLE.read_text())
    total = document["mandates"]["payment"]["payment_mandate_contents"]["payment_details_total"]
    total["amount"]["value"] = 1384.90
    bundle = tmp_path / "tampered.json"
    bundle.write_text(json.dumps(document))
    html = tmp_path / "report.html"
    argv = ["dispute", "verify", str(bundle), "--trust-root", str(TRUST_ROOT), "--kb-nonce", NONCE]
    assert main([*argv, "--html", str(html)]) == 1
    return html


def test_the_report_reads_right_in_headless_chromium(chromium: str, tmp_path: Path) -> None:
    html = _report(tmp_path)
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        targets = browser.send("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        browser.session = browser.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )["sessionId"]
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        browser.send("Page.enable")
        browser.send("Page.navigate", {"url": html.as_uri()})
        browser.wait_for("Page.loadEventFired")
        shot = browser.send("Page.captureScreenshot", {"format": "png"})["data"]
        measured = browser.send("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True})["result"][
            "value"
        ]
    finally:
        browser.close()
    screenshot = base64.b64decode(shot)
    (tmp_path / "report.png").write_bytes(screenshot)
    assert _png_size(screenshot) == (WIDTH, HEIGHT)
    assert measured["viewport"] == [WIDTH, HEIGHT]
    assert measured["scripts"] == 0
    # The verdict and the first failure are on the first screen.
    assert measured["verdict"]["inside"], measured["verdict"]
    assert "Verdict: FAILED" in measured["verdictText"]
    assert measured["firstFailure"] is not None
    assert measured["firstFailure"]["inside"], measured["firstFailure"]
    assert "the payment contents changed after the user signed them" in measured["firstFailureText"]
    # Nothing scrolls sideways.
    assert measured["scrollWidth"] <= WIDTH
    # Headings in order: one h1 first, never a level skipped.
    levels = measured["headings"]
    assert levels[0] == 1
    assert levels.count(1) == 1
    assert all(after <= before + 1 for before, after in itertools.pairwise(levels))
    # WCAG AA: 4.5:1 for text, 3:1 for large text.
    assert measured["lowContrast"] == []
