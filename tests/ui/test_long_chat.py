"""A 2,000-message session in the browser (issue 29, defects 1-3): it opens, scrolls to
its first message and back one page per jump with the reader's message held in place,
compacts with a visible status and a note saying what was summarised, opens its summary
onto every original, a page at a time, and undoes it in place; the requests are counted.

The session is seeded through the engine's bulk append, not the UI.
"""

from __future__ import annotations

import os
import re
from typing import Any

from playwright.sync_api import expect

from tests.ui.browsing import login, person, shoot

N = int(os.environ.get("ARBOR_LONG_N", "2000"))
PAGE = 50


def seed(manager: Any) -> tuple[str, list[str]]:
    sid = manager.create("Long chat").id
    text = "We talked about the garden, the tomatoes and the rain barrel again."
    ids: list[str] = []
    for start in range(0, N, 500):
        batch = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"#{i} {text}"}
                 for i in range(start, start + 500)]
        parent = ids[-1] if ids else None
        ids += [m.id for m in manager.append_all(sid, batch, parent_id=parent)]
    return sid, ids


def top_of(page: Any, message_id: str) -> float:
    return float(page.evaluate(
        "id => document.getElementById('m-' + id).getBoundingClientRect().top", message_id))


def test_a_2000_message_session_scrolls_compacts_and_undoes_without_runaway(
        site, page, transactional_db):
    alice = person()
    sid, ids = seed(alice["manager"])
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/sessions/" in r.url else None)
    older = lambda: [u for u in requests if "/older" in u]  # noqa: E731
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    thread = page.locator("#thread > article.message")
    expect(thread).to_have_count(PAGE)
    expect(page.locator(f"#m-{ids[-1]}")).to_be_in_viewport()

    # Defect 1: one jump to the top loads one page, and the message the reader was on
    # stays where it was.
    first_shown = ids[-PAGE]
    page.keyboard.press("Home")
    expect(thread).to_have_count(2 * PAGE)
    page.wait_for_timeout(1500)  # a runaway would go on loading here
    assert len(older()) == 1
    expect(thread).to_have_count(2 * PAGE)
    head = page.evaluate("document.querySelector('.chat-head').getBoundingClientRect().bottom")
    assert head - 2 <= top_of(page, first_shown) <= head + 200

    # To the first message: each jump one more page, never more.
    for loaded in range(3, N // PAGE + 1):  # the scrollbar dragged to the top
        page.evaluate("window.scrollTo(0, 0)")
        expect(thread).to_have_count(loaded * PAGE)
        assert len(older()) == loaded - 1
    expect(page.locator("#thread button.older")).to_have_count(0)
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator(f"#m-{ids[0]}")).to_be_in_viewport()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # and back
    expect(page.locator(f"#m-{ids[-1]}")).to_be_in_viewport()
    page.wait_for_timeout(500)
    assert len(older()) == N // PAGE - 1

    # Defect 3: Compact now says it is working, then what it did, with a link to the
    # marker far above.
    page.evaluate("""() => { window.seen = [];
      new MutationObserver(() => window.seen.push(document.getElementById('session-banner').textContent))
        .observe(document.getElementById('session-banner'), {childList: true, subtree: true, characterData: true}); }""")
    page.locator("button.compact-now").click()  # by role is slow on 2,000 messages
    banner = page.locator("#session-banner")
    expect(banner).to_contain_text(re.compile(r"Summarised [\d,]+ messages"))
    assert any("Compacting" in text for text in page.evaluate("window.seen"))
    overlay = alice["manager"].get_compactions(sid)[0]
    count = ids.index(overlay.to_message_id) - ids.index(overlay.from_message_id) + 1
    assert count > 500
    expect(banner).to_contain_text(f"Summarised {count:,} messages")
    before = len(requests)
    banner.get_by_role("link", name="Show the summary").click()
    marker = page.locator(f"#c-{overlay.id}")
    expect(marker.locator(".summary-marker")).to_be_in_viewport()
    # One request reads down to the marker (the prompt panel may refresh after the
    # compaction's event at any moment; it reads no messages).
    thread_reads = [u for u in requests[before:] if "/prompt/" not in u]
    assert len(thread_reads) == 1, thread_reads

    # Defect 2: the marker's true count, and every original reachable.
    expand = marker.get_by_role("button", name=f"Summary of {count:,} messages")
    expand.click()
    originals = marker.locator(".originals > article.message")
    expect(originals.first).to_be_visible()
    earlier = marker.get_by_role("button", name="Show earlier messages of this summary")
    while earlier.count():
        shown = originals.count()
        earlier.click()
        expect(originals).not_to_have_count(shown)
    expect(originals).to_have_count(count)
    expect(page.locator(f"#m-{overlay.from_message_id}")).to_be_attached()
    shoot(page, "long-chat")

    # Undo this summary, in place: no page loads, the reader's message stays put.
    expand.click()  # closed again, in view: the reader looks at the marker
    expect(marker.locator(".originals")).to_be_hidden()
    seen = page.evaluate("Arbor.paging.anchorRow().id")  # what the reader looks at
    after = seen[2:] if seen.startswith("m-") else ids[ids.index(overlay.to_message_id) + 1]
    at = top_of(page, after)
    loads = len(older())
    page.once("dialog", lambda dialog: dialog.accept())
    marker.get_by_role("button", name="Undo this summary").click()
    expect(page.locator("section.overlay")).to_have_count(0)
    page.wait_for_timeout(1500)
    assert len(older()) == loads
    assert abs(top_of(page, after) - at) < 4
    assert page.console_errors == []
