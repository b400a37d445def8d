"""Upkeep of SQLite's message index, a contentless FTS5 table (migration 0002): it keeps
the tokens' index but not the bodies, so removing or replacing a row means handing FTS5
the row's body again.

`arbor_search_body(parts, search_extra)`, registered on every SQLite connection Django
opens, rebuilds a message's body: the index tokens of its parts' text, then its stored
extra tokens (a tool result's call name and input). Triggers on arbor_message call it
for every delete and edit, and a fork for its copies. It must give the tokens the write
indexed: a change to `index_tokens` or `project_text` ships with a migration that
rebuilds the index. A connection without it (the sqlite3 shell) cannot delete or edit
messages: the trigger fails and nothing changes.

FTS5 merges the index's segments a few at a time as rows arrive (automerge: four of a
level), so an index written a message at a time keeps two dozen segments, and every term
of every search is looked up in each (a search took 1.5× as long as in the same index
written in one go). When writes pause, the WAL thread (wal.py) merges them, merge_step by
merge_step, down to about one per level.

A flush (tests, `manage.py flush`) may empty arbor_session before arbor_message; the
triggers then cannot name those rows' scope, so after a flush an index with no messages
left is emptied whole (`delete-all`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from functools import lru_cache
from typing import Any

import orjson
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from memory_core.messages import project_text
from memory_core.words import index_tokens

from . import sqlite_counts


def search_tokens(parts: list[dict[str, Any]] | str, extra: str | None) -> list[str]:
    """The tokens a message row indexes (parts as stored JSON text, or decoded)."""
    decoded = orjson.loads(parts) if isinstance(parts, str) else parts
    tokens = index_tokens(project_text(decoded))
    return tokens + extra.split() if extra else tokens


@lru_cache(maxsize=64)
def stored_tokens(parts: str, extra: str | None) -> tuple[str, ...]:
    # A trigger asks for one row's body, terms and repeats in turn: tokenised once.
    return tuple(search_tokens(parts, extra))


def search_body(parts: str, extra: str | None) -> str:
    return " ".join(stored_tokens(parts, extra))


def search_counted(parts: str, extra: str | None) -> str:
    return sqlite_counts.counted_json(stored_tokens(parts, extra))


# Pages written per merge step: a few milliseconds holding the write lock.
MERGE_PAGES = 32
# FTS5's own setting for the 'merge' command: a level with this many segments is merged.
USERMERGE = 2


def merge_step(conn: sqlite3.Connection) -> bool:
    """One step of merging the message index's segments (about MERGE_PAGES pages), in a
    transaction of its own on `conn` (a sqlite3 connection in autocommit whose timeout is
    0, so it never waits for the lock). True when it merged something (there may be more
    to merge); False when there was nothing to merge or the lock was taken."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error:
        return False
    try:
        conn.execute("INSERT INTO arbor_message_fts(arbor_message_fts, rank) "
                     "VALUES ('usermerge', ?)", [USERMERGE])
        before = conn.total_changes
        conn.execute("INSERT INTO arbor_message_fts(arbor_message_fts, rank) "
                     "VALUES ('merge', ?)", [MERGE_PAGES])
        merged = conn.total_changes - before >= 2  # the command alone counts one change
        conn.execute("COMMIT")
    except sqlite3.Error:  # no index (an unmigrated file), or a write failed
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        return False
    return merged


def _on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "sqlite":
        raw = connection.connection
        raw.create_function("arbor_search_body", 2, search_body, deterministic=True)
        raw.create_function("arbor_search_counted", 2, search_counted, deterministic=True)


def _after_flush(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """post_migrate, which a flush sends too: an index left with rows but no messages."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE name = 'arbor_message_fts'")
        if cur.fetchone() is None:
            return
        cur.execute("SELECT EXISTS (SELECT 1 FROM arbor_message) "
                    "OR NOT EXISTS (SELECT 1 FROM arbor_message_fts_docsize)")
        if not cur.fetchone()[0]:
            cur.execute("INSERT INTO arbor_message_fts(arbor_message_fts) VALUES ('delete-all')")
            cur.execute("SELECT name FROM sqlite_master WHERE name = 'arbor_search_df'")
            if cur.fetchone() is not None:  # (a file not yet migrated past 0008 has none)
                sqlite_counts.emptied(cur)


def install() -> None:
    connection_created.connect(_on_connect, dispatch_uid="arbor-sqlite-functions")
    post_migrate.connect(_after_flush, dispatch_uid="arbor-sqlite-index-flush")
