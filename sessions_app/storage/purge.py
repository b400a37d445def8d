"""`purge`: what a deletion left in the database files goes too (issue 31).

SQLite keeps a deleted row's bytes in freed pages, an FTS5 index keeps a deleted
message's words in its segments (a contentless index records the deletion beside them
until the segments are merged), and the WAL keeps old page images. So every SQLite
connection runs with `secure_delete` (freed content is overwritten with zeros), and a
purge merges the full-text indexes in small steps (each its own transaction, so writers
wait at most one step), gives freed pages back to the file system, then checkpoints the
WAL and truncates it. On Postgres, dead rows stay in their pages until VACUUM: a purge
vacuums the tables deletions touch.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import connection, transaction
from django.db.backends.signals import connection_created
from django.utils import timezone

from .. import models
from .vendors import sqlite_counts
from .vendors.chosen import current

log = logging.getLogger(__name__)

FTS_TABLES = ("arbor_message_fts", "arbor_entry_fts")
MERGE_PAGES = 500  # pages one merge step writes: a few milliseconds of the write lock
MAX_MERGE_STEPS = 100_000
VACUUMED = ("arbor_message", "arbor_session_event", "arbor_compaction", "arbor_session",
            "arbor_block_value", "arbor_entry", "arbor_session_prompt")


def _secure(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "sqlite":
        with connection.cursor() as cur:
            cur.execute("PRAGMA secure_delete=ON")


def install() -> None:
    connection_created.connect(_secure, dispatch_uid="arbor-secure-delete")


def purge_after_commit() -> None:
    """Purge once the current transaction (if any) has committed: a purge cannot run in
    one, and what it clears must be deleted first."""
    transaction.on_commit(purge, robust=True)


def purge() -> dict[str, Any]:
    """Clear deleted content out of the database; what it did. Outside any transaction
    (Postgres' VACUUM and SQLite's checkpoint cannot run in one)."""
    if connection.in_atomic_block:
        raise RuntimeError("purge runs outside a transaction (purge_after_commit)")
    started = time.monotonic()
    last = models.Erasure.objects.order_by("-id").values_list("id", flat=True).first()
    if connection.vendor == "sqlite":
        done = _sqlite()
    else:
        done = _postgres()
    if last is not None:
        models.Erasure.objects.filter(id__lte=last, purged_at=None).update(
            purged_at=timezone.now())
    done["seconds"] = round(time.monotonic() - started, 3)
    log.info("purge: %s", done)
    return done


CHECKPOINT_TRIES = 40  # 2 s at most


def _sqlite() -> dict[str, Any]:
    connection.ensure_connection()
    raw = connection.connection
    steps = 0
    # The search counts' pending rows name a removed row's words until folded (and a
    # word no row holds any more leaves the counters then).
    while sqlite_counts.fold_step(raw):
        steps += 1
    with connection.cursor() as cur:
        cur.execute("PRAGMA secure_delete=ON")
        for table in FTS_TABLES:
            # Negative: merge segments of any level, until all are one (as 'optimize'
            # does, but in steps the writers can come between).
            for _ in range(MAX_MERGE_STEPS):
                before = raw.total_changes
                cur.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', %s)",
                            [-MERGE_PAGES])
                steps += 1
                if raw.total_changes - before <= 1:  # only the command's own row: done
                    break
        current().give_back_free_pages(cur)
    # A fresh cursor: on the one that stepped incremental_vacuum, the checkpoint answers
    # (0, -1, -1) without running.
    # The WAL thread's own checkpoint or merge step may hold the file for a few ms: try again.
    with connection.cursor() as cur:
        for _ in range(CHECKPOINT_TRIES):
            cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy, wal_pages, _ = cur.fetchone()
            if not busy:
                break
            time.sleep(0.05)
    return {"vendor": "sqlite", "merge_steps": steps, "wal_truncated": not busy,
            "wal_pages": wal_pages}


def _postgres() -> dict[str, Any]:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass('arbor_message_vector') IS NOT NULL")
        vectors = ("arbor_message_vector",) if cur.fetchone()[0] else ()
        tables = (*VACUUMED, *vectors)
        cur.execute(f"VACUUM {', '.join(tables)}")
    return {"vendor": "postgresql", "vacuumed": list(tables)}
