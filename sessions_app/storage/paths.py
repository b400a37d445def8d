"""Message reads: one message, the latest leaf, children, the root-to-leaf path (one
recursive CTE whatever its length, SPEC §14), the tree and the counters."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import orjson
from django.db import connection

from memory_core.errors import Conflict, NotFound
from memory_core.messages import Message, project_text
from memory_core.search import SearchHit
from memory_core.storage import EncodedPath
from memory_core.tree import Compaction, TreeRow, tree_rows

from .. import models
from . import hot, path_cache, sql
from .overlays import read_stamped_views, read_views
from .vendors.chosen import current


@contextmanager
def _no_gc() -> Iterator[None]:
    """Build a long path without the cyclic GC scanning it: the messages are acyclic
    and owned by the caller. Collection is paused while they are made, then everything
    young is promoted to the oldest generation (freeze + unfreeze moves lists, it does
    not scan them), so neither this read nor the next young collections walk 20,000
    new lists and tuples; refcounting frees them as usual. Skipped when the process
    froze objects of its own (a pre-fork server), whose freeze must stand."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def row_message(row: Sequence[Any]) -> Message:
    """A Message from the sql.MESSAGE_COLUMNS of a row."""
    to_dt = current().to_datetime
    return Message(row[0], row[1], row[2], orjson.loads(row[3]), orjson.loads(row[4]),
                   to_dt(row[5]))


def find(cur: Any, session_id: str, ids: Sequence[str]) -> dict[str, tuple[int, Message]]:
    """id -> (seq, message) for those of `ids` stored in the session."""
    if not ids:
        return {}
    cur.execute(sql.find_messages(len(ids)), [session_id, *ids])
    return {row[1]: (row[0], row_message(row[1:])) for row in cur.fetchall()}


def leaf(cur: Any, session_id: str) -> tuple[int, str] | None:
    """(seq, id) of the latest leaf."""
    cur.execute(sql.LEAF, [session_id])
    row = cur.fetchone()
    return (row[0], row[1]) if row else None


def chain(rows: list[Any]) -> list[Any]:
    """The rows (ordered by seq; seq and parent_seq last) on the chain of parent pointers
    up from the last one: all of them when the session is unbranched."""
    expected = rows[-1][5] if rows else None
    for i in range(len(rows) - 1, -1, -1):
        if rows[i][5] != expected:
            break
        expected = rows[i][6]
    else:
        return rows  # one unbroken chain (the common case: no branches)
    chain = []
    expected = rows[-1][5]
    for row in reversed(rows):
        if row[5] == expected:
            chain.append(row)
            expected = row[6]
    chain.reverse()
    return chain


def _messages(rows: list[Any], *, parse_time: bool, loads: Any,
              empty: Any = None) -> list[Message]:
    """Messages from a root-to-leaf chain of sql.path_read rows: each parent id is the
    id before; parts and metadata through `loads` (decoded, or kept as JSON fragments);
    created_at parsed in C (SQLite hands it over as ISO text with its offset)."""
    new = tuple.__new__  # skips NamedTuple's Python-level __new__ (10k calls)
    when = datetime.fromisoformat if parse_time else _same
    parents = [None, *(r[0] for r in rows)]
    return [new(Message, (r[0], parent, r[1], loads(r[2]),
                          (empty or {}) if r[3] is None else loads(r[3]), when(r[4])))
            for r, parent in zip(rows, parents, strict=False)]


def _encoded(rows: list[Any]) -> list[Message]:
    """Messages whose parts and metadata stay the stored JSON (orjson fragments) and
    created_at the stored text: immutable throughout, for the JSON API to splice in."""
    return _messages(rows, parse_time=False, loads=orjson.Fragment, empty=_EMPTY)


_EMPTY = orjson.Fragment("{}")


def message_dicts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Message.to_dict's shape for orjson: encoded messages splice their stored JSON in.
    (Unpacked: Message's own __getitem__, for m["id"], is Python-level.)"""
    return [{"id": i, "parent_id": p, "role": r, "parts": parts, "metadata": meta,
             "created_at": at} for i, p, r, parts, meta, at in messages]


def _path_json(messages: Sequence[Message]) -> bytes | None:
    """The JSON array of a kept encoded path (stored JSON is valid UTF-8; None if not)."""
    try:
        return orjson.dumps(message_dicts(messages))
    except orjson.JSONEncodeError:
        return None


def _read_path(cur: Any, vendor: str, session_id: str, leaf_id: str | None) -> list[Any]:
    """The sql.path_read rows of the path to `leaf_id` (None: the latest leaf), checked
    to be one chain of parent pointers."""
    if leaf_id is None:
        cur.execute(sql.READ_TO_LATEST[vendor], [session_id, session_id, session_id])
    else:
        cur.execute(sql.READ_TO_ID[vendor], [session_id, leaf_id, session_id, session_id])
    rows = cur.fetchall()
    if leaf_id is not None and not rows:
        raise NotFound(f"message {leaf_id} not found in session {session_id}")
    return chain(rows)


def _same(value: Any) -> Any:
    return value


class Paths:
    """The read half of the message storage."""

    def get_message(self, session_id: str, message_id: str) -> Message | None:
        with connection.cursor() as cur:
            current().fast_reads(cur)
            found = find(cur, session_id, [message_id])
        return found[message_id][1] if message_id in found else None

    def latest_leaf(self, session_id: str) -> Message | None:
        with connection.cursor() as cur:
            current().fast_reads(cur)
            cur.execute(sql.LATEST_MESSAGE, [session_id])
            row = cur.fetchone()
        return row_message(row) if row else None

    def children(self, session_id: str, message_id: str | None) -> list[Message]:
        with connection.cursor() as cur:
            current().fast_reads(cur)
            if message_id is None:  # the roots: siblings of each other
                cur.execute(sql.ROOTS, [session_id])
                return [row_message(r) for r in cur.fetchall()]
            cur.execute(
                f"SELECT {sql.MESSAGE_COLUMNS} FROM arbor_message WHERE parent_seq = "
                f"(SELECT seq FROM arbor_message WHERE {sql.ID_ANCHOR}) "
                f"ORDER BY seq",
                [session_id, message_id],
            )
            rows = cur.fetchall()
        if not rows and self.get_message(session_id, message_id) is None:
            raise NotFound(f"message {message_id} not found in session {session_id}")
        return [row_message(r) for r in rows]

    def path(
        self, session_id: str, leaf_id: str | None, *, with_overlays: bool,
        encoded: bool = False,
    ) -> tuple[list[Message], list[Compaction], dict[tuple[str, str], Any]]:
        vendor = connection.vendor
        cache = path_cache.paths if path_cache.PathCache.usable() else None
        with hot.cursor() as cur:
            current().fast_reads(cur)
            if cache is None:
                rows = _read_path(cur, vendor, session_id, leaf_id)
                views = read_views(cur, session_id) if with_overlays and rows else ([], {})
            else:
                stamp, views = read_stamped_views(cur, session_id)
                key = cache.key(session_id, leaf_id)
                entry = cache.get(key, stamp)
                if entry is None:
                    rows = _read_path(cur, vendor, session_id, leaf_id)
                    entry = cache.put(key, stamp, rows) if stamp is not None else None
                else:
                    rows = entry.rows
        if encoded and cache is not None and entry is not None:
            if entry.encoded is None:
                entry.encoded = _encoded(rows)
            if entry.json is None and (json := _path_json(entry.encoded)) is not None:
                cache.add_json(key, entry, json)
            path = EncodedPath(entry.encoded, entry.json)
        else:
            with _no_gc():
                path = (_encoded(rows) if encoded
                        else _messages(rows, parse_time=vendor == "sqlite", loads=orjson.loads))
                del rows  # freed now, not scanned by the collection that re-enabling starts
        overlays, unloaded = views if with_overlays and path else ([], {})
        return path, overlays, unloaded

    def path_length(self, session_id: str, leaf_id: str | None) -> int:
        anchor = sql.ID_ANCHOR if leaf_id is not None else sql.LATEST_ANCHOR
        params = [session_id, leaf_id] if leaf_id is not None else [session_id]
        with connection.cursor() as cur:
            cur.execute(sql.path_length(anchor), params)
            count = int(cur.fetchone()[0])
        if leaf_id is not None and count == 0:
            raise NotFound(f"message {leaf_id} not found in session {session_id}")
        return count

    def tree(self, session_id: str) -> list[TreeRow]:
        return tree_rows([(m.id, m.parent_id, m.role, m.text, m.created_at)
                          for m in self.all_messages(session_id)])

    def all_messages(self, session_id: str) -> list[Message]:
        """Every message of the session in insertion order (parents before children, so
        each parent's id is known by the time its children come)."""
        with connection.cursor() as cur:
            current().fast_reads(cur)
            cur.execute("SELECT seq, parent_seq, message_id, role, parts, metadata, created_at "
                        f"FROM arbor_message WHERE session_key = {sql.SESSION_KEY} ORDER BY seq",
                        [session_id])
            ids: dict[int, str] = {}
            out = []
            for seq, parent_seq, message_id, *fields in cur.fetchall():
                ids[seq] = message_id
                out.append(row_message((message_id, ids.get(parent_seq), *fields)))
            return out

    def message_count(self, session_id: str) -> int:
        return int(
            models.Session.objects.filter(id=session_id)
            .values_list("message_count", flat=True)
            .first()
            or 0
        )

    def search(
        self, *, agent_id: str, session_id: str | None, terms: Sequence[str], limit: int,
        exclude_session_id: str | None = None,
    ) -> list[SearchHit]:
        if not terms:
            return []
        d = current()
        with hot.cursor() as cur:
            d.fast_reads(cur)
            rows = d.search(cur, agent_id=agent_id, session_id=session_id,
                            exclude_session_id=exclude_session_id if session_id is None else None,
                            terms=terms, limit=limit)
        to_datetime = d.to_datetime
        return [  # positional: keywords cost a search of 20 candidates 10 µs
            SearchHit(r[0], r[1], r[2], project_text(orjson.loads(r[3])), to_datetime(r[4]),
                      i, round(float(r[5]), 6))
            for i, r in enumerate(rows, start=1)
        ]


def raise_missing_parent(cur: Any, session_id: str, parent_id: str) -> None:
    # A parent in a sibling session is a conflict; anything else (including another
    # tenant's message) is simply not found, so ids of others leak nothing.
    cur.execute(
        "SELECT 1 FROM arbor_message m JOIN arbor_session s ON s.key = m.session_key "
        "WHERE m.message_id = %s AND s.id <> %s AND s.agent_id = "
        "(SELECT agent_id FROM arbor_session WHERE id = %s) LIMIT 1",
        [parent_id, session_id, session_id],
    )
    if cur.fetchone() is not None:
        raise Conflict(f"parent message {parent_id} belongs to another session")
    raise NotFound(f"parent message {parent_id} not found in session {session_id}")


def has_sibling(cur: Any, session_id: str, message: Message) -> bool:
    """Whether a stored message has a sibling besides itself (it started a branch);
    roots are siblings of each other."""
    if message.parent_id is None:
        cur.execute(f"SELECT 1 FROM arbor_message WHERE session_key = {sql.SESSION_KEY} "
                    "AND parent_seq IS NULL AND message_id <> %s LIMIT 1",
                    [session_id, message.id])
        return cur.fetchone() is not None
    cur.execute(
        "SELECT 1 FROM arbor_message p JOIN arbor_message c ON c.parent_seq = p.seq "
        f"WHERE p.session_key = {sql.SESSION_KEY} AND p.message_id = %s "
        "AND c.message_id <> %s LIMIT 1",
        [session_id, message.parent_id, message.id])
    return cur.fetchone() is not None
