"""SQLite WAL checkpoints off the request path.

SQLite's default: the connection whose commit takes the WAL past 1,000 pages copies
them all into the database file inside that commit. An append writes ~19 pages (the
row, its indexes, the FTS5 segment, the event), so one append in ~50 paid ~7 ms: the
append p99. Here one daemon thread per process and database file runs PASSIVE
checkpoints with its own connection, every few milliseconds while the WAL grows; PASSIVE
never blocks writers or readers and the copy runs in C without the GIL, beside the
writes. The writers keep a checkpoint of their own, every 4,000 pages, because only a
writer restarts the WAL from its top once everything is copied (a checkpoint on the side
alone never catches up with a busy writer, and the WAL would grow without end); when it
fires the pages are copied already, so it costs two fsyncs, in one append of ~200.

When writes pause (QUIET_SECONDS without a change) the thread does the upkeep that
would slow them down: it folds the search counts' pending rows (sqlite_counts.fold_step;
also while writes go on, once FOLD_AT rows are pending; a deletion of many messages folds
its own), merges the search index's segments (sqlite_index.merge_step),
a bounded step at a time, then empties the WAL file with a TRUNCATE checkpoint. The WAL
file otherwise keeps the size it once reached (SQLite reuses it from the top): 16 MB
after any burst of writes, beside a database of a few MB. Neither waits for a lock: a
writer holding it makes them try again at the next look. `journal_size_limit` bounds the file while writes
go on: a writer that restarts the WAL cuts it back to one checkpoint's worth. At exit
the thread closes its connection, so the last one out removes the WAL as SQLite does.

Durability is unchanged: a committed write is in the WAL either way.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import threading
import time
from typing import Any

from django.db.backends.signals import connection_created

from . import sqlite_counts, sqlite_index

# Seconds between looks at the WAL: soon again while it grows (a busy writer fills the
# 1,000 pages in ~30 ms and the copy must keep up), backing off to IDLE when it is still.
BUSY, IDLE = 0.003, 0.1
# The writers' own checkpoint, kept to bound the WAL (only a writer can restart it from
# the top once all is copied): finding the pages copied already, it costs two fsyncs.
# Every 4,000 pages instead of SQLite's 1,000, that is one append in ~200, not one in ~50.
WRITER_CHECKPOINT_PAGES = 4000
# Bytes the WAL file may keep after a writer restarts it: one checkpoint's pages (4 KiB
# each, and their frame headers). Past that a reader holding the log open made it grow.
JOURNAL_SIZE_LIMIT = WRITER_CHECKPOINT_PAGES * (4096 + 24)
# Seconds without a write before the WAL file is emptied: far longer than the gaps
# inside a burst of appends, so the truncation does not meet the burst's next append.
# Nor does a fold: any write by this thread makes a writer's next transaction read its
# pages afresh (SQLite drops a connection's cache when another has written), so folding
# in every 10 ms pause doubled the p99 of appends made in bursts (1.3 -> 2.6 ms).
QUIET_SECONDS = 1.0
# Seconds between two steps of the index merge: a writer waiting for the lock (SQLite's
# busy handler retries after 1, 2, 5, ... ms) gets it in between.
MERGE_GAP = 0.01
# Seconds between two folds of the search counts while writes go on.
FOLD_GAP = 0.1
_started: dict[str, threading.Thread] = {}
_lock = threading.Lock()
_stop = threading.Event()  # set at exit: the threads close their connections


def _checkpointer(path: str) -> None:
    wal = path + "-wal"
    last: tuple[int, int] | None = None
    changed = time.monotonic()
    settled = False  # upkeep done since the last write seen
    conn: sqlite3.Connection | None = None
    folded = 0.0
    try:
        interval = IDLE
        while not _stop.wait(interval):
            try:
                seen = _state(wal)
            except FileNotFoundError:
                if not os.path.exists(path):
                    return  # the database is gone (a test database, dropped)
                continue
            if seen != last:  # a write
                last, interval, changed, settled = seen, BUSY, time.monotonic(), False
                if conn is None:
                    conn = sqlite3.connect(path, timeout=0, check_same_thread=False,
                                           isolation_level=None)
                    conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
                _checkpoint(conn, "PASSIVE")
                # Under writes without a pause, the search counts' pending rows are folded
                # once there are FOLD_AT of them, a step every FOLD_GAP at most: writers
                # waiting on the lock (their busy handler sleeps up to 100 ms) get it.
                if time.monotonic() - folded > FOLD_GAP:
                    sqlite_counts.fold_step(conn, at_least=sqlite_counts.FOLD_AT)
                    folded = time.monotonic()
                continue
            interval = min(IDLE, interval * 2)
            if settled or conn is None or time.monotonic() - changed < QUIET_SECONDS:
                continue
            # Writes paused: fold the search counts and merge the search index a step at a
            # time (a writer coming back waits for one step at most), then empty the WAL.
            if sqlite_counts.fold_step(conn) or sqlite_index.merge_step(conn):
                interval = MERGE_GAP
            elif _give_back_free_pages(conn):  # the merges' freed pages (if busy: next look)
                settled = _checkpoint(conn, "TRUNCATE")  # if busy, the next look retries
            with contextlib.suppress(FileNotFoundError):
                last = _state(wal)  # this thread's own writes are not a writer's
    finally:
        with _lock:
            _started.pop(path, None)
        if conn is not None:
            conn.close()


def _state(wal: str) -> tuple[int, int]:
    st = os.stat(wal)
    return st.st_mtime_ns, st.st_size


def _give_back_free_pages(conn: sqlite3.Connection) -> bool:
    """Every page on the file's free list back to the file system, in one transaction
    that does not wait for the lock; False when a writer holds it. (sqlite3 steps a
    pragma once, and each step of incremental_vacuum gives back one page.)"""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error:
        return False
    try:
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if free:
            conn.executemany("PRAGMA incremental_vacuum", [()] * free)
        conn.execute("COMMIT")
    except sqlite3.Error:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        return False
    return True


def _checkpoint(conn: sqlite3.Connection, mode: str) -> bool:
    """Whether the checkpoint completed. timeout=0: one that would wait for a writer or a
    reader gives up instead (busy, or the file gone: the next look retries)."""
    try:
        busy = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()[0]
    except sqlite3.Error:
        return False
    return not busy


def _stop_all() -> None:
    """At exit: each thread closes its connection (the last connection to close
    checkpoints and removes the WAL, as SQLite does), within a second."""
    _stop.set()
    with _lock:
        threads = list(_started.values())
    for thread in threads:
        thread.join(timeout=1.0)


def _file_of(connection: Any) -> str | None:
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
        return None
    return os.path.abspath(name)


def _on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor != "sqlite":
        return
    path = _file_of(connection)
    if path is None:
        return
    with connection.cursor() as cur:  # the copy is the thread's; this only bounds the WAL
        cur.execute(f"PRAGMA wal_autocheckpoint={WRITER_CHECKPOINT_PAGES}")
        cur.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    with _lock:
        if path not in _started:
            thread = threading.Thread(target=_checkpointer, args=(path,),
                                      name="arbor-wal-checkpoint", daemon=True)
            _started[path] = thread
            thread.start()


def install() -> None:
    connection_created.connect(_on_connect, dispatch_uid="arbor-wal-checkpoints")
    atexit.register(_stop_all)
