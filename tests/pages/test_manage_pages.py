"""The pages beside the chat view through Django's test client: the tree overview, usage,
export/import, API keys and agent settings (issue 13). Browser tests: tests/ui."""

from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory_core import SessionManager
from sessions_app import models
from sessions_app.auth import hash_key
from tests.conftest import assistant_msg, user_msg

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(alice):
    """q -> a1, q -> a2 (a branch), a1 -> f1 with usage recorded on the answers."""
    manager = alice["manager"]
    sid = manager.create("Trip <b>plans</b>").id
    chat = manager.get_session(sid)
    q = chat.append_message(user_msg("Book a flight to Lisbon"))
    usage = {"input_tokens": 10, "output_tokens": 5, "cost": 0.25, "model": "model-one"}
    a1 = chat.append_message(assistant_msg("Morning flight <script>x</script>",
                                           metadata={"usage": usage, "turn_usage": usage}))
    a2 = chat.append_message(assistant_msg("Evening flight", metadata={"usage": {
        "input_tokens": 7, "output_tokens": 3, "cost": 0.5, "model": "model-two"}}), parent_id=q.id)
    f1 = chat.append_message(user_msg("Thanks"), parent_id=a1.id)
    manager.add_usage(sid, 17, 8, 0.75)
    return {"sid": sid, "q": q.id, "a1": a1.id, "a2": a2.id, "f1": f1.id, "chat": chat}


def _api(raw: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_every_page_asks_a_stranger_to_sign_in(alice, branched):
    sid, aid = branched["sid"], alice["agent"].id
    for url in (f"/sessions/{sid}/tree/", f"/sessions/{sid}/usage/", f"/sessions/{sid}/export.json",
                f"/sessions/{sid}/export.md", "/import/", "/keys/", f"/agents/{aid}/settings/"):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_another_users_session_and_agent_answer_404(bob, browser):
    sid = bob["manager"].create("secret").id
    bob["manager"].append(sid, user_msg("hidden"))
    aid = bob["agent"].id
    for url in (f"/sessions/{sid}/tree/", f"/sessions/{sid}/usage/", f"/sessions/{sid}/export.json",
                f"/sessions/{sid}/export.md", f"/agents/{aid}/settings/",
                f"/sessions/{sid}/tree/?under=x"):
        assert browser.get(url).status_code == 404, url
    assert browser.post(f"/agents/{aid}/settings/", {"rows": "0"}).status_code == 404
    assert models.Agent.objects.get(id=aid).context == []
    upload = SimpleUploadedFile("x.json", b"{}", content_type="application/json")
    assert browser.post("/import/", {"agent": aid, "document": upload}).status_code == 404


def test_post_forms_need_a_csrf_token(alice, branched):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice["agent"].owner)
    assert client.post("/keys/", {"name": "k"}).status_code == 403
    assert client.post(f"/agents/{alice['agent'].id}/settings/", {"rows": "0"}).status_code == 403
    assert client.post("/import/", {"agent": alice["agent"].id}).status_code == 403
    assert not models.ApiKey.objects.exists()
    page = client.get("/keys/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in page


# ------------------------------------------------------------------ tree
def test_tree_shows_every_message_marks_branch_points_and_highlights_the_branch(browser, branched):
    b = branched
    html = browser.get(f"/sessions/{b['sid']}/tree/?leaf={b['a2']}").content.decode()
    assert f'id="t-{b["q"]}"' in html and f'id="t-{b["a2"]}"' in html
    assert 'fork-count">2 branches<' in html  # the question has two answers
    assert f'href="/sessions/{b["sid"]}/?leaf={b["a2"]}#m-{b["a2"]}" aria-current="true"' in html
    # The other branch is closed and fetched when opened; its first message is named.
    assert f"under={b['a1']}" in html and "Morning flight &lt;script&gt;" in html
    assert "<script>x</script>" not in html
    fragment = browser.get(f"/sessions/{b['sid']}/tree/?under={b['a1']}&level=1",
                           HTTP_HX_REQUEST="true").content.decode()
    assert f'id="t-{b["a1"]}"' in fragment and f'id="t-{b["f1"]}"' in fragment
    assert "<html" not in fragment


def test_tree_defaults_to_the_latest_leaf_and_reports_an_unknown_one(browser, branched):
    b = branched
    html = browser.get(f"/sessions/{b['sid']}/tree/").content.decode()
    assert f'#m-{b["f1"]}" aria-current="true"' in html
    response = browser.get(f"/sessions/{b['sid']}/tree/?leaf=nope")
    assert response.status_code == 404 and "not in this session" in response.content.decode()


def test_tree_of_5000_messages_answers_quickly_in_a_fixed_number_of_queries(alice, browser):
    manager = alice["manager"]
    sid = manager.create("long").id
    chat = manager.get_session(sid)
    manager.append_all(sid, [user_msg(f"message {i}") for i in range(4000)])
    fork_at = chat.get_history(raw=True)[2000].id
    for j in range(3):  # three side branches of 334 under one message
        manager.append_all(sid, [user_msg(f"side {j}.{k}") for k in range(334)],
                           parent_id=fork_at)
    assert chat.get_message_count() >= 5000
    browser.get(f"/sessions/{sid}/tree/")  # warm up
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = browser.get(f"/sessions/{sid}/tree/")
        elapsed = time.perf_counter() - started
    assert response.status_code == 200
    assert elapsed < 3.0, elapsed
    assert len(queries) <= 12, [q["sql"][:80] for q in queries]
    html = response.content.decode()
    assert 'fork-count">4 branches<' in html and html.count('class="lazy"') == 3  # closed side branches


# ------------------------------------------------------------------ usage
def test_usage_page_shows_session_branch_and_message_figures(browser, branched):
    b = branched
    html = browser.get(f"/sessions/{b['sid']}/usage/?leaf={b['a2']}").content.decode()
    assert 'data-figure="session-input">17<' in html and 'data-figure="session-cost">$0.7500' in html
    assert 'data-figure="branch-input">7<' in html and 'data-figure="branch-cost">$0.5000' in html
    assert "model-two" in html and "model-one" not in html  # names a CSRF token cannot hold
    other = browser.get(f"/sessions/{b['sid']}/usage/?leaf={b['f1']}").content.decode()
    assert 'data-figure="branch-input">10<' in other and "turn total" in other


# ------------------------------------------------------------------ export / import
def test_export_json_equals_the_api_export(alice, browser, branched):
    from sessions_app.auth import create_key

    _, raw = create_key(alice["agent"].owner)
    response = browser.get(f"/sessions/{branched['sid']}/export.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    api = _api(raw).get(f"/api/v1/sessions/{branched['sid']}/export")
    assert json.loads(response.content) == api.json()
    assert len(api.json()["messages"]) == 4  # the whole tree, not one branch


def test_markdown_export_is_the_branch_on_screen(browser, branched):
    b = branched
    chat = b["chat"]
    tool = chat.append_message({"role": "assistant", "parts": [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": "LIS"}}]},
        parent_id=b["a2"])
    chat.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "c1", "output": "gate 12"}]}, parent_id=tool.id)
    response = browser.get(f"/sessions/{b['sid']}/export.md?leaf={b['a2']}")
    text = response.content.decode()
    assert response["Content-Type"].startswith("text/markdown")
    assert text.startswith("# Trip <b>plans</b>\n")
    assert "## You\n" in text and "Book a flight to Lisbon" in text
    assert "Evening flight" in text and "Morning flight" not in text  # one branch
    assert "*Tool call* ` lookup `" in text and '"q": "LIS"' in text
    assert "*Tool result*: ` gate 12 `" in text and "## Tool" in text


def _upload(data: bytes, name: str = "export.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_import_round_trip_export_import_export(alice, browser, branched):
    target = models.Agent.objects.create(owner=alice["agent"].owner, name="Target")
    exported = browser.get(f"/sessions/{branched['sid']}/export.json").content
    response = browser.post("/import/", {"agent": target.id, "document": _upload(exported)})
    assert response.status_code == 302
    new_sid = response["Location"].split("/sessions/")[1].strip("/")
    row = models.Session.objects.get(id=new_sid)
    assert row.agent_id == target.id and new_sid != branched["sid"]  # the id was taken
    again = json.loads(browser.get(f"/sessions/{new_sid}/export.json").content)
    before = json.loads(exported)
    for key in ("messages", "compactions", "blocks", "skills", "prompt"):
        assert again[key] == before[key], key
    assert {k: v for k, v in again["session"].items() if k != "id"} == \
        {k: v for k, v in before["session"].items() if k != "id"}


@pytest.mark.parametrize(("data", "words"), [
    (b"not json at all", "not JSON"),
    (b'{"format": "arbor.session", "version": 1}', "session: Field required"),
    (b'{"format": "other"}', "not an Arbor session export"),
])
def test_a_bad_import_file_is_explained_and_nothing_is_stored(alice, browser, data, words):
    before = models.Session.objects.count()
    response = browser.post("/import/", {"agent": alice["agent"].id, "document": _upload(data)})
    html = response.content.decode()
    assert response.status_code == 422 and "Nothing was imported" in html and words in html
    assert models.Session.objects.count() == before


def test_an_import_the_engine_refuses_stores_nothing(alice, browser, branched):
    document = json.loads(browser.get(f"/sessions/{branched['sid']}/export.json").content)
    document["messages"].reverse()  # children before parents
    before = (models.Session.objects.count(), models.Message.objects.count())
    response = browser.post("/import/", {"agent": alice["agent"].id,
                                         "document": _upload(json.dumps(document).encode())})
    assert response.status_code == 422 and "could not be imported" in response.content.decode()
    assert (models.Session.objects.count(), models.Message.objects.count()) == before


def test_import_without_a_file_asks_for_one(alice, browser):
    response = browser.post("/import/", {"agent": alice["agent"].id})
    assert response.status_code == 422 and "Choose an exported session file" in \
        response.content.decode()


# ------------------------------------------------------------------ keys
def test_a_new_key_is_shown_once_and_stored_hashed(alice, browser):
    response = browser.post("/keys/", {"name": "laptop", "agent": alice["agent"].id})
    assert response.status_code == 201 and response["Cache-Control"] == "no-store"
    html = response.content.decode()
    raw = html.split('id="new-key-value"', 1)[1].split(">", 1)[1].split("</textarea>")[0]
    key = models.ApiKey.objects.get()
    assert key.key_hash == hash_key(raw) and raw not in (key.prefix, key.key_hash)
    assert key.agent_id == alice["agent"].id and key.name == "laptop"
    listing = browser.get("/keys/").content.decode()
    assert raw not in listing and key.prefix in listing and "laptop" in listing
    assert _api(raw).get("/api/v1/agents").status_code == 200


def test_a_revoked_key_is_refused_by_the_api(alice, browser):
    browser.post("/keys/", {"name": "soon gone"})
    html = browser.get("/keys/").content.decode()
    key = models.ApiKey.objects.get()
    from sessions_app.auth import create_key

    _, raw = create_key(alice["agent"].owner, name="other")
    assert _api(raw).get("/api/v1/agents").status_code == 200
    other = models.ApiKey.objects.get(name="other")
    assert browser.post(f"/keys/{other.id}/revoke").status_code == 302
    assert _api(raw).get("/api/v1/agents").status_code == 401
    assert f"/keys/{key.id}/revoke" in html
    assert "revoked" in browser.get("/keys/").content.decode()


def test_keys_of_others_cannot_be_seen_or_revoked(alice, bob, browser):
    from sessions_app.auth import create_key

    row, raw = create_key(bob["agent"].owner, name="bob's key")
    assert "bob&#x27;s key" not in browser.get("/keys/").content.decode()
    assert browser.post(f"/keys/{row.id}/revoke").status_code == 404
    assert _api(raw).get("/api/v1/agents").status_code == 200
    # Nor can a key be limited to someone else's agent.
    assert browser.post("/keys/", {"agent": bob["agent"].id}).status_code == 404
    assert models.ApiKey.objects.count() == 1


# ------------------------------------------------------------------ agent settings
def _settings_post(rows: list[dict[str, str]]) -> dict[str, str]:
    data = {"rows": str(len(rows))}
    for i, row in enumerate(rows):
        data.update({f"{k}-{i}": v for k, v in row.items()})
    return data


def test_agent_settings_save_block_templates(alice, browser):
    agent = alice["agent"]
    url = f"/agents/{agent.id}/settings/"
    assert browser.get(url).status_code == 200
    response = browser.post(url, _settings_post([
        {"label": "memory", "kind": "writable", "description": "Learned facts",
         "max_tokens": "1,100", "scope": "agent"},
        {"label": "soul", "kind": "readonly", "content": "You are brief.", "scope": "session"},
        {"label": "", "kind": "writable", "scope": "session"},  # the blank row, left empty
    ]))
    assert response.status_code == 302 and response["Location"].endswith("?saved=1")
    agent.refresh_from_db()
    templates = {t["label"]: t for t in agent.context}
    assert set(templates) == {"memory", "soul"}
    assert templates["memory"]["max_tokens"] == 1100 and templates["memory"]["scope"] == "agent"
    assert templates["soul"]["content"] == "You are brief."
    # New sessions start with them.
    info = SessionManager.for_agent(agent).create("new")
    labels = [b.label for b in SessionManager.for_agent(agent).get_session(info.id)
              .get_context_blocks()]
    assert "memory" in labels and "soul" in labels
    # Remove one.
    browser.post(url, _settings_post([{"label": "memory", "kind": "writable", "scope": "agent",
                                       "max_tokens": "1100", "remove": "1"},
                                      {"label": "soul", "kind": "readonly",
                                       "content": "You are brief.", "scope": "session"}]))
    agent.refresh_from_db()
    assert [t["label"] for t in agent.context] == ["soul"]


@pytest.mark.parametrize(("rows", "words"), [
    ([{"label": "bad label!", "kind": "writable"}], "Label"),
    ([{"label": "memory", "max_tokens": "lots"}], "Budget (tokens)"),
    ([{"label": "memory", "max_tokens": "-5"}], "Budget (tokens)"),
    ([{"label": "memory"}, {"label": "memory"}], "unique"),
    ([{"label": "memory", "kind": "magic"}], "Kind"),
])
def test_agent_settings_refuse_bad_blocks_and_change_nothing(alice, browser, rows, words):
    agent = alice["agent"]
    agent.context = [{"label": "keep", "kind": "writable"}]
    agent.save()
    response = browser.post(f"/agents/{agent.id}/settings/", _settings_post(rows))
    html = response.content.decode()
    assert response.status_code == 422 and "Nothing was saved" in html and words in html
    agent.refresh_from_db()
    assert agent.context == [{"label": "keep", "kind": "writable"}]


def test_home_and_chat_link_to_the_new_pages(alice, browser, branched):
    home = browser.get("/").content.decode()
    assert 'href="/keys/"' in home and f'href="/agents/{alice["agent"].id}/settings/"' in home
    chat = browser.get(f"/sessions/{branched['sid']}/").content.decode()
    for url in ("tree/", "usage/", "export.json", "export.md"):
        assert f'/sessions/{branched["sid"]}/{url}' in chat


def test_a_keys_last_use_is_recorded_and_shown(db):
    from django.test import Client as _Client

    from sessions_app.auth import create_key
    from sessions_app.models import ApiKey
    from tests.conftest import make_agent as _make_agent

    agent = _make_agent("carol", "Carol's")
    key, raw = create_key(agent.owner)
    client = _Client()
    client.force_login(agent.owner)
    assert "never" in client.get("/keys/").content.decode()
    api = _Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/agents").status_code == 200
    used = ApiKey.objects.get(id=key.id).last_used_at
    assert used is not None
    api.get("/api/v1/agents")  # within the minute: not written again
    assert ApiKey.objects.get(id=key.id).last_used_at == used
    assert used.strftime("%Y-%m-%d %H:%M") in client.get("/keys/").content.decode()
