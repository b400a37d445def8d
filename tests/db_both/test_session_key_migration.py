"""Migration 0015 on both databases: messages stored under their session's id are moved to
its number and back, and everything reads and searches as before each way."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from tests.conftest import assistant_msg, user_msg

pytestmark = pytest.mark.django_db(transaction=True)


def _columns() -> set[str]:
    with connection.cursor() as cur:
        return {c.name for c in connection.introspection.get_table_description(
            cur, "arbor_message")}


def _state(manager, sessions) -> list[object]:
    return [([m.to_dict() for m in manager.get_history(s.id)],
             [h.id for h in manager.get_session(s.id).search("lisbon flights")])
            for s in sessions]


def test_messages_move_to_session_numbers_and_back(manager):
    sessions = [manager.create(f"s{i}") for i in range(3)]
    for i, s in enumerate(sessions):
        session = manager.get_session(s.id)
        first = session.append_message(user_msg(f"Lisbon flights in May, take {i}"))
        session.append_message(assistant_msg("Booked the morning one."))
        session.append_message(user_msg("and a later one?"), parent_id=first.id)
    before = _state(manager, sessions)
    assert "session_key" in _columns()

    call_command("migrate", "sessions_app", "0014", verbosity=0)
    assert "session_id" in _columns() and "session_key" not in _columns()
    with connection.cursor() as cur:
        cur.execute("SELECT count(DISTINCT session_id) FROM arbor_message")
        assert cur.fetchone()[0] == 3

    call_command("migrate", "sessions_app", verbosity=0)
    assert "session_key" in _columns() and "session_id" not in _columns()
    assert _state(manager, sessions) == before
    # New sessions get numbers past the moved ones; writes and deletes work.
    fresh = manager.create("after")
    manager.append(fresh.id, user_msg("Lisbon flights again"))
    assert {h.session_id for h in manager.search("lisbon flights")} == {
        *(s.id for s in sessions), fresh.id}
    assert manager.delete(sessions[0].id)
    assert _state(manager, sessions[1:]) == before[1:]


def test_sessions_made_at_once_get_distinct_numbers_that_stay(manager):
    from sessions_app.models import Session
    from tests.db_both.test_concurrent_appends import run_threads

    def make(i: int, barrier) -> list[str]:
        # Outside the engine's transaction too: the ORM's save takes the number itself.
        barrier.wait()
        made = [manager.create(f"s{i}-{j}").id for j in range(3)]
        now = timezone.now()
        return made + [Session.objects.create(agent_id=manager.agent_id, name=f"o{i}-{j}",
                                              created_at=now, updated_at=now).id
                       for j in range(2)]

    results, errors = run_threads(6, make)
    assert errors == []
    ids = [sid for made in results for sid in made]
    keys = dict(Session.objects.filter(id__in=ids).values_list("id", "key"))
    assert len(set(keys.values())) == len(ids) == 30
    manager.rename(ids[0], "renamed")  # a save of a made row keeps its number
    assert Session.objects.get(id=ids[0]).key == keys[ids[0]]
