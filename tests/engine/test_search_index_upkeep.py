"""SQLite: once writes pause, the message index's segments are merged (sessions_app/
sqlite_index.merge_step, run by the WAL thread), so a search looks each term up in a
few segments rather than in the two dozen that message-by-message appends leave."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from sessions_app.storage.vendors import sqlite_wal as wal
from tests.conftest import user_msg

pytestmark = pytest.mark.sqlite_only


def _segments() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(DISTINCT segid) FROM arbor_message_fts_idx")
        return int(cur.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_the_message_index_is_merged_once_writes_pause(manager):
    session = manager.get_session(manager.create("index").id)
    for i in range(300):  # one transaction, so one new index segment, per message
        session.append_message(user_msg(f"note {i}: the {('blue', 'green', 'red')[i % 3]} "
                                        f"deploy of release {i % 7} on host {i % 11}"))
    # FTS5's own merging leaves about two dozen segments behind such appends (more than 3,
    # so the wait below fails without the merge); a pause under load may start it early.
    left = _segments()
    found = [(h.id, h.score) for h in session.search("green release deploy", 10)]
    deadline = time.monotonic() + wal.QUIET_SECONDS + 10
    while _segments() > 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _segments() <= 3, f"{_segments()} index segments after the pause (from {left})"
    # The same index, only merged: the same hits with the same scores.
    assert [(h.id, h.score) for h in session.search("green release deploy", 10)] == found
    session.append_message(user_msg("a green release after the merge"))
    assert session.search("green release", 1)[0].content == "a green release after the merge"
