"""Browser tests: Playwright drives Debian's chromium against a real daphne server.

Playwright never downloads a browser here (no `playwright install`): `make test` installs
Debian's chromium when /usr/bin/chromium is missing. Without it, CI fails and a laptop
skips. A test asks for `site` (the base URL of a fresh server on the test database, DEBUG
off as in production) and `page` (a new browser tab that records console errors):

    def test_home(site, page):
        page.goto(site + "/")
        assert page.console_errors == []
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.live_server import running_daphne

# A shared CI machine can be slow: assertions wait as long as actions do.
expect.set_options(timeout=15_000)

CHROMIUM = Path("/usr/bin/chromium")


def _need_chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need {CHROMIUM}: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} is not installed (make test installs it)")


@pytest.fixture(autouse=True)
def _django_beside_playwright(monkeypatch: pytest.MonkeyPatch) -> None:
    # Playwright's sync API keeps an event loop running in this thread, so Django would
    # refuse the test's own database work (and the flush after it) as "async unsafe".
    # The test thread is still plain synchronous code, so allow it here only.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# Per module, so the event loop Playwright runs is gone before tests outside tests/ui.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI and containers run as root, where chromium's sandbox refuses.
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def site(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """Base URL of daphne serving the app with DEBUG off, on the test database."""
    with running_daphne(tmp_path, env={"ARBOR_DEBUG": "0"}) as base:
        yield base


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab; `page.console_errors` lists console errors and uncaught exceptions."""
    context = browser.new_context()
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.console_errors = errors
    tab.set_default_timeout(15_000)
    yield tab
    context.close()
