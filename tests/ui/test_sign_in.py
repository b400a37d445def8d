"""Signing in with wrong passwords in a real browser: the 5th pauses sign-in, and the page
says until when (issue 25). Screenshots: test-output/screenshots/locked-out-*.png."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.ui.browsing import PASSWORD, person, shoot


@pytest.fixture
def alice(transactional_db):
    return person()


def test_wrong_passwords_pause_sign_in_and_the_page_says_until_when(site, page, alice):
    page.goto(f"{site}/login/")
    for _ in range(settings.ARBOR_LOGIN_FAILURES - 1):
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill("not it")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("Wrong username or password")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("not it")
    with page.expect_response(re.compile(r"/login/$")) as answer:
        page.get_by_role("button", name="Sign in").click()

    assert answer.value.status == 429
    expect(page.get_by_role("heading", name="Sign-in paused")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text(re.compile(r"Try again at \d\d:\d\d UTC"))
    shoot(page, "locked-out")

    # The right password waits too; the link leads back to the form.
    page.get_by_role("link", name="Back to sign in").click()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sign-in paused")).to_be_visible()
    # chromium logs each 429 as a failed load; nothing else went wrong
    assert [e for e in page.console_errors if "status of 429" not in e] == []
