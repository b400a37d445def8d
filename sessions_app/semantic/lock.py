"""One embedding worker at a time across a server's processes (each starts one, arbor/asgi.py).

The worker that holds the lock embeds; the others wait, and one of them takes over when
the holder stops or dies. Postgres: a session-level advisory lock on a connection of the
lock's own (never a pooled one, which would keep it past its user), so it goes with that
connection when the process dies. SQLite: an exclusive file lock (flock) on a file named
after the database, in the temporary directory, which the kernel drops with the process.
An in-memory SQLite database has one process: a lock within it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
import threading
from typing import IO, Any

import psycopg
from django.db import DatabaseError, connection

log = logging.getLogger(__name__)
LOCK_KEY = 0x41524245_4D42  # "ARBEMB": the advisory lock of the embedding worker
_local = threading.Lock()  # the in-memory database's stand-in


class Leader:
    """Whether this worker is the one that embeds: `acquire()` (never waits) says so."""

    def __init__(self) -> None:
        self._conn: Any = None  # Postgres: the connection that holds the lock, or tries
        self._pg_held = False
        self._file: IO[str] | None = None  # SQLite: the locked file
        self._local = False

    @property
    def held(self) -> bool:
        return self._pg_held or self._file is not None or self._local

    def acquire(self) -> bool:
        """True when this worker holds the lock (taken now, or still held)."""
        try:
            if connection.vendor == "postgresql":
                return self._postgres()
            return self._sqlite()
        except (DatabaseError, psycopg.Error, OSError) as exc:  # psycopg's: the lock's own
            self.release()
            log.warning("the embedding lock could not be taken: %s", exc)
            return False

    def _postgres(self) -> bool:
        # The connection stays open while the worker runs, holding the lock or not, so
        # the workers that wait do not connect anew at each try.
        if self._conn is None:
            self._conn = psycopg.connect(**connection.get_connection_params(),
                                         autocommit=True)
        with self._conn.cursor() as cur:
            if self._pg_held:
                cur.execute("SELECT 1")  # still connected, so still held
            else:
                cur.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
                self._pg_held = bool(cur.fetchone()[0])
        return self._pg_held

    def _sqlite(self) -> bool:
        if self.held:
            return True
        name = str(connection.settings_dict["NAME"])
        if connection.is_in_memory_db():
            self._local = _local.acquire(blocking=False)
            return self._local
        digest = hashlib.sha1(os.path.abspath(name).encode()).hexdigest()[:16]
        path = os.path.join(tempfile.gettempdir(), f"arbor-embed-{digest}.lock")
        handle = open(path, "a+")  # noqa: SIM115 - kept open while the lock is held
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()  # the advisory lock goes with its session
            self._conn = None
            self._pg_held = False
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()  # closing the descriptor drops the flock
            self._file = None
        if self._local:
            self._local = False
            _local.release()
