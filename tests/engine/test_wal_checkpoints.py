"""SQLite: WAL pages reach the database file from a checkpoint thread beside the
writes, not inside one append's commit (sessions_app/wal.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from django.db import connection

from sessions_app.storage.vendors import sqlite_wal as wal
from tests.conftest import user_msg

pytestmark = pytest.mark.sqlite_only


def _db_state(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@pytest.mark.django_db(transaction=True)
def test_committed_pages_are_copied_into_the_file_by_the_checkpoint_thread(manager):
    session = manager.get_session(manager.create("wal").id)
    session.append_message(user_msg("warm up"))
    path = os.path.abspath(connection.settings_dict["NAME"])
    assert "arbor-wal-checkpoint" in [t.name for t in threading.enumerate()]
    time.sleep(0.3)  # whatever was pending is copied
    before = _db_state(path)
    for i in range(10):  # a few hundred WAL pages: below the writers' own checkpoint
        session.append_message(user_msg(f"message {i} about the release"))
    deadline = time.monotonic() + 5
    while _db_state(path) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _db_state(path) != before, "no checkpoint copied the new pages into the file"
    # Nothing is lost or changed by it: the history reads back in full.
    assert [m.text for m in session.get_history()][-1] == "message 9 about the release"


@pytest.mark.django_db(transaction=True)
def test_the_wal_stays_bounded_under_sustained_appends(manager):
    session = manager.get_session(manager.create("wal").id)
    path = os.path.abspath(connection.settings_dict["NAME"])
    for i in range(600):  # ~11,000 WAL pages written: past the writers' 4,000-page mark
        session.append_message(user_msg(f"message {i} " * 10))
    assert os.path.getsize(path + "-wal") < 32 * 1024 * 1024
    assert len(session.get_history()) == 600


@pytest.mark.django_db(transaction=True)
def test_the_wal_file_is_emptied_once_writes_pause(manager):
    """A burst leaves the WAL file at the writers' checkpoint size (16 MB beside a
    database of a few MB); after QUIET_SECONDS without writes it is emptied."""
    session = manager.get_session(manager.create("wal").id)
    path = os.path.abspath(connection.settings_dict["NAME"])
    for i in range(600):  # ~11,000 WAL pages: the file reaches 4,000 pages at least once
        session.append_message(user_msg(f"message {i} " * 10))
    assert os.path.getsize(path + "-wal") > 4 * 1024 * 1024  # what the burst left
    deadline = time.monotonic() + wal.QUIET_SECONDS + 5
    while os.path.getsize(path + "-wal") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.getsize(path + "-wal") == 0, "the WAL kept its size after the writes paused"
    # Nothing is lost: the history reads back in full, and writing again works.
    assert len(session.get_history()) == 600
    session.append_message(user_msg("after the pause"))
    assert session.get_history()[-1].text == "after the pause"
