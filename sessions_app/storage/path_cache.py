"""Recently read paths, kept per process as the rows the database returned.

An agent reads its whole history every turn, and a person's page re-reads it on every
event, so most reads ask again for a path this process has just read. A read first
fetches the session's stamp (with the overlays it needs anyway, one query); when the
stamp is the one a cached path was read under, the path is rebuilt from the cached rows
without reading them again, else it is read and cached. A read for the JSON API
(`encoded`) keeps what it builds beside the rows: those messages hold only immutable
values (strings and orjson fragments), so every such read can share them.

The stamp moves with every write to the session's messages: each one updates the
session's counters and `updated_at` in its own transaction (sql.COUNT), and a row added
by any means raises the session's largest seq. Rows are kept as fetched (ids, JSON
text, timestamps as stored), so every read decodes fresh values that its caller may
change freely. Reads inside a transaction bypass the cache: they may see writes that are
not committed yet. ARBOR_PATH_CACHE_MB (default 64) bounds what a process keeps,
counting each message's stored JSON plus a fixed overhead; 0 turns the cache off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.db import connection

DEFAULT_MB = 64
ROW_OVERHEAD = 300  # bytes of a kept row besides its JSON: tuples, ids, timestamp

Key = tuple[str, str, str, str | None]


class Entry:
    """A kept path: the stamp it was read under, its rows, their size, and the encoded
    messages built from them (set by the first encoded read)."""

    __slots__ = ("stamp", "rows", "size", "encoded", "json")

    def __init__(self, stamp: Any, rows: list[Any], size: int) -> None:
        self.stamp, self.rows, self.size = stamp, rows, size
        self.encoded: list[Any] | None = None
        self.json: bytes | None = None  # the encoded messages as one JSON array


class PathCache:
    """Least recently used paths, bounded by their total size."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: OrderedDict[Key, Entry] = OrderedDict()
        self._bytes = 0

    @staticmethod
    def limit() -> int:
        """Bytes a process may keep."""
        return max(0, int(float(getattr(settings, "ARBOR_PATH_CACHE_MB", DEFAULT_MB)) * 2**20))

    @staticmethod
    def usable() -> bool:
        """Outside a transaction only: what it reads is committed."""
        return not connection.in_atomic_block and PathCache.limit() > 0

    @staticmethod
    def key(session_id: str, leaf_id: str | None) -> Key:
        return (connection.alias, str(connection.settings_dict["NAME"]), session_id, leaf_id)

    def get(self, key: Key, stamp: Any) -> Entry | None:
        with self._lock:
            found = self._paths.get(key)
            if found is None:
                return None
            if found.stamp != stamp:
                self._drop(key)
                return None
            self._paths.move_to_end(key)
            return found

    def put(self, key: Key, stamp: Any, rows: list[Any]) -> Entry | None:
        """Keep sql.path_read rows (parts and metadata JSON at 2 and 3); None when they
        are not kept (too large, or nothing)."""
        limit = self.limit()
        size = sum(len(r[2]) + len(r[3] or "") for r in rows) + ROW_OVERHEAD * len(rows)
        if not rows or size > limit:
            return None
        entry = Entry(stamp, rows, size)
        with self._lock:
            self._drop(key)
            self._paths[key] = entry
            self._grow(size, limit)
        return entry

    def add_json(self, key: Key, entry: Entry, json: bytes) -> None:
        """Keep the path's JSON with it, counted in the bound (kept only while the entry
        is: a write or an eviction since it was read drops both)."""
        with self._lock:
            if entry.json is not None:  # another thread's read kept it first
                return
            entry.json = json
            if self._paths.get(key) is entry:
                entry.size += len(json)
                self._grow(len(json), self.limit())

    def forget(self, session_ids: set[str]) -> int:
        """Drop every kept path of these sessions (their messages were erased: what they
        held must not stay in memory until a read would find it stale); how many."""
        with self._lock:
            doomed = [k for k in self._paths if k[2] in session_ids]
            for key in doomed:
                self._drop(key)
        return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._paths.clear()
            self._bytes = 0

    def _grow(self, size: int, limit: int) -> None:
        """Count `size` more bytes, then drop the least recently used paths past the
        bound (under the lock)."""
        self._bytes += size
        while self._bytes > limit:
            self._drop(next(iter(self._paths)))

    def _drop(self, key: Key) -> None:
        found = self._paths.pop(key, None)
        if found is not None:
            self._bytes -= found.size


paths = PathCache()
