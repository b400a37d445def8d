"""A forked message's hit leads to both copies: `other_copies` in the JSON API and the
MCP-shaped dict, a link to each on the search page."""

from __future__ import annotations

from django.test import Client

from memory_core import SessionManager

from .conftest import ok, user_msg


def test_agent_search_and_the_page_reach_the_original_of_a_forked_message(
        api, alice_agent, agent_id):
    manager = SessionManager.for_agent(alice_agent)
    source = manager.get_session(manager.create("the original").id)
    copied = source.append_message(user_msg("the pomegranate harvest starts in October"))
    fork = manager.fork(source.id, copied.id, "the fork")
    hit, = ok(api.get(f"/agents/{agent_id}/search", q="pomegranate harvest"))["items"]
    assert (hit["session_id"], hit["copies"]) == (fork.id, 2)
    assert hit["other_copies"] == [{"session_id": source.id, "message_id": copied.id}]
    alone, = ok(api.get(f"/sessions/{source.id}/search", q="pomegranate"))["items"]
    assert alone["other_copies"] == [] and alone["copies"] == 1
    browser = Client()
    browser.force_login(alice_agent.owner)
    html = browser.get("/search/?q=pomegranate", HTTP_HX_REQUEST="true").content.decode()
    for session_id, name in ((fork.id, "the fork"), (source.id, "the original")):
        assert f"/sessions/{session_id}/?leaf={copied.id}#m-{copied.id}" in html
        assert name in html
    assert "2 copies" in html and "Also in:" in html
