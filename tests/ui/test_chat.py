"""The chat UI in a real browser (SPEC §11): Debian's chromium against daphne, live over
the WebSocket, on the test database (SQLite or Postgres, whichever the suite runs on).

The offline demo model answers; ARBOR_DEMO_STREAM_DELAY slows its stream so it can be
watched and stopped. Screenshots of the main screens (light and dark, desktop and 375 px)
go to test-output/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from memory_core import SessionManager
from sessions_app.auth import create_key
from tests.conftest import make_agent
from tests.live_server import running_daphne
from tests.ui.browsing import asked, login, person, shoot


def serve(tmp_path: Path, delay: float = 0.01) -> Any:
    return running_daphne(tmp_path, env={"ARBOR_DEBUG": "0",
                                         "ARBOR_DEMO_STREAM_DELAY": str(delay)})


@pytest.fixture
def site(transactional_db, tmp_path) -> Iterator[str]:
    with serve(tmp_path) as base:
        yield base


@pytest.fixture
def alice(transactional_db) -> dict[str, Any]:
    return person()


def messages(page: Any) -> Any:
    return page.locator("#thread article.message")


def send(page: Any, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")


def wait_idle(page: Any) -> None:
    """The turn is over and its answer rendered (call after the turn's first message is
    on screen: a page that has not heard of the turn yet is idle too)."""
    expect(page.locator("article.streaming")).to_have_count(0)
    expect(page.locator("main.chat")).to_have_attribute("data-session-status", "idle")
    expect(page.locator("#composer .send")).to_be_enabled()


def test_log_in_create_a_session_send_and_see_the_streamed_answer(site, page, alice):
    alice["manager"].create("Older session")
    login(page, site)
    shoot(page, "home")
    page.get_by_label("Name", exact=True).fill("Planning")
    page.get_by_role("button", name="New session").click()
    expect(page.get_by_role("heading", name="Planning")).to_be_visible()
    send(page, "remember that I like green tea")
    expect(messages(page)).to_have_count(3)  # question, tool call with its result, answer
    wait_idle(page)
    expect(messages(page).last).to_contain_text("green tea")
    assert page.locator("article[data-role=user]").first.get_attribute("id").startswith("m-")
    send(page, "what do you remember?")
    expect(messages(page)).to_have_count(5)
    wait_idle(page)
    expect(messages(page).last).to_contain_text("green tea")
    expect(page.locator(".meta .model")).to_contain_text("offline demo model")
    shoot(page, "chat")
    assert page.console_errors == []


def test_regenerate_twice_then_switch_between_the_three_answers(site, page, alice):
    sid = alice["manager"].create("Branches").id
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    send(page, "hello there")
    expect(messages(page)).to_have_count(2)
    wait_idle(page)
    for n in (2, 3):
        messages(page).last.get_by_role("button", name="Regenerate").click()
        expect(messages(page).last.locator(".counter")).to_have_text(f"{n}/3" if n == 3 else "2/2")
        wait_idle(page)
    answer = messages(page).last
    expect(answer.locator(".counter")).to_have_text("3/3")
    expect(answer.get_by_role("button", name="Next branch")).to_be_disabled()
    texts = {answer.locator(".content").inner_text()}
    for expected in ("2/3", "1/3"):
        messages(page).last.get_by_role("button", name="Previous branch").click()
        expect(messages(page).last.locator(".counter")).to_have_text(expected)
        texts.add(messages(page).last.locator(".content").inner_text())
    expect(messages(page).last.get_by_role("button", name="Previous branch")).to_be_disabled()
    assert "leaf=" in page.url
    assert len(texts) == 3  # the demo model's variants differ from each other
    page.reload()  # the branch survives a reload: it is in the URL
    expect(messages(page).last.locator(".counter")).to_have_text("1/3")
    shoot(page, "branches")
    assert page.console_errors == []


def test_edit_in_place_and_send_as_new_branch(site, page, alice):
    sid = alice["manager"].create("Edits").id
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    send(page, "first question")
    expect(messages(page)).to_have_count(2)
    wait_idle(page)
    first = page.locator("article[data-role=user]").first
    first.get_by_role("button", name="Edit").click()
    first.get_by_label("Edit message").fill("first question, fixed")
    first.get_by_role("button", name="Save").click()
    expect(page.locator("article[data-role=user]").first).to_contain_text("first question, fixed")
    first = page.locator("article[data-role=user]").first
    first.get_by_role("button", name="Edit").click()
    first.get_by_label("Edit message").fill("a different first question")
    first.get_by_role("button", name="Send as new branch").click()
    expect(page.locator("article[data-role=user]").first).to_contain_text("a different first")
    wait_idle(page)
    # A second root: the switcher counts roots as siblings.
    expect(page.locator("article[data-role=user]").first.locator(".counter")).to_have_text("2/2")
    expect(messages(page)).to_have_count(2)
    assert page.console_errors == []


def test_fork_from_a_middle_message_opens_the_new_session(site, page, alice):
    manager = alice["manager"]
    sid = manager.create("Long").id
    ids = [m.id for m in manager.append_all(sid, [
        {"role": "user", "content": f"message {i}"} if i % 2 == 0 else
        {"role": "assistant", "content": f"answer {i}"} for i in range(6)])]
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#m-{ids[2]}").get_by_role("button", name="Fork from here").click()
    expect(page).not_to_have_url(re.compile(sid))
    expect(messages(page)).to_have_count(3)
    expect(messages(page).last).to_contain_text("message 2")
    assert page.console_errors == []


def test_stop_keeps_the_partial_answer_marked_interrupted(transactional_db, tmp_path, browser,
                                                          alice):
    sid = alice["manager"].create("Stop").id
    with serve(tmp_path, delay=0.3) as site:
        page = browser.new_page()
        login(page, site)
        page.goto(f"{site}/sessions/{sid}/")
        send(page, "tell me everything")
        expect(page.locator("main.chat")).to_have_attribute("data-session-status", "thinking")
        expect(page.locator("article.streaming")).to_be_visible()
        page.get_by_role("button", name="Stop").click()
        wait_idle(page)
        answer = messages(page).last
        expect(answer).to_contain_text("interrupted")
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
        page.close()


def test_an_api_append_and_a_second_tab_show_up_live(site, page, alice, browser):
    sid = alice["manager"].create("Live").id
    key = create_key(alice["user"])[1]
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    expect(page.locator("#thread")).to_be_visible()
    page.wait_for_timeout(300)  # the socket is open
    response = httpx.post(f"{site}/api/v1/sessions/{sid}/messages",
                          headers={"Authorization": f"Bearer {key}"},
                          json={"message": {"role": "user", "content": "from an agent"}})
    assert response.status_code == 201
    expect(messages(page)).to_have_count(1)
    expect(messages(page).first).to_contain_text("from an agent")

    other = page.context.new_page()
    other.goto(f"{site}/sessions/{sid}/")
    send(other, "from the second tab")
    expect(page.locator("article[data-role=user]", has_text="from the second tab")).to_be_visible()
    wait_idle(page)
    expect(messages(page)).to_have_count(3)
    other.close()
    assert page.console_errors == []


def test_search_jumps_to_a_message_on_a_branch_that_is_not_the_latest(site, page, alice):
    manager = alice["manager"]
    sid, q, (a1, _) = asked(manager, "Search", "pick a fruit", "A pomegranate.", "A banana.")
    login(page, site)
    page.get_by_label("Search all sessions").fill("pomegranate")
    hit = page.locator(".search-results a").first
    expect(hit.locator("mark")).to_have_text(re.compile("pomegranate", re.I))

    def results_on_screen(size: str, scheme: str) -> None:
        menu = page.get_by_role("button", name="Sessions")  # the phone's drawer holds them
        if size == "phone" and menu.get_attribute("aria-expanded") == "false":
            menu.click()
        expect(hit).to_be_visible()

    shoot(page, "search", results_on_screen)
    hit.click()
    expect(page).to_have_url(re.compile(rf"leaf={a1.id}#m-{a1.id}$"))
    expect(page.locator(f"#m-{a1.id}")).to_be_visible()
    expect(page.locator(f"#m-{a1.id} .counter")).to_have_text("1/2")
    assert page.console_errors == []


def test_xss_payloads_are_rendered_as_text(site, page, alice):
    sid = alice["manager"].create("<img src=x onerror=alert(1)>").id
    alice["manager"].append_all(sid, [
        {"role": "user", "content": "<script>window.pwned = 1</script> and <img src=x onerror=window.pwned=2>"},
        {"role": "assistant", "content": "[click](javascript:window.pwned=3) `<b>code</b>`"},
    ])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    expect(messages(page)).to_have_count(2)
    expect(messages(page).first).to_contain_text("<script>window.pwned = 1</script>")
    assert page.evaluate("window.pwned") is None
    assert page.locator("#thread script, #thread img").count() == 0
    assert page.locator("#thread a[href^=javascript]").count() == 0
    expect(page.get_by_role("heading", level=1)).to_have_text("<img src=x onerror=alert(1)>")


def test_another_users_session_is_404(site, page, alice):
    theirs = SessionManager.for_agent(make_agent("bob", "Bob's")).create("private").id
    login(page, site)
    response = page.goto(f"{site}/sessions/{theirs}/")
    assert response.status == 404
    assert "private" not in page.content()


def test_compact_now_shows_a_summary_that_opens_and_can_be_undone(site, page, alice):
    manager = alice["manager"]
    sid = manager.create("Long trip").id
    text = "We discussed the trip to Lisbon, the hotel near Alfama and the tram 28. " * 40
    manager.append_all(sid, [{"role": "user" if i % 2 == 0 else "assistant",
                              "content": f"{i}: {text}"} for i in range(60)])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    page.get_by_role("button", name="Compact now").click()
    marker = page.locator("section.overlay")
    expect(marker).to_have_count(1)
    wait_idle(page)
    expand = marker.get_by_role("button", name=re.compile(r"Summary of \d+ messages"))
    expect(marker.locator(".originals")).to_be_hidden()
    expand.click()
    expect(marker.locator(".originals article.message").first).to_be_visible()
    expect(expand).to_have_attribute("aria-expanded", "true")
    expand.click()
    expect(marker.locator(".originals")).to_be_hidden()
    shoot(page, "compaction")
    page.once("dialog", lambda dialog: dialog.accept())
    marker.get_by_role("button", name="Undo this summary").click()
    expect(page.locator("section.overlay")).to_have_count(0)
    assert alice["manager"].get_session(sid).get_compactions() == []
    assert page.console_errors == []


def test_keyboard_shortcuts(site, page, alice):
    manager = alice["manager"]
    sid, q, (a1, a2) = asked(manager, "Keys", "pick a colour", "Blue.", "Green.")
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    page.keyboard.press("Control+k")
    expect(page.get_by_label("Search all sessions")).to_be_focused()
    page.locator("body").click()
    page.keyboard.press("?")
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_hidden()
    page.locator(f"#m-{a2.id}").focus()
    page.keyboard.press("Alt+ArrowLeft")  # previous branch of the focused message
    expect(page.locator(f"#m-{a1.id} .counter")).to_have_text("1/2")
    page.keyboard.press("Alt+ArrowRight")
    expect(page.locator(f"#m-{a2.id} .counter")).to_have_text("2/2")
    assert page.console_errors == []
