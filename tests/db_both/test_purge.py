"""`purge` (issue 31): a deleted message's text is gone from the SQLite files; Postgres
vacuums; the erasure log records the purge; deletion blocks writers briefly."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from memory_core import SessionManager
from sessions_app import models
from tests.conftest import make_agent, user_msg

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "quetzalcoatlwhisper"


def _files() -> bytes:
    """The database's files as bytes, read by another process: closing a descriptor of
    the file in this one would drop every POSIX lock SQLite holds on it here, and the
    servers other tests start would then write to it unguarded (a corrupt file)."""
    name = str(connection.settings_dict["NAME"])
    paths = [p for p in (name, name + "-wal", name + "-shm") if os.path.exists(p)]
    return subprocess.run(["cat", *paths], check=True, capture_output=True).stdout


@pytest.mark.sqlite_only
def test_deleted_text_is_not_in_the_database_files_after_purge():
    manager = SessionManager.for_agent(make_agent("alice"))
    keep = manager.create("keep").id
    gone = manager.create("gone").id
    manager.append_all(keep, [user_msg(f"ordinary words {i}") for i in range(50)])
    manager.append_all(gone, [user_msg(f"{SECRET} number {i}") for i in range(50)])
    one = manager.get_session(keep)
    one.append_message(user_msg(f"{SECRET}mine only", id="x1"))
    assert SECRET.encode() in _files()
    manager.delete(gone)
    one.delete_messages(["x1"])
    assert not manager.search(SECRET)

    out = StringIO()
    call_command("purge", stdout=out)
    assert "wal_truncated: True" in out.getvalue()
    assert SECRET.encode() not in _files()
    assert manager.search("ordinary")  # the index still answers
    assert not models.Erasure.objects.filter(purged_at=None).exists()


@pytest.mark.postgres_only
def test_purge_vacuums_the_tables_deletions_touch():
    manager = SessionManager.for_agent(make_agent("alice"))
    gone = manager.create("gone").id
    manager.append_all(gone, [user_msg(f"{SECRET} {i}") for i in range(20)])
    manager.delete(gone)
    with connection.cursor() as cur:
        cur.execute("SELECT coalesce(last_vacuum, 'epoch') FROM pg_stat_user_tables "
                    "WHERE relname = 'arbor_message'")
        before = cur.fetchone()[0]
    out = StringIO()
    call_command("purge", stdout=out)
    assert "arbor_message" in out.getvalue()
    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_force_next_flush()")
        cur.execute("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'arbor_message'")
        assert cur.fetchone()[0] > before
    assert not models.Erasure.objects.filter(purged_at=None).exists()


def test_deleting_many_messages_blocks_writers_under_100ms_per_1000():
    """A writer appending to another session while a 3,000-message session is deleted
    waits at most 100 ms per 1,000 messages deleted (SQLite: the write lock; Postgres:
    no shared lock at all)."""
    n = 3000
    manager = SessionManager.for_agent(make_agent("alice"))
    big = manager.create("big").id
    manager.append_all(big, [user_msg(f"message {i} with a few words") for i in range(n)])
    other = manager.create("other").id
    waits: list[float] = []
    stop = threading.Event()

    def writer() -> None:
        from django.db import connection as conn

        session = manager.get_session(other)
        try:
            while not stop.is_set():
                t = time.perf_counter()
                session.append_message(user_msg("still writing"))
                waits.append(time.perf_counter() - t)
        finally:
            conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.2)
    started = time.perf_counter()
    manager.delete(big)
    took = time.perf_counter() - started
    time.sleep(0.2)
    stop.set()
    thread.join()
    worst = max(waits)
    print(f"\n{connection.vendor}: deleted {n} messages in {took * 1000:.0f} ms; "
          f"longest append meanwhile {worst * 1000:.0f} ms over {len(waits)} appends")
    assert worst < 0.1 * n / 1000
