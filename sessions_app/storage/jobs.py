"""Background work that one worker runs at a time (issue 27), for any number of worker
processes on one database.

    with jobs.exclusive("outbox-prune") as mine:
        if mine:
            ...  # no other thread or process runs "outbox-prune" until this block ends

`exclusive(name)` does not wait (unless given `wait=` seconds): it answers False when someone
else holds `name`. It holds,
for the block's length:

- a lock of this process (a thread of the same process is refused too), and
- on Postgres, a transaction-level advisory lock (`pg_try_advisory_xact_lock`) taken in a
  transaction of its own on a dedicated connection, outside Django's pool. The job's own
  queries run on Django's connections as usual (short transactions, a pooled connection
  each); the lock's transaction stays open, idle, until the block ends, and its end (or the
  connection's loss) releases the lock. A transaction lock rather than a session one, so
  it also works through PgBouncer in transaction mode; a transaction that only took a lock
  holds back no vacuum. A pooled connection cannot hold a session-level lock: the next
  request that borrows it would inherit it.
- on SQLite (one machine), a POSIX byte-range lock (`fcntl.lockf`) on a file beside the
  database, `<database>-jobs-lock`: one byte per job name. The kernel drops it when the
  process dies.

The periodic jobs (lifecycle/worker.py's PERIODIC, lifecycle/upkeep.py) take these locks; so do
`manage.py apply_retention` and `purge` (waiting up to COMMAND_WAIT seconds), and any other
background work can (the embedding worker, say, as `exclusive("embed")`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import connection

log = logging.getLogger(__name__)

NAMESPACE = "arbor:"


def key(name: str) -> int:
    """The advisory lock's 64-bit key of a job name (signed, as Postgres' bigint)."""
    digest = hashlib.blake2b((NAMESPACE + name).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


_local: dict[str, threading.Lock] = {}
_local_guard = threading.Lock()


def _thread_lock(name: str) -> threading.Lock:
    with _local_guard:
        return _local.setdefault(name, threading.Lock())


COMMAND_WAIT = 60.0  # seconds a management command waits for a job a worker is running


@contextmanager
def exclusive(name: str, *, wait: float = 0.0) -> Iterator[bool]:
    """True when this thread now runs `name` alone among every worker of the database;
    False when another thread or process holds it (at once, or after trying for `wait`
    seconds)."""
    deadline = time.monotonic() + wait
    while True:
        with _attempt(name) as mine:
            if mine or time.monotonic() >= deadline:
                yield mine
                return
        time.sleep(0.2)


@contextmanager
def _attempt(name: str) -> Iterator[bool]:
    local = _thread_lock(name)
    if not local.acquire(blocking=False):
        yield False
        return
    try:
        if connection.vendor == "postgresql":
            with _pg_lock(name) as mine:
                yield mine
        elif connection.vendor == "sqlite":
            with _file_lock(name) as mine:
                yield mine
        else:  # pragma: no cover - Arbor runs on these two
            yield True
    finally:
        local.release()


# --- Postgres ----------------------------------------------------------------------

_idle: list[Any] = []  # open lock connections not holding a lock now
_idle_guard = threading.Lock()
KEEP_IDLE = 1  # lock connections kept open between jobs (README: pool sizing)


def _connect() -> Any:
    """A connection of its own (never the pool's), on the same database as Django's."""
    import psycopg

    params = connection.get_connection_params()
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    params.setdefault("connect_timeout", 5)
    params["application_name"] = "arbor-jobs"
    return psycopg.connect(**params, autocommit=False)


def _take() -> Any:
    with _idle_guard:
        while _idle:
            conn = _idle.pop()
            if not conn.closed and not conn.broken:
                return conn
    return _connect()


def _give_back(conn: Any) -> None:
    with _idle_guard:
        if len(_idle) < KEEP_IDLE and not conn.closed and not conn.broken:
            _idle.append(conn)
            return
    conn.close()


@contextmanager
def _pg_lock(name: str) -> Iterator[bool]:
    conn = None
    try:
        conn = _take()
        # The server's idle_in_transaction_session_timeout, if set, must not end this
        # transaction (and free the lock) while the job runs on other connections.
        got = bool(conn.execute(
            "SELECT pg_try_advisory_xact_lock(%s), "
            "set_config('idle_in_transaction_session_timeout', '0', true)",
            [key(name)]).fetchone()[0])
    except Exception:  # noqa: BLE001 - an unreachable database: the job waits its turn
        log.warning("could not take the lock of job %s", name, exc_info=True)
        if conn is not None:
            conn.close()
        yield False
        return
    try:
        yield got
    finally:
        try:
            conn.rollback()  # ends the transaction: the lock goes with it
        except Exception:  # noqa: BLE001 - a lost connection released the lock already
            conn.close()
        _give_back(conn)


def close_connections() -> None:
    """Close the idle lock connections (tests; a process about to exit)."""
    with _idle_guard:
        while _idle:
            _idle.pop().close()


# --- SQLite ------------------------------------------------------------------------

_files: dict[str, int] = {}
_files_guard = threading.Lock()


def lock_path() -> Path | None:
    """The lock file beside the SQLite database; None for an in-memory one (one
    process: the thread lock is enough)."""
    db = str(connection.settings_dict["NAME"] or "")
    if not db or db == ":memory:" or "mode=memory" in db:
        return None
    return Path(db + "-jobs-lock")  # beside -wal and -shm (and ignored like them)


def _fd(path: Path) -> int:
    # Kept open for the process's life: closing any descriptor of the file would drop
    # every lock this process holds on it (POSIX record locks).
    with _files_guard:
        if str(path) not in _files:
            _files[str(path)] = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        return _files[str(path)]


@contextmanager
def _file_lock(name: str) -> Iterator[bool]:
    path = lock_path()
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process per database there
        yield True
        return
    if path is None:
        yield True
        return
    fd, offset = _fd(path), key(name) % (1 << 30)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
