"""An idempotent replay (the same id and content again) changes nothing: not the
session's updated_at, not its message count, not the search statistics (Postgres' BM25
reads search_tokens), not the order of list() (issue 10)."""

from __future__ import annotations

import pytest

from memory_core import Conflict
from sessions_app.models import Session as SessionRow
from tests.conftest import assistant_msg, user_msg


def state(manager, session_id):
    row = SessionRow.objects.get(id=session_id)
    return (row.updated_at, row.message_count, row.search_tokens,
            [s.id for s in manager.list()])


@pytest.fixture
def two_sessions(manager):
    """An older session with a message, then a newer one (first in list())."""
    older = manager.get_session(manager.create("older").id)
    first = older.append_message({**user_msg("deploy the billing service"), "id": "m-1"})
    newer = manager.get_session(manager.create("newer").id)
    newer.append_message(user_msg("hello"))
    return older, first


def test_replaying_an_append_changes_nothing(manager, two_sessions):
    older, first = two_sessions
    before = state(manager, older.id)
    hits = [(h.id, h.score) for h in manager.search("billing")]
    again = older.append_message({**user_msg("deploy the billing service"), "id": "m-1"})
    assert again == first
    assert state(manager, older.id) == before
    assert [(h.id, h.score) for h in manager.search("billing")] == hits


def test_replaying_an_upsert_or_a_batch_changes_nothing(manager, two_sessions):
    older, first = two_sessions
    before = state(manager, older.id)
    older.upsert_message({**user_msg("deploy the billing service"), "id": "m-1"})
    older.append_messages([{**user_msg("deploy the billing service"), "id": "m-1"}])
    assert state(manager, older.id) == before


def test_a_conflicting_replay_changes_nothing(manager, two_sessions):
    older, _ = two_sessions
    before = state(manager, older.id)
    with pytest.raises(Conflict):
        older.append_message({**user_msg("other words"), "id": "m-1"})
    assert state(manager, older.id) == before


def test_a_real_append_counts_and_moves_the_session_first(manager, two_sessions):
    older, _ = two_sessions
    updated, count, tokens, _ = state(manager, older.id)
    older.append_message(assistant_msg("done"))
    after = state(manager, older.id)
    assert after[0] > updated and after[1] == count + 1 and after[2] > tokens
    assert after[3][0] == older.id
