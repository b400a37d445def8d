"""Branch navigation reads, for branch switchers and chat views that page up a long path:
the newest leaf under a message, and a page of a path with each message's place among
its siblings. Each is a fixed number of queries (one, or two for a
page above before_id), however long the path or big the tree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from memory_core.errors import InvalidInput, NotFound
from memory_core.messages import Message
from memory_core.tree import PathPage, SiblingInfo, TreeRow

from . import sql
from .overlays import Views, read_views
from .paths import find, has_sibling, leaf, row_message
from .vendors.chosen import current


def sibling_info(siblings: Sequence[str], message_id: str) -> SiblingInfo | None:
    """Where message_id stands among `siblings` (its parent's children, or the session's
    roots, oldest first); None when it is not among them."""
    return _places(siblings).get(message_id)


def sibling_positions(rows: Sequence[TreeRow]) -> dict[str, SiblingInfo]:
    """Every message's place among its siblings, from a whole tree read (Session.get_tree:
    insertion order, so each parent's children come oldest first)."""
    children: dict[str | None, list[str]] = {}
    for row in rows:
        children.setdefault(row.parent_id, []).append(row.id)
    return {mid: info for ids in children.values() for mid, info in _places(ids).items()}


def _places(ids: Sequence[str]) -> dict[str, SiblingInfo]:
    """The one computation of sibling places in Python: 1-based index, count, previous and
    next ids, as sql.path_page's window gives them to a path page's messages in SQL."""
    n = len(ids)
    return {mid: SiblingInfo(i + 1, n, ids[i - 1] if i else None, ids[i + 1] if i + 1 < n else None)
            for i, mid in enumerate(ids)}


def _missing(session_id: str, message_id: str) -> NotFound:
    return NotFound(f"message {message_id} not found in session {session_id}")


class Branches:
    """Reads of the tree's shape around one path."""

    def newest_leaf_under(self, session_id: str, message_id: str) -> Message:
        with connection.cursor() as cur:
            current().fast_reads(cur)
            cur.execute(sql.NEWEST_LEAF_UNDER, [session_id, message_id])
            row = cur.fetchone()
        if row is None:
            raise _missing(session_id, message_id)
        return row_message(row)

    def path_page(
        self, session_id: str, leaf_id: str | None, *, limit: int, before_id: str | None,
        on_path: bool = False,
    ) -> PathPage:
        with connection.cursor() as cur:
            current().fast_reads(cur)
            if before_id is not None:
                # The messages before before_id on any path through it are its ancestors:
                # depth 0 is before_id itself (it tells a missing id from a root).
                cur.execute(sql.PAGE_TO_ID, [session_id, before_id, limit + 1, session_id])
                rows = cur.fetchall()
                if not rows:
                    raise _missing(session_id, before_id)
                rows = rows[:-1]
                if on_path:
                    page_leaf = self._leaf_above(cur, session_id, leaf_id, before_id)
                else:
                    page_leaf = self._leaf_id(cur, session_id, leaf_id)
            elif leaf_id is not None:
                cur.execute(sql.PAGE_TO_ID, [session_id, leaf_id, limit, session_id])
                rows = cur.fetchall()
                if not rows:
                    raise _missing(session_id, leaf_id)
                page_leaf = leaf_id
            else:
                cur.execute(sql.PAGE_TO_LATEST, [session_id, limit, session_id])
                rows = cur.fetchall()
                page_leaf = rows[-1][0] if rows else None
        has_more = len(rows) > limit
        rows = rows[-limit:]
        return PathPage(
            messages=[row_message(r) for r in rows], has_more=has_more, leaf_id=page_leaf,
            siblings={r[0]: SiblingInfo(int(r[7]), int(r[8]), r[9], r[10]) for r in rows})

    def is_branch(self, session_id: str, message: Any) -> bool:
        """Whether a stored message has a sibling besides itself (it started a branch);
        roots are siblings of each other."""
        with connection.cursor() as cur:
            return has_sibling(cur, session_id, message)

    def views(self, session_id: str) -> Views:
        with connection.cursor() as cur:
            return read_views(cur, session_id)

    @staticmethod
    def _leaf_above(cur: Any, session_id: str, leaf_id: str | None, before_id: str) -> str:
        """The page's leaf (the one given, else the latest), once before_id is known to
        be on its path. Raises NotFound, InvalidInput."""
        if leaf_id is None:
            cur.execute(sql.ON_PATH_TO_LATEST, [session_id, before_id, session_id, session_id])
        else:
            cur.execute(sql.ON_PATH_TO_ID,
                        [session_id, before_id, session_id, session_id, leaf_id])
        found, on = cur.fetchone()
        if found is None and leaf_id is not None:
            raise _missing(session_id, leaf_id)
        if not on:
            raise InvalidInput(f"before_id {before_id} is not on the path to "
                               f"{leaf_id or 'the latest leaf'}", field="before_id")
        return str(found)

    @staticmethod
    def _leaf_id(cur: Any, session_id: str, leaf_id: str | None) -> str | None:
        """The page's leaf when the page was read above before_id: the one given (which
        must exist), else the latest."""
        if leaf_id is None:
            latest = leaf(cur, session_id)
            return latest[1] if latest else None
        if leaf_id not in find(cur, session_id, [leaf_id]):
            raise _missing(session_id, leaf_id)
        return leaf_id
