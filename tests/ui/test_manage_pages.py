"""The pages beside the chat view in a real browser (issue 13): the tree overview (also at
5,000 messages), usage, export/import, API keys and agent settings, against daphne on
the test database. Screenshots (light and dark, desktop and 375 px) go to
test-output/screenshots/manage-*.png."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from memory_core import SessionManager
from sessions_app import models
from sessions_app.auth import create_key
from tests.conftest import assistant_msg, user_msg
from tests.ui import browsing
from tests.ui.browsing import login, person


@pytest.fixture
def alice(transactional_db) -> dict[str, Any]:
    return person()


def shoot(page: Any, name: str) -> None:
    browsing.shoot(page, f"manage-{name}")


def branched(manager: SessionManager) -> dict[str, str]:
    sid = manager.create("Trip to Lisbon").id
    chat = manager.get_session(sid)
    q = chat.append_message(user_msg("Book a flight to Lisbon on May 3"))
    usage = {"input_tokens": 1200, "output_tokens": 310, "cost": 0.0123, "model": "demo"}
    a1 = chat.append_message(assistant_msg("Booked the 9:10 morning flight.",
                                           metadata={"usage": usage, "turn_usage": usage}))
    chat.append_message(user_msg("And a hotel near the river, please."))
    a2 = chat.append_message(assistant_msg("Booked the 18:40 evening flight, seat 22F."),
                             parent_id=q.id)
    chat.append_message(user_msg("Great, thanks! " + "A long follow-up line. " * 12),
                        parent_id=a2.id)
    manager.add_usage(sid, 1200, 310, 0.0123)
    return {"sid": sid, "q": q.id, "a1": a1.id, "a2": a2.id}


def test_the_tree_page_opens_a_closed_branch_and_navigates_to_it(site, page, alice):
    ids = branched(alice["manager"])
    login(page, site)
    page.goto(f"{site}/sessions/{ids['sid']}/")
    page.get_by_role("link", name="Tree").click()
    expect(page.get_by_role("heading", name=re.compile("Trip to Lisbon"))).to_be_visible()
    current = page.locator("li.node a[aria-current]")
    expect(current).to_contain_text("Great, thanks!")  # the latest leaf's branch
    expect(page.locator("li.node .fork-count")).to_contain_text("2")
    shoot(page, "tree")
    page.locator("details.branch:not([open]) > summary").first.click()  # the morning branch
    node = page.locator(f"#t-{ids['a1']} a")
    expect(node).to_be_visible()
    expect(page.locator("li.node", has_text="hotel near the river")).to_be_visible()
    node.click()
    expect(page).to_have_url(re.compile(rf"\?leaf={ids['a1']}#m-{ids['a1']}$"))
    expect(page.locator(f"article#m-{ids['a1']}")).to_be_visible()
    expect(page.locator("#thread article.message").last).to_contain_text("hotel near the river")
    page.get_by_role("link", name="Usage").click()
    expect(page.locator('[data-figure="branch-input"]')).to_have_text("1,200")
    shoot(page, "usage")
    assert page.console_errors == []


def test_a_5000_message_tree_loads_and_stays_responsive(site, page, alice):
    manager = alice["manager"]
    sid = manager.create("Very long").id
    manager.append_all(sid, [user_msg(f"message number {i} " + "words " * 20)
                             for i in range(4700)])
    fork_at = manager.get_session(sid).get_history(raw=True)[100].id
    manager.append_all(sid, [user_msg(f"side {k}") for k in range(300)], parent_id=fork_at)
    login(page, site)
    started = time.perf_counter()
    page.goto(f"{site}/sessions/{sid}/tree/")
    expect(page.locator("li.node a[aria-current]")).to_have_count(1)
    loaded = time.perf_counter() - started
    assert loaded < 8, loaded
    # The latest leaf is on the side branch: it is open, the 4,599-message trunk is closed.
    assert page.locator("li.node").count() == 401
    expect(page.locator("li.node a[aria-current]")).to_contain_text("side 299")
    started = time.perf_counter()
    page.locator("details.branch:not([open]) > summary").first.click()
    expect(page.locator("li.node", has_text="message number 4699")).to_have_count(1)
    assert page.locator("li.node").count() == 5000
    # The main thread is free: a frame and a scroll to the end answer at once.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(1)))")
    page.locator("li.node", has_text="message number 4699").scroll_into_view_if_needed()
    assert time.perf_counter() - started < 5
    assert page.console_errors == []


def test_a_revoked_key_stops_working(site, page, alice):
    login(page, site)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("laptop agent")
    page.get_by_label("Limit to agent").select_option(label="Helper")
    page.get_by_role("button", name="Create key").click()
    raw = page.get_by_label("New API key").input_value()
    assert raw.startswith("arb_")
    shoot(page, "keys")
    api = httpx.Client(base_url=f"{site}/api/v1", headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/agents").status_code == 200
    page.goto(f"{site}/keys/")
    expect(page.get_by_label("New API key")).to_have_count(0)  # shown once only
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=re.compile("Revoke")).click()
    expect(page.locator(".keys .badge.warn")).to_contain_text("revoked")
    assert api.get("/agents").status_code == 401
    assert page.console_errors == []


def test_export_then_import_round_trips(site, page, alice, tmp_path):
    ids = branched(alice["manager"])
    target = models.Agent.objects.create(owner=alice["user"], name="Archive")
    _, raw = create_key(alice["user"])
    api = httpx.Client(base_url=f"{site}/api/v1", headers={"Authorization": f"Bearer {raw}"})
    login(page, site)
    page.goto(f"{site}/sessions/{ids['sid']}/tree/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export JSON").click()
    saved = tmp_path / "export.json"
    download.value.save_as(saved)
    assert json.loads(saved.read_text()) == api.get(f"/sessions/{ids['sid']}/export").json()
    with page.expect_download() as md:
        page.get_by_role("link", name=re.compile("Export Markdown")).click()
    assert "## Assistant" in open(md.value.path(), encoding="utf-8").read()
    page.goto(f"{site}/import/")
    page.get_by_label("Export file (.json)").set_input_files(str(saved))
    page.get_by_label("Into agent").select_option(label="Archive")
    shoot(page, "import")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name="Trip to Lisbon")).to_be_visible()
    new_sid = page.url.split("/sessions/")[1].split("/")[0]
    assert new_sid != ids["sid"]
    assert models.Session.objects.get(id=new_sid).agent_id == target.id
    before, after = (api.get(f"/sessions/{s}/export").json() for s in (ids["sid"], new_sid))
    for key in ("messages", "compactions", "blocks", "skills", "prompt"):
        assert after[key] == before[key], key
    # A file that is not an export is refused with the reason, and nothing is stored.
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "arbor.session"}')
    count = models.Session.objects.count()
    page.goto(f"{site}/import/")
    page.get_by_label("Export file (.json)").set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert")).to_contain_text("Nothing was imported")
    shoot(page, "import-error")
    assert models.Session.objects.count() == count


def test_agent_settings_edit_and_refuse_bad_blocks(site, page, alice):
    login(page, site)
    page.get_by_role("link", name="Settings · Helper").click()
    expect(page.get_by_label("Label").first).to_have_value("memory")
    page.get_by_label("Label").last.fill("todos")
    page.get_by_label("Budget (tokens)").last.fill("lots")
    page.get_by_role("button", name="Save blocks").click()
    expect(page.get_by_role("alert")).to_contain_text("Budget (tokens)")
    shoot(page, "settings-error")
    alice["agent"].refresh_from_db()
    assert [t["label"] for t in alice["agent"].context] == ["memory"]
    page.get_by_label("Budget (tokens)").nth(1).fill("200")
    page.get_by_role("button", name="Save blocks").click()
    expect(page.get_by_role("status")).to_contain_text("Saved")
    shoot(page, "settings")
    alice["agent"].refresh_from_db()
    assert [t["label"] for t in alice["agent"].context] == ["memory", "todos"]
    # The refused form answered 422, which chromium logs; nothing else went wrong.
    assert [e for e in page.console_errors if "status of 422" not in e] == []
