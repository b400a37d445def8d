"""SQLite: pages freed by deletes (a deleted session, cleared messages, the pruned event
outbox) go back to the file system instead of staying in the file's free list."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import override_settings

from tests.conftest import user_msg

pytestmark = [pytest.mark.sqlite_only, pytest.mark.django_db(transaction=True)]


def _pragma(name: str) -> int:
    with connection.cursor() as cur:
        cur.execute(f"PRAGMA {name}")
        return int(cur.fetchone()[0])


def _fill(manager, name: str, count: int):
    info = manager.create(name)
    manager.append_all(info.id, [user_msg(f"message {i} about the release " * 20)
                                 for i in range(count)])
    return info


def test_a_new_database_gives_freed_pages_back():
    assert _pragma("auto_vacuum") == 2  # INCREMENTAL, set before the first table


def test_deleting_a_session_shrinks_the_file(manager):
    kept = _fill(manager, "kept", 5)
    before = _pragma("page_count")
    doomed = _fill(manager, "doomed", 300)
    grown = _pragma("page_count") - before
    assert manager.delete(doomed.id)
    assert _pragma("freelist_count") == 0
    assert _pragma("page_count") - before < grown * 0.25
    assert len(manager.get_history(kept.id)) == 5


def test_clearing_and_deleting_messages_leave_no_free_pages(manager):
    info = _fill(manager, "s", 300)
    session = manager.get_session(info.id)
    ids = [m.id for m in session.get_history()]
    assert session.delete_messages(ids[100:]) == 200
    assert _pragma("freelist_count") == 0
    assert [m.id for m in session.get_history()] == ids[:100]
    session.clear_messages()
    assert _pragma("freelist_count") == 0
    assert session.get_history() == []


@override_settings(ARBOR_EVENT_RETENTION=50)
def test_pruning_the_event_outbox_leaves_no_free_pages(manager):
    session = manager.get_session(manager.create("events").id)
    for i in range(400):  # prunes at every 100th event
        session.append_message(user_msg(f"event {i} " * 40))
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_session_event e JOIN arbor_session s "
                    "ON s.key = e.session_key WHERE s.id = %s", [session.id])
        kept = cur.fetchone()[0]
    assert kept <= 150
    # What the last prune did not give back (the search index's merges in the appends
    # after it) goes when writes pause (vendors/sqlite_wal.py), within seconds.
    deadline = time.monotonic() + 10
    while _pragma("freelist_count") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pragma("freelist_count") == 0
    assert len(session.get_history()) == 400
