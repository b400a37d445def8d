"""The browser UI's views through Django's test client (the browser tests in tests/ui
drive the same pages in chromium): login, ownership, the session list, the chat page and
its fragments, bad input."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory_core import SessionManager
from sessions_app import models
from tests.conftest import make_agent

pytestmark = pytest.mark.django_db


def test_every_page_asks_a_stranger_to_sign_in(alice):
    sid = alice["manager"].create("x").id
    for url in ("/", f"/sessions/{sid}/", "/search/?q=x"):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_home_lists_only_my_sessions_newest_first(alice, browser):
    manager = alice["manager"]
    older, newer = manager.create("older").id, manager.create("newer").id
    manager.append(older, {"role": "user", "content": "bump"})  # now the newest
    SessionManager.for_agent(make_agent("bob", "Bob's")).create("bob's secret")
    html = browser.get("/").content.decode()
    assert html.index(f"s-{older}") < html.index(f"s-{newer}")
    assert "bob&#x27;s secret" not in html and "bob's secret" not in html


def test_home_pages_with_a_cursor_and_refuses_a_forged_one(alice, browser):
    for i in range(55):
        alice["manager"].create(f"s{i}")
    first = browser.get("/").content.decode()
    assert first.count('<tr id="s-') == 50 and "Older sessions" in first
    cursor = first.split("cursor=", 1)[1].split('"', 1)[0].split("&", 1)[0]
    rest = browser.get(f"/?cursor={cursor}", HTTP_HX_REQUEST="true").content.decode()
    assert rest.count('<tr id="s-') == 5
    assert browser.get("/?cursor=garbage").status_code == 400


def test_create_rename_delete(alice, browser):
    response = browser.post("/sessions/new", {"agent": alice["agent"].id, "name": "Plan"})
    sid = response["Location"].strip("/").split("/")[-1]
    assert models.Session.objects.get(id=sid).name == "Plan"
    browser.post(f"/sessions/{sid}/rename", {"name": "Renamed"})
    assert models.Session.objects.get(id=sid).name == "Renamed"
    assert browser.post(f"/sessions/{sid}/rename", {"name": "  "}).status_code == 422
    browser.post(f"/sessions/{sid}/delete")
    assert not models.Session.objects.filter(id=sid).exists()


@pytest.mark.parametrize("target", ["https://evil.example/phish", "//evil.example/x",
                                    "javascript:alert(1)", "/\\evil.example"])
def test_a_forms_next_never_leads_off_the_site(alice, browser, target):
    sid = alice["manager"].create("Plan").id
    plain = browser.post(f"/sessions/{sid}/rename", {"name": "Renamed", "next": target})
    assert plain.status_code == 302 and plain["Location"] == "/"
    htmx = browser.post(f"/sessions/{sid}/rename", {"name": "Again", "next": target},
                        HTTP_HX_REQUEST="true")
    assert htmx.status_code == 204 and htmx["HX-Redirect"] == "/"
    # A path on the site is still followed.
    back = browser.post(f"/sessions/{sid}/rename", {"name": "Plan", "next": f"/sessions/{sid}/"})
    assert back["Location"] == f"/sessions/{sid}/"


def test_another_users_session_and_agent_answer_404(alice, browser):
    bob = SessionManager.for_agent(make_agent("bob", "Bob's"))
    theirs = bob.create("private").id
    m = bob.append(theirs, {"role": "user", "content": "secret"})
    for url in (f"/sessions/{theirs}/", f"/sessions/{theirs}/messages/{m.id}/",
                f"/sessions/{theirs}/older?before={m.id}"):
        assert browser.get(url).status_code == 404
    for url in (f"/sessions/{theirs}/rename", f"/sessions/{theirs}/delete",
                f"/sessions/{theirs}/send", f"/sessions/{theirs}/messages/{m.id}/fork"):
        assert browser.post(url, {"name": "x", "content": "x"}).status_code == 404
    assert browser.post("/sessions/new", {"agent": bob.agent_id}).status_code == 404
    assert models.Session.objects.get(id=theirs).name == "private"


def test_forms_need_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice["agent"].owner)
    assert client.post("/sessions/new", {"agent": alice["agent"].id}).status_code == 403


def test_the_chat_page_shows_the_branch_with_switchers(alice, browser):
    manager = alice["manager"]
    sid = manager.create("chat").id
    q, a1 = manager.append_all(sid, [{"role": "user", "content": "question"},
                                     {"role": "assistant", "content": "first **answer**"}])
    a2 = manager.append(sid, {"role": "assistant", "content": "second answer"}, parent_id=q.id)
    html = browser.get(f"/sessions/{sid}/").content.decode()
    assert f'id="m-{a2.id}"' in html and f'id="m-{a1.id}"' not in html  # the latest leaf
    assert 'aria-label="Previous branch"' in html and ">2/2<" in html
    html = browser.get(f"/sessions/{sid}/?leaf={a1.id}").content.decode()
    assert f'id="m-{a1.id}"' in html and "<strong>answer</strong>" in html and ">1/2<" in html
    assert browser.get(f"/sessions/{sid}/?leaf=nope").status_code == 404


def test_the_chat_page_costs_the_same_queries_for_a_long_session(alice, browser):
    manager = alice["manager"]
    counts = []
    for n in (10, 300):
        sid = manager.create(f"n{n}").id
        manager.append_all(sid, [{"role": "user" if i % 2 == 0 else "assistant",
                                  "content": f"m{i}"} for i in range(n)])
        browser.get(f"/sessions/{sid}/")  # the login session row exists by now
        with CaptureQueriesContext(connection) as ctx:
            html = browser.get(f"/sessions/{sid}/").content.decode()
        counts.append(len(ctx.captured_queries))
        assert html.count('<article id="m-') == min(n, 50)
    assert counts[0] == counts[1]


def test_older_messages_load_above_the_first_one_shown(alice, browser):
    manager = alice["manager"]
    sid = manager.create("long").id
    ids = [m.id for m in manager.append_all(sid, [{"role": "user", "content": f"m{i}"}
                                                   for i in range(120)])]
    html = browser.get(f"/sessions/{sid}/").content.decode()
    assert f'id="m-{ids[70]}"' in html and f'id="m-{ids[69]}"' not in html
    older = browser.get(f"/sessions/{sid}/older?leaf={ids[-1]}&before={ids[70]}").content.decode()
    assert f'id="m-{ids[69]}"' in older and f'id="m-{ids[20]}"' in older
    assert f'id="m-{ids[19]}"' not in older and "Load earlier messages" in older


def test_search_marks_matches_and_links_the_branch(alice, browser):
    manager = alice["manager"]
    sid = manager.create("fruit").id
    q, hit = manager.append_all(sid, [{"role": "user", "content": "pick one"},
                                      {"role": "assistant", "content": "A pomegranate."}])
    html = browser.get("/search/?q=pomegranate", HTTP_HX_REQUEST="true").content.decode()
    assert "<mark>" in html and f"/sessions/{sid}/?leaf={hit.id}#m-{hit.id}" in html
    assert "<script" not in browser.get("/search/?q=<script>alert(1)</script>").content.decode().split("<main", 1)[1].split("</main>")[0]


def test_search_says_when_a_hit_was_corrected_and_how_often_it_repeats(alice, browser):
    manager = alice["manager"]
    sid = manager.create("rent").id
    manager.append_all(sid, [{"role": "user", "content": "My rent is 1,650 euros a month."}]
                       + [{"role": "assistant", "content": "Noted: weekly status report."}] * 3
                       + [{"role": "user", "content": "Actually the rent went up to 1,740 "
                                                      "euros a month."}])
    html = browser.get("/search/?q=what is my rent", HTTP_HX_REQUEST="true").content.decode()
    items = html.split("<li>")[1:]
    assert "1,740" in items[0] and "later corrected" not in items[0]
    stale = next(i for i in items if "1,650" in i)
    assert "later corrected" in stale
    html = browser.get("/search/?q=weekly status report", HTTP_HX_REQUEST="true").content.decode()
    assert html.count("weekly</mark>") == 1 and "3 copies" in html


def test_an_overlay_is_one_marker_holding_its_messages(alice, browser):
    manager = alice["manager"]
    sid = manager.create("compacted").id
    session = manager.get_session(sid)
    ids = [m.id for m in session.append_messages(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)])]
    overlay = session.add_compaction("They talked about <b>numbers</b>.", ids[1], ids[4])
    html = browser.get(f"/sessions/{sid}/").content.decode()
    assert "Summary of 4 messages" in html and "&lt;b&gt;numbers" in html  # shown, inert
    assert "<b>" not in html.split('class="summary-text"', 1)[1].split("</div>", 1)[0]
    section = html.split(f'id="c-{overlay.id}"', 1)[1].split("</section>", 1)[0]
    assert all(f'id="m-{i}"' in section for i in ids[1:5])
    assert f'id="m-{ids[5]}"' not in section and f'id="m-{ids[5]}"' in html


def test_undo_a_summary_and_compact_now(alice, browser):
    manager = alice["manager"]
    sid = manager.create("compacted").id
    session = manager.get_session(sid)
    ids = [m.id for m in session.append_messages(
        [{"role": "user", "content": f"m{i}"} for i in range(4)])]
    overlay = session.add_compaction("summary", ids[0], ids[1])
    assert browser.post(f"/sessions/{sid}/compactions/{overlay.id}/undo").status_code == 204
    assert session.get_compactions() == []
    assert browser.post(f"/sessions/{sid}/compactions/{overlay.id}/undo").status_code == 404
    assert browser.post(f"/sessions/{sid}/compact").status_code == 202


def test_an_overlay_reaching_above_the_page_opens_onto_all_its_messages(alice, browser):
    manager = alice["manager"]
    sid = manager.create("long compacted").id
    session = manager.get_session(sid)
    ids = [m.id for m in session.append_messages(
        [{"role": "user", "content": f"m{i}"} for i in range(120)])]
    overlay = session.add_compaction("the early part", ids[5], ids[90])
    html = browser.get(f"/sessions/{sid}/").content.decode()
    assert "Summary of 86 messages" in html
    assert f'id="m-{ids[80]}"' not in html and f'id="m-{ids[91]}"' in html
    assert f"before={ids[5]}" in html  # earlier messages load from above the summary
    originals = browser.get(f"/sessions/{sid}/compactions/{overlay.id}/originals").content.decode()
    assert originals.count('<article id="m-') == 86 and f'id="m-{ids[5]}"' in originals
    assert browser.get(f"/sessions/{sid}/compactions/nope/originals").status_code == 404
