"""SQLite WAL checkpoints off the request path.

SQLite's default: the connection whose commit takes the WAL past 1,000 pages copies
them all into the database file inside that commit. An append writes ~17 pages (the
row, its indexes, the FTS5 segment, the event), so one append in ~60 paid several
milliseconds: the append p99. Here one daemon thread per process and database file
runs PASSIVE checkpoints with its own connection whenever the WAL has changed; PASSIVE
never blocks writers or readers and the copy runs in C without the GIL, beside the
writes. The writers keep SQLite's auto-checkpoint: when it fires, the pages are
already copied, so it only confirms and lets the next write reuse the WAL from its
start (a checkpoint on the side alone never catches up with a busy writer, and the
WAL would grow without end).

Durability is unchanged: a committed write is in the WAL either way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from typing import Any

from django.db.backends.signals import connection_created

INTERVAL = 0.1  # seconds between looks at the WAL
_started: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def _checkpointer(path: str) -> None:
    wal = path + "-wal"
    last: tuple[int, int] | None = None
    conn: sqlite3.Connection | None = None
    stop = threading.Event()
    try:
        while not stop.wait(INTERVAL):
            try:
                st = os.stat(wal)
            except FileNotFoundError:
                if not os.path.exists(path):
                    return  # the database is gone (a test database, dropped)
                continue
            seen = (st.st_mtime_ns, st.st_size)
            if seen == last:
                continue
            last = seen
            if conn is None:
                conn = sqlite3.connect(path, timeout=0, check_same_thread=False,
                                       isolation_level=None)
            with contextlib.suppress(sqlite3.Error):  # busy or gone: next look retries
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    finally:
        with _lock:
            _started.pop(path, None)
        if conn is not None:
            conn.close()


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
    with _lock:
        if path not in _started:
            thread = threading.Thread(target=_checkpointer, args=(path,),
                                      name="arbor-wal-checkpoint", daemon=True)
            _started[path] = thread
            thread.start()


def install() -> None:
    connection_created.connect(_on_connect, dispatch_uid="arbor-wal-checkpoints")
