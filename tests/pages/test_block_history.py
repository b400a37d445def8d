"""A block's History in the prompt panel (issue 32): versions with who, when and from
which message (a link to it on its branch), the diff against the one before, Restore;
page edits are recorded as the user's (`ui`)."""

from __future__ import annotations

import pytest
from django.test import Client

from memory_core import SessionManager
from tests.conftest import assistant_msg, make_agent, user_msg

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def alice():
    agent = make_agent("alice", "Helper")
    agent.context = [{"label": "memory", "max_tokens": 40}, {"label": "soul", "kind": "readonly",
                                                           "content": "Be kind."}]
    agent.save(update_fields=["context"])
    manager = SessionManager.for_agent(agent)
    return {"agent": agent, "session": manager.get_session(manager.create("h").id)}


@pytest.fixture
def browser(alice) -> Client:
    client = Client()
    client.force_login(alice["agent"].owner)
    return client


def test_page_edits_are_the_users_and_history_shows_source_diff_restore(browser, alice):
    session = alice["session"]
    session.append_message(user_msg("hi"))
    carrier = session.append_message(assistant_msg("noting"))
    with session.acting("model", message_id=carrier.id, leaf_id=carrier.id):
        session.replace_context_block("memory", "likes tea")
    response = browser.post(f"/sessions/{session.id}/prompt/blocks/memory",
                            {"content": "likes coffee"}, **HX)
    assert response.status_code == 200 and 'id="history-memory"' in response.content.decode()
    v = session.block_version("memory", 2)
    assert (v.actor, v.actor_id) == ("ui", str(alice["agent"].owner_id))
    page = browser.get(f"/sessions/{session.id}/prompt/blocks/memory/history").content.decode()
    assert "v2" in page and "v1" in page and ">ui #" in page and ">model<" in page
    assert f"?leaf={carrier.id}#m-{carrier.id}" in page  # opens the message on its branch
    assert '<span class="d-del">-likes tea' in page and '<span class="d-add">+likes coffee' in page
    assert page.count(">Restore</button>") == 1  # not for the newest: it is the value
    done = browser.post(f"/sessions/{session.id}/prompt/blocks/memory/versions/1/restore", **HX)
    assert done.status_code == 200
    assert session.get_context_block("memory").content == "likes tea"
    assert session.block_version("memory", 3).restored_from == 1


def test_history_of_a_foreign_or_missing_block_and_bad_restore(browser, alice):
    session = alice["session"]
    assert browser.get(f"/sessions/{session.id}/prompt/blocks/ghost/history").status_code == 404
    bad = browser.post(f"/sessions/{session.id}/prompt/blocks/memory/versions/4/restore", **HX)
    assert bad.status_code == 404 and "no version 4" in bad.content.decode()
    other = make_agent("mallory", "M")
    stranger = Client()
    stranger.force_login(other.owner)
    assert stranger.get(f"/sessions/{session.id}/prompt/blocks/memory/history").status_code == 404
    read_only = browser.post(f"/sessions/{session.id}/prompt/blocks/soul/versions/1/restore", **HX)
    assert read_only.status_code == 422 and "read-only" in read_only.content.decode()
