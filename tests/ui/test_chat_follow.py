"""The chat page follows the session and remembers the reader (issue 29, defects 4-7):
a finished answer's action row stays in view, a session reopens on the branch the person
was on (kept on the server: another browser opens there too), what describes the session
(sidebar count and name, the header's usage) follows live events, code blocks have a
language label and a Copy button.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from sessions_app import models
from sessions_app.auth import create_key
from tests.live_server import running_daphne
from tests.ui.browsing import asked, login, person, sign_in


@pytest.fixture
def site(transactional_db, tmp_path) -> Iterator[str]:
    with running_daphne(tmp_path, env={"ARBOR_DEBUG": "0",
                                       "ARBOR_DEMO_STREAM_DELAY": "0.01"}) as base:
        yield base


@pytest.fixture
def alice(transactional_db) -> dict[str, Any]:
    return person()


def send(page: Any, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")


def wait_idle(page: Any) -> None:
    expect(page.locator("article.streaming")).to_have_count(0)
    expect(page.locator("main.chat")).to_have_attribute("data-session-status", "idle")
    expect(page.locator("#composer .send")).to_be_enabled()


def test_a_finished_answer_keeps_its_actions_above_the_composer(site, page, alice):
    manager = alice["manager"]
    sid = manager.create("Scrolling").id
    manager.append_all(sid, [{"role": "user" if i % 2 == 0 else "assistant",
                              "content": f"message {i} " + "words " * 30} for i in range(30)])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    # As in a browser without scroll anchoring (Safari): the page itself must follow.
    page.evaluate("""document.querySelectorAll('html, body, .layout, main, #thread')
        .forEach((el) => { el.style.overflowAnchor = 'none'; })""")
    send(page, "what do you remember?")  # a one-line answer: its final render adds the actions
    expect(page.locator("article[data-role=user]", has_text="what do you remember")).to_be_visible()
    # Whether the bottom is in view on the frame after the answer's final render.
    page.evaluate("""() => { window.atBottom = [];
      new MutationObserver((records) => {
        const done = records.some((r) => Array.from(r.addedNodes).some((n) =>
          n.matches && n.matches('article.message') && n.querySelector('.regenerate')));
        if (done) requestAnimationFrame(() => window.atBottom.push(
          window.innerHeight + window.scrollY >= document.body.scrollHeight - 2));
      }).observe(document.getElementById('thread'), { childList: true }); }""")
    wait_idle(page)
    answer = page.locator("#thread article.message").last
    expect(answer).to_contain_text("memory")
    page.wait_for_function("window.atBottom.length > 0")
    assert all(page.evaluate("window.atBottom"))
    regenerate = answer.get_by_role("button", name="Regenerate")
    expect(regenerate).to_be_in_viewport()
    page.wait_for_timeout(300)
    button, composer = regenerate.bounding_box(), page.locator("#composer").bounding_box()
    assert button["y"] + button["height"] <= composer["y"]
    assert page.console_errors == []


def test_a_session_reopens_on_the_branch_the_person_was_on(site, page, alice, browser):
    manager = alice["manager"]
    sid = manager.create("Branches").id
    other = manager.create("Another").id
    q1 = manager.append(sid, {"role": "user", "content": "first question"}, root=True)
    a1, a2, a3 = (manager.append(sid, {"role": "assistant", "content": f"answer {n}"},
                                 parent_id=q1.id) for n in (1, 2, 3))
    q2 = manager.append(sid, {"role": "user", "content": "second question"}, root=True)
    b1 = manager.append(sid, {"role": "assistant", "content": "answer b"}, parent_id=q2.id)
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    expect(page.locator(f"#m-{q2.id} .counter")).to_have_text("2/2")
    page.locator(f"#m-{q2.id} .branch-prev").click()
    expect(page.locator(f"#m-{a3.id} .counter")).to_have_text("3/3")
    page.locator(f"#m-{a3.id} .branch-prev").click()
    page.locator(f"#m-{a2.id} .branch-prev").click()
    expect(page.locator(f"#m-{a1.id} .counter")).to_have_text("1/3")
    page.locator(".nav-sessions").get_by_role("link", name="Another").click()
    expect(page.get_by_role("heading", name="Another")).to_be_visible()
    page.locator(".nav-sessions").get_by_role("link", name="Branches").click()
    expect(page.locator(f"#m-{a1.id} .counter")).to_have_text("1/3")
    expect(page.locator(f"#m-{q1.id} .counter")).to_have_text("1/2")
    row = models.LastLeaf.objects.get(user=alice["user"], session_id=sid)
    assert row.leaf_id == a1.id

    # Another device (a new browser context, so no shared login session) opens there too.
    laptop = browser.new_context().new_page()
    laptop.goto(f"{site}/sessions/{sid}/")
    sign_in(laptop, "alice")
    expect(laptop.locator(f"#m-{a1.id} .counter")).to_have_text("1/3")
    # `?leaf=` wins, and becomes the place.
    laptop.goto(f"{site}/sessions/{sid}/?leaf={b1.id}")
    expect(laptop.locator(f"#m-{b1.id}")).to_be_visible()
    laptop.context.close()
    page.goto(f"{site}/sessions/{other}/")
    page.goto(f"{site}/sessions/{sid}/")
    expect(page.locator(f"#m-{b1.id}")).to_be_visible()
    # A new branch made in the page (Send as new branch) becomes the place without a read.
    page.locator(f"#m-{q2.id}").get_by_role("button", name="Edit").click()
    page.locator(f"#m-{q2.id} textarea").fill("third question")
    page.locator(f"#m-{q2.id}").get_by_role("button", name="Send as new branch").click()
    third = page.locator("article[data-role=user]", has_text="third question")
    expect(third).to_be_visible()
    wait_idle(page)
    page.wait_for_timeout(600)
    page.goto(f"{site}/sessions/{other}/")
    page.goto(f"{site}/sessions/{sid}/")
    expect(page.locator("article[data-role=user]", has_text="third question")).to_be_visible()
    # Deleted with the session.
    manager.delete(sid)
    assert not models.LastLeaf.objects.filter(session_id=sid).exists()
    assert page.console_errors == []


def test_sidebar_count_name_and_usage_follow_live_events(site, page, alice):
    sid = alice["manager"].create("Counting").id
    key = create_key(alice["user"])[1]
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    entry = page.locator(f'.nav-sessions li[data-session-id="{sid}"]')
    expect(entry).to_contain_text("0 msgs")
    expect(page.locator(".usage-total")).to_have_text("0 tok")
    page.wait_for_timeout(300)  # the socket is open
    auth = {"Authorization": f"Bearer {key}"}
    for text in ("one", "two"):
        response = httpx.post(f"{site}/api/v1/sessions/{sid}/messages", headers=auth,
                              json={"message": {"role": "user", "content": text}})
        assert response.status_code == 201
    expect(entry).to_contain_text("2 msgs")
    assert httpx.patch(f"{site}/api/v1/sessions/{sid}", headers=auth,
                       json={"name": "Renamed by an agent"}).status_code == 200
    expect(entry.get_by_role("link")).to_have_text("Renamed by an agent")
    expect(page.get_by_role("heading", name="Renamed by an agent")).to_be_visible()
    send(page, "hello")
    expect(page.locator("article[data-role=user]", has_text="hello")).to_be_visible()
    wait_idle(page)
    expect(entry).to_contain_text("4 msgs")
    expect(page.locator(".usage-total")).not_to_have_text("0 tok")
    assert page.console_errors == []


def test_keyboard_first_every_action_in_the_help_focus_visible_and_announced(site, page, alice):
    manager = alice["manager"]
    sid, q, (a,) = asked(manager, "Keys", "pick a colour", "Blue.")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    page.locator("body").click()
    page.keyboard.press("?")
    help_ = page.get_by_role("dialog", name="Keyboard shortcuts")
    for action in ("Next / previous message", "Edit the focused message", "Regenerate the focused answer",
                   "Copy the focused message", "Fork a new session", "Show / hide the prompt panel",
                   "Write a message", "Stop the answer", "Search all sessions"):
        expect(help_).to_contain_text(action)
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("k")  # from nowhere: the last message
    expect(page.locator(f"#m-{a.id}")).to_be_focused()
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", "")
    page.keyboard.press("c")
    assert page.evaluate("navigator.clipboard.readText()").strip() == "Blue."
    page.keyboard.press("k")
    expect(page.locator(f"#m-{q.id}")).to_be_focused()
    page.keyboard.press("e")
    expect(page.locator(f"#m-{q.id} textarea")).to_be_focused()
    page.keyboard.press("Escape")
    page.locator(f"#m-{a.id}").focus()
    page.keyboard.press("r")  # regenerate: the turn is announced to screen readers
    expect(page.locator("#live-announce")).to_have_text("The answer is complete.")
    # Every button says what it does (icon buttons by aria-label).
    unnamed = page.evaluate("""() => Array.from(document.querySelectorAll('button'))
        .filter(b => !(b.getAttribute('aria-label') || b.textContent).trim()).length""")
    assert unnamed == 0
    assert page.console_errors == []
