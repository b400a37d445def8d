"""The prompt panel's views through Django's test client (tests/ui/test_prompt_panel.py
drives the same panel in chromium): the prompt byte for byte as the API gives it, block
edits within and past their budget, read-only blocks, skills, staleness, the refresh diff,
ownership and CSRF."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client, override_settings

from memory_core import SessionManager
from memory_core.prompt import SEPARATOR
from sessions_app.auth import create_key
from tests.conftest import make_agent

pytestmark = pytest.mark.django_db

BLOCKS = [
    {"label": "soul", "kind": "readonly", "description": "Identity",
     "content": "You are <b>careful</b> & kind."},
    {"label": "memory", "description": "Learned facts", "max_tokens": 40},
    {"label": "todos", "max_tokens": 100},
    {"label": "skills", "kind": "skill"},
    {"label": "knowledge", "kind": "search", "description": "Reference notes"},
]
PRE = re.compile(r'<pre id="frozen-prompt"[^>]*>(.*?)</pre>', re.S)


@pytest.fixture
def alice():
    agent = make_agent("alice", "Helper")
    agent.context = BLOCKS
    agent.save(update_fields=["context"])
    manager = SessionManager.for_agent(agent)
    session = manager.get_session(manager.create("trip").id)
    return {"agent": agent, "manager": manager, "session": session}


@pytest.fixture
def browser(alice) -> Client:
    client = Client()
    client.force_login(alice["agent"].owner)
    return client


def api_prompt(alice) -> str:
    key = create_key(alice["agent"].owner)[1]
    response = Client().get(f"/api/v1/sessions/{alice['session'].id}/system-prompt",
                            HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200
    return str(response.json()["prompt"])


def shown_prompt(page: str) -> str:
    """What a browser reads from the <pre> (its textContent): the parser drops the newline
    right after <pre>, leaves out tags (the rules' spans) and resolves character
    references (&#13; is a CR; stored text's "<" arrives as &lt;, never as a tag)."""
    inner = PRE.search(page)
    assert inner is not None
    text = inner.group(1)
    assert text.startswith("\n")
    return html.unescape(re.sub(r"<[^>]*>", "", text[1:]))


def panel(browser, alice, **params) -> str:
    response = browser.get(f"/sessions/{alice['session'].id}/prompt/", params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_panel_shows_the_prompt_byte_for_byte_as_the_api_sends_it(alice, browser):
    session = alice["session"]
    session.replace_context_block("memory", "\n  <script>alert(1)</script> &amp;\r\n\ttab")
    sent = api_prompt(alice)
    page = panel(browser, alice)
    assert shown_prompt(page) == sent
    assert f'<span class="pp-rule">{SEPARATOR}</span>\nSOUL' in page  # kept on one line
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
    assert "Frozen <time" in page


def test_viewing_does_not_freeze_and_shows_what_the_next_turn_will_freeze(alice, browser):
    page = panel(browser, alice)
    assert "Not frozen yet" in page
    assert alice["session"].system_prompt_status().frozen is False
    assert shown_prompt(page) == api_prompt(alice)  # the API freezes exactly that


def test_saving_a_block_replaces_it_and_answers_the_fresh_panel(alice, browser):
    sid = alice["session"].id
    response = browser.post(f"/sessions/{sid}/prompt/blocks/memory",
                            {"content": "- likes tea\r\n- window seat"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert alice["session"].get_context_block("memory").content == "- likes tea\n- window seat"
    assert 'id="prompt-panel"' in response.content.decode()
    plain = browser.post(f"/sessions/{sid}/prompt/blocks/todos", {"content": "x", "leaf": "m1"})
    assert plain.status_code == 302 and plain["Location"] == f"/sessions/{sid}/?leaf=m1"


def test_an_edit_past_the_budget_shows_the_engines_error_and_changes_nothing(alice, browser):
    session = alice["session"]
    session.replace_context_block("memory", "kept")
    before = api_prompt(alice)
    too_long = "word " * 200
    response = browser.post(f"/sessions/{session.id}/prompt/blocks/memory",
                            {"content": too_long}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 422
    assert "block &#x27;memory&#x27; is limited to 40 tokens; the new content is 260 tokens" in page
    assert "Nothing was changed." in page and 'aria-invalid="true"' in page
    assert too_long.strip() in page  # the draft stays in the editor
    assert session.get_context_block("memory").content == "kept"
    assert api_prompt(alice) == before and session.system_prompt_status().up_to_date


def test_read_only_blocks_have_no_editor_and_refuse_a_forged_edit(alice, browser):
    page = panel(browser, alice)
    soul = page.split('id="block-soul"', 1)[1].split("</article>", 1)[0]
    assert "<textarea" not in soul and "Read-only" in soul
    assert 'id="content-memory"' in page
    response = browser.post(f"/sessions/{alice['session'].id}/prompt/blocks/soul",
                            {"content": "hijacked"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "read-only" in response.content.decode()
    assert alice["session"].get_context_block("soul").content == "You are <b>careful</b> & kind."


def test_usage_bars_turn_amber_from_75_and_red_from_90_percent(alice, browser):
    session = alice["session"]
    session.replace_context_block("memory", "x" * 4 * 30)  # 30/40: 75 %
    session.replace_context_block("todos", "x" * 4 * 95)  # 95/100
    page = panel(browser, alice)
    assert 'class="usage level-warn" role="meter" aria-valuemin="0" aria-valuemax="40" ' \
           'aria-valuenow="30"' in page
    assert 'class="usage level-danger" role="meter" aria-valuemin="0" aria-valuemax="100"' in page
    session.replace_context_block("memory", "x" * 4 * 29)
    assert 'class="usage level-ok" role="meter" aria-valuemin="0" aria-valuemax="40"' in panel(
        browser, alice)


def test_skills_and_search_entries_are_listed_and_a_loaded_skill_unloads(alice, browser):
    session = alice["session"]
    session.set_context_entry("skills", "packing", "Pack light.", "How to pack")
    session.set_context_entry("knowledge", "lisbon", "Trams run late.")
    session.load_skill("skills", "packing")
    page = panel(browser, alice)
    assert "<code>packing</code> — How to pack" in page and "<code>lisbon</code>" in page
    assert 'aria-label="Unload packing"' in page
    response = browser.post(f"/sessions/{session.id}/prompt/blocks/skills/unload",
                            {"key": "packing"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and session.get_loaded_skills() == []
    assert "No skill loaded in this session." in response.content.decode()
    again = browser.post(f"/sessions/{session.id}/prompt/blocks/skills/unload",
                         {"key": "packing"}, HTTP_HX_REQUEST="true")
    assert again.status_code == 422 and "is not loaded" in again.content.decode()


def test_staleness_counts_changed_blocks_and_the_diff_comes_before_the_refresh(alice, browser):
    session = alice["session"]
    session.replace_context_block("memory", "old fact")
    frozen = api_prompt(alice)
    assert "since this prompt was frozen" not in panel(browser, alice)
    session.replace_context_block("memory", "new <fact>")
    session.replace_context_block("todos", "call mum")
    page = panel(browser, alice)
    assert "2 changes since this prompt was frozen" in page and "Refresh prompt" in page
    assert shown_prompt(page) == frozen  # still the frozen text until confirmed

    diff = browser.get(f"/sessions/{session.id}/prompt/diff").content.decode()
    assert "prefix cache" in diff
    assert '<span class="d-del">-old fact\n</span>' in diff
    assert '<span class="d-add">+new &lt;fact&gt;\n</span>' in diff
    assert '<span class="d-add">+call mum\n</span>' in diff
    assert api_prompt(alice) == frozen  # looking at the diff refreshes nothing

    expected = re.search(r'name="expected" value="([0-9a-f]+)"', diff).group(1)
    session.replace_context_block("todos", "call dad")  # moved after the diff was shown
    moved = browser.post(f"/sessions/{session.id}/prompt/refresh", {"expected": expected},
                         HTTP_HX_REQUEST="true")
    assert moved.status_code == 409 and moved["HX-Retarget"] == "#prompt-diff"
    assert "+call dad" in moved.content.decode() and api_prompt(alice) == frozen

    expected = re.search(r'name="expected" value="([0-9a-f]+)"', moved.content.decode()).group(1)
    done = browser.post(f"/sessions/{session.id}/prompt/refresh", {"expected": expected},
                        HTTP_HX_REQUEST="true")
    assert done.status_code == 200
    page = done.content.decode()
    assert "since this prompt was frozen" not in page
    assert shown_prompt(page) == api_prompt(alice) != frozen
    assert "call dad" in api_prompt(alice)


def test_the_gauge_adds_prompt_tools_and_the_branch_on_screen(alice, browser):
    session = alice["session"]
    q = session.append_message({"role": "user", "content": "word " * 100})
    a = session.append_message({"role": "assistant", "content": "short"})
    other = session.append_message({"role": "assistant", "content": "other " * 400},
                                    parent_id=q.id)
    def total(leaf):
        page = panel(browser, alice, leaf=leaf)
        return int(re.search(r'class="small pp-total"><strong>(\d+)</strong>', page).group(1))
    assert total(other.id) > total(a.id) > 130  # history + tool schemas + prompt
    assert "context size is not known" in panel(browser, alice, leaf=a.id)
    with override_settings(ARBOR_CONTEXT_WINDOW=1000):
        page = panel(browser, alice, leaf=a.id)
    assert re.search(r"<strong>\d+</strong> / 1000 tokens \(\d+%\)", page)
    assert 'aria-label="Context used"' in page


def test_another_users_session_is_404_everywhere_and_unchanged(alice):
    session = alice["session"]
    session.replace_context_block("memory", "mine")
    bob = Client()
    bob.force_login(make_agent("bob", "Bob's").owner)
    base = f"/sessions/{session.id}/prompt/"
    assert bob.get(base).status_code == 404
    assert bob.get(base + "diff").status_code == 404
    assert bob.post(base + "blocks/memory", {"content": "bob"}).status_code == 404
    assert bob.post(base + "refresh").status_code == 404
    assert bob.post(base + "blocks/skills/unload", {"key": "x"}).status_code == 404
    assert session.get_context_block("memory").content == "mine"
    assert session.system_prompt_status().frozen is False


def test_a_stranger_is_asked_to_sign_in(alice):
    response = Client().get(f"/sessions/{alice['session'].id}/prompt/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_writes_need_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice["agent"].owner)
    sid = alice["session"].id
    assert client.post(f"/sessions/{sid}/prompt/blocks/memory", {"content": "x"}).status_code == 403
    assert client.post(f"/sessions/{sid}/prompt/refresh").status_code == 403
    assert alice["session"].get_context_block("memory").content == ""
    page = client.get(f"/sessions/{sid}/prompt/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    ok = client.post(f"/sessions/{sid}/prompt/blocks/memory",
                     {"content": "x", "csrfmiddlewaretoken": token}, HTTP_HX_REQUEST="true")
    assert ok.status_code == 200 and alice["session"].get_context_block("memory").content == "x"


def test_the_chat_page_holds_the_panel_and_its_assets(alice, browser):
    page = browser.get(f"/sessions/{alice['session'].id}/").content.decode()
    assert '<aside id="prompt-panel"' in page and 'aria-label="Prompt"' in page
    assert "arbor/inspector.js" in page and "arbor/inspector.css" in page
