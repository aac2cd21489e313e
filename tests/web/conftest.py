"""Browser fixtures: Debian's Chromium driven by Playwright, a live ``igym serve``, screenshots.

Skipped without Chromium or Playwright (the ``browser`` extra); with IGYM_REQUIRE_SERVICES=1 (CI)
their absence is a failure. Every page fails its test on a console error, an uncaught exception
or horizontal overflow, and each screenshot's page on a repeated id or an id reference that points
nowhere. Screenshots go to ``<pytest's base temp>/screenshots``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from integrity_gym.server.security import ADMIN_HEADER
from tests.conftest import require_service

#: The two windows every page is checked in: a laptop and a phone.
VIEWPORTS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}


#: Every id used once; every id reference (``for=``, ``aria-labelledby`` ...) names an element that
#: exists and sits in the same run column (``[data-run]``) as the reference, or both in none.
_ID_AUDIT = """() => {
  const counts = new Map();
  for (const node of document.querySelectorAll('[id]')) counts.set(node.id, (counts.get(node.id) || 0) + 1);
  const problems = [...counts].filter(([id, n]) => n > 1 || !/^\\S+$/.test(id)).map(([id, n]) => `id "${id}" x${n}`);
  const attrs = ['for', 'aria-labelledby', 'aria-describedby', 'aria-controls'];
  for (const node of document.querySelectorAll(attrs.map((a) => `[${a}]`).join(','))) {
    for (const attr of attrs) {
      for (const id of (node.getAttribute(attr) || '').split(/\\s+/).filter(Boolean)) {
        const target = document.getElementById(id);
        if (!target) problems.push(`${attr}="${id}" names no element`);
        else if (target.closest('[data-run]') !== node.closest('[data-run]')) {
          problems.push(`${attr}="${id}" names an element of another column`);
        }
      }
    }
  }
  return [counts.size, problems];
}"""


def assert_sound_ids(page: Any) -> int:
    """Fail on a repeated id or a dangling id reference on ``page``; the number of ids it holds."""
    count, problems = page.evaluate(_ID_AUDIT)
    assert problems == [], problems
    return int(count)


def chromium_path() -> str | None:
    """The system Chromium (Debian's ``chromium`` package), if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session (Playwright's own browser download is never used)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_service(False, "Playwright (pip install 'integrity-gym[browser]')")
    executable = chromium_path()
    require_service(executable is not None, "Chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        # As root in a container: no sandbox, and /tmp instead of a small /dev/shm.
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of this session's screenshots (the test artifacts)."""
    folder = tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(exist_ok=True)
    return folder


class Watched:
    """A page with its console errors, uncaught exceptions and requests recorded."""

    def __init__(self, page: Any, viewport: str, screenshots: Path) -> None:
        self.page = page
        self.viewport = viewport
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.allowed: list[str] = []
        #: Requests that presented a token (the pages never should: they know none).
        self.credentials: list[str] = []
        self.folder = screenshots
        page.on(
            "console",
            lambda msg: self.errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None,
        )
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        page.on("request", self._record)

    def _record(self, request: Any) -> None:
        self.requests.append(f"{request.method} {request.url}")
        headers = request.headers
        if "authorization" in headers or ADMIN_HEADER in headers:
            self.credentials.append(request.url)

    def shot(self, name: str, *, full_page: bool = False) -> Path:
        """Save a screenshot ``<name>-<viewport>.png``; fail on sideways overflow or a leaked JS placeholder."""
        self.assert_no_overflow()
        self.assert_no_placeholders()
        assert_sound_ids(self.page)
        path = self.folder / f"{name}-{self.viewport}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def assert_no_overflow(self) -> None:
        """Nothing wider than the window: no sideways scrolling of the whole page."""
        widths = self.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"

    def assert_no_placeholders(self) -> None:
        """No missing value printed as JavaScript spells it (undefined, null, NaN, [object Object])."""
        words = set(re.findall(r"\[object Object\]|\b(?:undefined|null|NaN)\b", self.page.inner_text("body")))
        assert not words, f"the page shows {sorted(words)}"

    def allow(self, status: int) -> None:
        """Expect the browser's own console line for a reply of ``status`` (a refusal the test provokes)."""
        self.allowed.append(f"the server responded with a status of {status} ")

    def assert_clean(self) -> None:
        """No console error and no uncaught exception happened on the page (but the allowed ones)."""
        errors = [e for e in self.errors if not any(a in e for a in self.allowed)]
        assert errors == [], "\n".join(errors)


@pytest.fixture
def open_page(browser: Any, screenshots: Path) -> Iterator[Callable[[str], Watched]]:
    """Open pages in fresh browser contexts of a viewport; each must end without console errors."""
    opened: list[tuple[Any, Watched]] = []

    def make(viewport: str = "desktop") -> Watched:
        context = browser.new_context(**VIEWPORTS[viewport])
        context.set_default_timeout(20_000)
        watched = Watched(context.new_page(), viewport, screenshots)
        opened.append((context, watched))
        return watched

    yield make
    for context, watched in opened:
        try:
            watched.assert_clean()
        finally:
            context.close()
