"""The migration history on both databases: a database migrated before the squash goes
on from it, migrating back and forward keeps what is stored, and sessions get distinct
numbers however many are made at once."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from tests.conftest import assistant_msg, user_msg

pytestmark = pytest.mark.django_db(transaction=True)


def _state(manager, sessions) -> list[object]:
    return [([m.to_dict() for m in manager.get_history(s.id)],
             [h.id for h in manager.get_session(s.id).search("lisbon flights")])
            for s in sessions]


# The history before the squash (0001-0023): a database that applied all of it is taken
# as having applied the squashed 0001-0004.
SQUASHED = {
    "0001_initial": ["0001_initial", "0003_context_blocks", "0005_compaction_state",
                     "0006_api_key", "0007_estimate_cache", "0009_stop_request_and_roots",
                     "0010_api_key_last_used", "0016_drop_parent_message_id",
                     "0017_message_time_micros", "0019_block_versions",
                     "0020_session_turn_claim", "0021_retention", "0022_import_sources"],
    "0002_search": ["0002_search_index", "0004_entry_search_index", "0012_search_ranges",
                    "0013_drop_message_text", "0014_contentless_search_index"],
    "0003_session_numbers": ["0008_event_outbox", "0011_session_branched",
                             "0015_session_key", "0018_event_session_key"],
    "0004_message_vectors": ["0023_message_vector"],
}


def test_a_database_migrated_before_the_squash_migrates_on():
    recorder = MigrationRecorder(connection)
    applied = recorder.applied_migrations()
    kept = {name for app, name in applied if app == "sessions_app"}
    try:
        recorder.migration_qs.filter(app="sessions_app").delete()
        for old in sorted({n for names in SQUASHED.values() for n in names}):
            recorder.record_applied("sessions_app", old)
        loader = MigrationLoader(connection)
        for name in SQUASHED:
            assert ("sessions_app", name) in loader.applied_migrations
        # What is left to apply is what came after the squash, nothing of it.
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes("sessions_app"))
        assert all(m.name > "0004" for m, _ in plan), [m.name for m, _ in plan]
    finally:
        recorder.migration_qs.filter(app="sessions_app").delete()
        for name in sorted(kept):
            recorder.record_applied("sessions_app", name)


def test_migrating_back_past_numbering_and_forward_keeps_everything(manager):
    sessions = [manager.create(f"s{i}") for i in range(3)]
    for i, s in enumerate(sessions):
        session = manager.get_session(s.id)
        first = session.append_message(user_msg(f"Lisbon flights in May, take {i}"))
        session.append_message(assistant_msg("Booked the morning one."))
        session.append_message(user_msg("and a later one?"), parent_id=first.id)
    before = _state(manager, sessions)

    call_command("migrate", "sessions_app", "0002_search", verbosity=0)
    assert "arbor_message_vector" not in connection.introspection.table_names()
    call_command("migrate", "sessions_app", verbosity=0)
    assert "arbor_message_vector" in connection.introspection.table_names()
    assert _state(manager, sessions) == before
    # New sessions get numbers past the kept ones; writes, events and deletes work.
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


def test_upgrading_drops_the_vectors_whose_embedded_text_changed_only(manager, fake_embeddings):
    """0012: replies to a message that asks were embedded alone before it, tool results
    without their keys; their vectors go, so the worker embeds them again. Others stay."""
    from sessions_app.models import MessageVector
    from sessions_app.semantic.embed import embed_all, pending_count

    session = manager.get_session(manager.create("renewal").id)
    ask = session.append_message(assistant_msg("Want me to remind you before the renewal?"))
    reply = session.append_message(user_msg("Yes, two weeks before."))
    note = session.append_message(user_msg("The Zeit renews on 30 June."))
    tool = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "c", "toolName": "calendar",
         "output": {"renews_on": "2026-06-30"}}]})
    call_command("migrate", "sessions_app", "0011_sqlite_event_numbering", verbosity=0)
    embed_all(fake_embeddings)
    assert MessageVector.objects.count() == 4
    call_command("migrate", "sessions_app", verbosity=0)
    kept = set(MessageVector.objects.values_list("message__message_id", flat=True))
    assert kept == {ask.id, note.id} and not kept & {reply.id, tool.id}
    assert pending_count(fake_embeddings, agent_id=manager.agent_id) == 2
