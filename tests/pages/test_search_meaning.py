"""The pages say what search by meaning did: hits found by meaning are marked, a failing
embedder is said, and the prompt panel shows the embedder and what waits for it."""

from __future__ import annotations

from django.test import Client

from sessions_app.semantic.embed import embed_all


def test_search_page_marks_hits_found_by_meaning(alice, browser, fake_embeddings):
    manager = alice["manager"]
    sid = manager.create("car").id
    manager.append_all(sid, [{"role": "user", "content": "picked up the new Skoda yesterday"},
                             {"role": "user", "content": "my car is clean"}])
    embed_all(fake_embeddings)
    html = browser.get("/search/?q=What car do I drive", HTTP_HX_REQUEST="true").content.decode()
    items = html.split("<li>")[1:]
    skoda = next(i for i in items if "Skoda" in i)
    clean = next(i for i in items if "clean" in i)
    assert "by meaning" in skoda and "by meaning" not in clean
    fake_embeddings.fail = True
    html = browser.get("/search/?q=car", HTTP_HX_REQUEST="true").content.decode()
    assert "by words only" in html and "Skoda" not in html


def test_prompt_panel_shows_the_embedder_and_what_waits(alice, fake_embeddings, settings):
    manager = alice["manager"]
    session = manager.get_session(manager.create("chat").id)
    session.append_message({"role": "user", "content": "one"})
    client = Client()
    client.force_login(alice["agent"].owner)

    def state() -> str:
        page = client.get(f"/sessions/{session.id}/prompt/").content.decode()
        return page.split('id="pp-embedder-state"', 1)[1].split("</p>", 1)[0]

    assert "fake-hash-64" in state() and "1 message waiting" in state()
    embed_all(fake_embeddings)
    assert "caught up (1 message)" in state()
    settings.ARBOR_EMBEDDINGS = "off"
    assert "Off (ARBOR_EMBEDDINGS=off)" in state()
