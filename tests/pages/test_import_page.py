"""The Import page with other tools' exports (issue 30): the summary links each session,
which opens on the conversation's current branch; a refusal stores nothing; the htmx
upload gets the summary or the refusal alone, and an Arbor document a redirect."""

from __future__ import annotations

import orjson
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app import models
from tests.imports import exports as ex


def _upload(data: bytes, name: str = "conversations.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_the_session_list_links_the_import_page(browser):
    html = browser.get("/").content.decode()
    assert 'href="/import/">Import conversations</a>' in html
    page = browser.get("/import/").content.decode()
    assert "data-drop-zone" in page and 'name="format"' in page and "ChatGPT" in page


def test_a_chatgpt_export_shows_a_summary_linking_each_session(alice, browser):
    response = browser.post("/import/", {"agent": alice["agent"].id,
                                         "document": _upload(orjson.dumps(ex.chatgpt()))})
    html = response.content.decode()
    assert response.status_code == 201
    assert "ChatGPT: 2 conversations imported, 11 messages" in html
    sessions = {s.name: s.id for s in models.Session.objects.filter(agent=alice["agent"])}
    assert f'href="/sessions/{sessions["Lisbon trip"]}/"' in html
    chat = browser.get(f"/sessions/{sessions['Lisbon trip']}/").content.decode()
    # Opens on the current node's branch (a1), with the switcher on the regenerated pair.
    assert 'id="m-a1"' in chat and 'id="m-a2"' not in chat
    assert "2/2" in chat  # the current branch is stored last among its siblings
    again = browser.post("/import/", {"agent": alice["agent"].id,
                                      "document": _upload(orjson.dumps(ex.chatgpt()))})
    assert "0 conversations imported" in again.content.decode()
    assert "already imported as session" in again.content.decode()


def test_a_pi_session_and_the_format_choice(alice, browser):
    response = browser.post("/import/", {"agent": alice["agent"].id, "format": "pi",
                                         "document": _upload(ex.pi_jsonl(), "s.jsonl")})
    assert response.status_code == 201 and "List project files" in response.content.decode()
    wrong = browser.post("/import/", {"agent": alice["agent"].id, "format": "claude",
                                      "document": _upload(orjson.dumps(ex.openwebui()))})
    assert wrong.status_code == 422 and "Nothing was imported" in wrong.content.decode()


def test_a_malformed_export_is_explained_and_stores_nothing(alice, browser):
    data = ex.claude()
    data[1]["chat_messages"][1]["sender"] = "robot"
    before = (models.Session.objects.count(), models.Message.objects.count())
    response = browser.post("/import/", {"agent": alice["agent"].id,
                                         "document": _upload(orjson.dumps(data))})
    html = response.content.decode()
    assert response.status_code == 422 and "c-old" in html and "chat_messages[1].sender" in html
    assert (models.Session.objects.count(), models.Message.objects.count()) == before


def test_the_htmx_upload_gets_the_summary_alone_and_arbor_a_redirect(alice, browser):
    headers = {"HX-Request": "true"}
    response = browser.post("/import/", {"agent": alice["agent"].id, "document": _upload(
        orjson.dumps(ex.openwebui()))}, headers=headers)
    html = response.content.decode()
    assert response.status_code == 201 and "<html" not in html and "Sintra day" in html
    bad = browser.post("/import/", {"agent": alice["agent"].id, "document": _upload(
        b"[1, 2")}, headers=headers)
    assert bad.status_code == 200 and "Nothing was imported" in bad.content.decode()
    sid = models.Session.objects.get(name="Sintra day").id
    doc = browser.get(f"/sessions/{sid}/export.json").content
    moved = browser.post("/import/", {"agent": alice["agent"].id, "document": _upload(doc)},
                         headers=headers)
    assert moved.status_code == 204 and moved["HX-Redirect"].startswith("/sessions/")


def test_imports_emit_the_usual_live_events(alice, browser):
    browser.post("/import/", {"agent": alice["agent"].id,
                              "document": _upload(orjson.dumps(ex.claude()))})
    for session in models.Session.objects.filter(agent=alice["agent"]):
        events = list(models.SessionEvent.objects.filter(session__id=session.id)
                      .values_list("seq", "type"))
        assert events == [(1, "session.status")]
