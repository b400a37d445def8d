"""A session id is chosen by whoever imports the session, so it may hold any character:
quotes and query operators in it are text to the full-text query, never syntax. A search
in such a session finds its own messages, and never another tenant's."""

from __future__ import annotations

import pytest

from memory_core.transfer import export_session, import_session
from sessions_app.storage.vendors import postgres_search
from tests.conftest import user_msg

ODD_IDS = ["X'|!'Z", 'q"uote', "a' | 'b", "s)|(t", 'x" OR body : "secret', "back\\slash'"]


@pytest.mark.parametrize("odd_id", ODD_IDS)
@pytest.mark.parametrize("large", [False, True])
def test_a_session_id_is_never_query_syntax(manager, other_manager, monkeypatch, odd_id, large):
    if large:  # Postgres: the path for sessions past SMALL_SESSION names the scope token
        monkeypatch.setattr(postgres_search, "SMALL_SESSION", 0)
    other = other_manager.get_session(other_manager.create("other tenant").id)
    other.append_message(user_msg("the secret launch codes are 0000"))
    source = manager.get_session(manager.create("source").id)
    source.append_message(user_msg("my own secret is the garden gate"))
    document = export_session(manager, source.id)
    document["session"]["id"] = odd_id
    info = import_session(manager, document)
    assert info.id == odd_id
    odd = manager.get_session(odd_id)

    hits = odd.search("secret launch codes")
    assert [h.content for h in hits] == ["my own secret is the garden gate"]
    assert {h.session_id for h in manager.search("secret launch codes")} <= {odd_id, source.id}
    # Left out as the excluded session of an agent-wide search, it is still only text.
    assert [h.session_id for h in manager.search("secret", exclude_session_id=odd_id)] == [
        source.id]
