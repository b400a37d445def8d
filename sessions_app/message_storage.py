"""Message storage in SQL: appends, paths, deletes, overlays and search.

Message writes and path reads run raw SQL on Django's connection inside `atomic()`: the
append path is a handful of statements, and a path is one recursive CTE whatever its
length (SPEC §14). Vendor differences live in dialects.py.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction

from memory_core.errors import Conflict, InvalidInput, NotFound
from memory_core.messages import Message, NewMessage, now, tool_calls_in
from memory_core.search import SearchHit, index_tokens
from memory_core.tree import Compaction, TreeRow, tree_rows

from . import dialects, models

_MESSAGE_COLUMNS = "message_id, parent_message_id, role, parts, metadata, created_at, text"
# How far up a tool result looks for its call (split form: call, then results).
_TOOL_CALL_DEPTH = 16

_LATEST_LEAF = """
    SELECT m.seq FROM arbor_message m
    WHERE m.session_id = %s
      AND NOT EXISTS (SELECT 1 FROM arbor_message c WHERE c.parent_seq = m.seq)
    ORDER BY m.seq DESC LIMIT 1"""


def _path_sql(anchor: str) -> str:
    # Walks parent pointers from the leaf; rows come back leaf first with their depth.
    return f"""
    WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, 0 FROM arbor_message WHERE {anchor}
        UNION ALL
        SELECT m.seq, m.parent_seq, p.depth + 1
        FROM path p JOIN arbor_message m ON m.seq = p.parent_seq
    )
    SELECT {", ".join("m." + c.strip() for c in _MESSAGE_COLUMNS.split(","))}, p.depth
    FROM path p JOIN arbor_message m ON m.seq = p.seq
    ORDER BY p.depth DESC"""


_PATH_TO_ID = _path_sql("session_id = %s AND message_id = %s")
_PATH_TO_LATEST = _path_sql(f"seq = ({_LATEST_LEAF})")


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building a long path: the objects are acyclic, and
    collections triggered by thousands of new dicts otherwise double the read time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class OrmMessages:
    """The message half of OrmStorage."""

    # ------------------------------------------------------------------ messages
    def _row_message(self, row: Sequence[Any]) -> Message:
        to_dt = dialects.current().to_datetime
        return Message(row[0], row[1], row[2], orjson.loads(row[3]), orjson.loads(row[4]), to_dt(row[5]), row[6])

    def _lock(self, cur: Any, session_id: str, added: int, tokens: int) -> str:
        """Lock the session row for this transaction and count the write; returns agent id.

        On Postgres the UPDATE's row lock serialises appenders of one session (without
        it, concurrent auto-parented appends fork the chain). On SQLite the IMMEDIATE
        transaction already holds the database's write lock.
        """
        d = dialects.current()
        cur.execute(
            "UPDATE arbor_session SET updated_at = %s, message_count = message_count + %s, "
            "search_tokens = search_tokens + %s WHERE id = %s RETURNING agent_id",
            [d.db_datetime(now()), added, tokens, session_id],
        )
        row = cur.fetchone()
        if row is None:
            raise NotFound(f"session {session_id} not found")
        return str(row[0])

    def _find(self, cur: Any, session_id: str, ids: Sequence[str]) -> dict[str, tuple[int, Message]]:
        if not ids:
            return {}
        marks = ", ".join(["%s"] * len(ids))
        cur.execute(
            f"SELECT seq, {_MESSAGE_COLUMNS} FROM arbor_message "
            f"WHERE session_id = %s AND message_id IN ({marks})",
            [session_id, *ids],
        )
        return {row[1]: (row[0], self._row_message(row[1:])) for row in cur.fetchall()}

    def _leaf(self, cur: Any, session_id: str) -> tuple[int, str] | None:
        cur.execute(
            f"SELECT seq, message_id FROM arbor_message WHERE seq = ({_LATEST_LEAF})", [session_id]
        )
        row = cur.fetchone()
        return (row[0], row[1]) if row else None

    def _call_context(self, cur: Any, parent_seq: int | None, call_ids: Sequence[str]) -> str:
        """Name and input of the calls these tool results answer, found among ancestors."""
        if parent_seq is None or not call_ids:
            return ""
        cur.execute(
            f"""WITH RECURSIVE up(seq, parent_seq, depth) AS (
                    SELECT seq, parent_seq, 0 FROM arbor_message WHERE seq = %s
                    UNION ALL
                    SELECT m.seq, m.parent_seq, up.depth + 1
                    FROM up JOIN arbor_message m ON m.seq = up.parent_seq
                    WHERE up.depth < {_TOOL_CALL_DEPTH})
                SELECT m.parts FROM up JOIN arbor_message m ON m.seq = up.seq""",
            [parent_seq],
        )
        found: dict[str, str] = {}
        for (parts,) in cur.fetchall():
            for call_id, words in tool_calls_in(orjson.loads(parts)).items():
                found.setdefault(call_id, words)
        return " ".join(found[c] for c in call_ids if c in found)

    def _insert(
        self, cur: Any, session_id: str, agent_id: str, new: NewMessage,
        parent: tuple[int, str] | None, tokens: list[str],
    ) -> Message:
        d = dialects.current()
        column, mark, params = d.insert_index(tokens, session_id, agent_id)
        cur.execute(
            "INSERT INTO arbor_message (session_id, message_id, parent_seq, parent_message_id, "
            f"role, parts, metadata, text, search_len, created_at{column}) "
            f"VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s{mark}) RETURNING seq",
            [session_id, new.id, parent[0] if parent else None, parent[1] if parent else None,
             new.role, new.parts_json, new.metadata_json, new.text, len(tokens),
             d.db_datetime(new.created_at), *params],
        )
        seq = cur.fetchone()[0]
        d.index_inserted(cur, seq, tokens, session_id, agent_id)
        return new.to_message(parent[1] if parent else None)

    def _raise_missing_parent(
        self, cur: Any, session_id: str, agent_id: str, parent_id: str
    ) -> None:
        # A parent in a sibling session is a conflict; anything else (including another
        # tenant's message) is simply not found, so ids of others leak nothing.
        cur.execute(
            "SELECT 1 FROM arbor_message m JOIN arbor_session s ON s.id = m.session_id "
            "WHERE m.message_id = %s AND s.agent_id = %s AND s.id <> %s LIMIT 1",
            [parent_id, agent_id, session_id],
        )
        if cur.fetchone() is not None:
            raise Conflict(f"parent message {parent_id} belongs to another session")
        raise NotFound(f"parent message {parent_id} not found in session {session_id}")

    def _append_locked(
        self, cur: Any, session_id: str, agent_id: str, new: NewMessage, *,
        parent_id: str | None, if_latest: str | None, upsert: bool, tokens: list[str],
    ) -> tuple[Message, bool]:
        """Inside a locked transaction. Returns (message, inserted)."""
        wanted = [i for i in (new.id if new.id_given else None, parent_id) if i is not None]
        found = self._find(cur, session_id, wanted)
        if new.id_given and new.id in found:
            seq, stored = found[new.id]
            if upsert:
                if not new.same_content(stored):
                    return self._rewrite(cur, session_id, agent_id, seq, stored, new), False
                return stored, False
            if new.same_content(stored):
                return stored, False
            raise Conflict(f"message {new.id} already exists with other content")
        if if_latest is not None:
            leaf = self._leaf(cur, session_id)
            if leaf is None or leaf[1] != if_latest:
                current = leaf[1] if leaf else None
                raise Conflict(
                    f"message {if_latest} is no longer the latest leaf (now {current})",
                    current_leaf_id=current,
                )
        if parent_id is not None:
            if parent_id not in found:
                self._raise_missing_parent(cur, session_id, agent_id, parent_id)
            parent: tuple[int, str] | None = (found[parent_id][0], parent_id)
        elif if_latest is not None:
            parent = leaf
        else:
            parent = self._leaf(cur, session_id)
        call_ids = new.tool_result_ids()
        if call_ids:
            context = self._call_context(cur, parent[0] if parent else None, call_ids)
            extra = index_tokens(context) if context else []
            if extra:
                tokens = tokens + extra
                cur.execute(
                    "UPDATE arbor_session SET search_tokens = search_tokens + %s WHERE id = %s",
                    [len(extra), session_id],
                )
        return self._insert(cur, session_id, agent_id, new, parent, tokens), True

    def append(
        self, session_id: str, new: NewMessage, *, parent_id: str | None,
        if_latest: str | None = None, upsert: bool = False,
    ) -> Message:
        tokens = index_tokens(new.text)
        with transaction.atomic(), connection.cursor() as cur:
            agent_id = self._lock(cur, session_id, 1, len(tokens))
            message, inserted = self._append_locked(
                cur, session_id, agent_id, new, parent_id=parent_id, if_latest=if_latest,
                upsert=upsert, tokens=tokens,
            )
            if not inserted:
                # Undo the counters _lock added; the updated_at bump stays for rewrites.
                cur.execute(
                    "UPDATE arbor_session SET message_count = message_count - 1, "
                    "search_tokens = search_tokens - %s WHERE id = %s",
                    [len(tokens), session_id],
                )
            return message

    def append_chain(
        self, session_id: str, messages: Sequence[NewMessage], *, parent_id: str | None
    ) -> list[Message]:
        out: list[Message] = []
        with transaction.atomic(), connection.cursor() as cur:
            agent_id = self._lock(cur, session_id, 0, 0)
            added = tokens_total = 0
            parent = parent_id
            for new in messages:
                tokens = index_tokens(new.text)
                message, inserted = self._append_locked(
                    cur, session_id, agent_id, new, parent_id=parent, if_latest=None,
                    upsert=False, tokens=tokens,
                )
                if inserted:
                    added += 1
                    tokens_total += len(tokens)
                out.append(message)
                parent = message.id
            cur.execute(
                "UPDATE arbor_session SET message_count = message_count + %s, "
                "search_tokens = search_tokens + %s WHERE id = %s",
                [added, tokens_total, session_id],
            )
        return out

    def _rewrite(
        self, cur: Any, session_id: str, agent_id: str, seq: int, stored: Message, new: NewMessage
    ) -> Message:
        tokens = index_tokens(new.text)
        cur.execute("SELECT search_len, parent_seq FROM arbor_message WHERE seq = %s", [seq])
        old_len, parent_seq = cur.fetchone()
        call_ids = new.tool_result_ids()
        if call_ids:  # a rewritten tool result keeps its call's name and input in the index
            context = self._call_context(cur, parent_seq, call_ids)
            if context:
                tokens = tokens + index_tokens(context)
        cur.execute(
            "UPDATE arbor_message SET role = %s, parts = %s, metadata = %s, text = %s, "
            "search_len = %s WHERE seq = %s",
            [new.role, new.parts_json, new.metadata_json, new.text, len(tokens), seq],
        )
        cur.execute(
            "UPDATE arbor_session SET search_tokens = search_tokens + %s, updated_at = %s "
            "WHERE id = %s",
            [len(tokens) - old_len, dialects.current().db_datetime(now()), session_id],
        )
        dialects.current().reindex(cur, seq, tokens, session_id, agent_id)
        return Message(
            stored.id, stored.parent_id, new.role, new.parts, new.metadata, stored.created_at, new.text
        )

    def update(self, session_id: str, new: NewMessage) -> Message:
        with transaction.atomic(), connection.cursor() as cur:
            agent_id = self._lock(cur, session_id, 0, 0)
            found = self._find(cur, session_id, [new.id])
            if new.id not in found:
                raise NotFound(f"message {new.id} not found in session {session_id}")
            seq, stored = found[new.id]
            return self._rewrite(cur, session_id, agent_id, seq, stored, new)

    def delete_messages(self, session_id: str, ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not ids:
            return 0
        with transaction.atomic(), connection.cursor() as cur:
            self._lock(cur, session_id, 0, 0)
            marks = ", ".join(["%s"] * len(ids))
            cur.execute(
                f"SELECT seq, message_id, parent_seq, parent_message_id, search_len "
                f"FROM arbor_message WHERE session_id = %s AND message_id IN ({marks}) "
                "ORDER BY seq",
                [session_id, *ids],
            )
            rows = cur.fetchall()
            if not rows:
                return 0
            doomed = {r[0]: (r[2], r[3]) for r in rows}
            doomed_ids = {r[1] for r in rows}
            dropped = self._touched_overlays(cur, session_id, doomed_ids)

            def kept_ancestor(seq: int) -> tuple[int | None, str | None]:
                parent_seq, parent_id = doomed[seq]
                while parent_seq in doomed:
                    parent_seq, parent_id = doomed[parent_seq]
                return parent_seq, parent_id

            # Children of a deleted message move up to its nearest kept ancestor.
            cur.executemany(
                "UPDATE arbor_message SET parent_seq = %s, parent_message_id = %s "
                "WHERE parent_seq = %s",
                [(*kept_ancestor(seq), seq) for seq in doomed],
            )
            seq_marks = ", ".join(["%s"] * len(doomed))
            cur.execute(f"DELETE FROM arbor_message WHERE seq IN ({seq_marks})", list(doomed))
            if dropped:
                drop_marks = ", ".join(["%s"] * len(dropped))
                cur.execute(
                    f"DELETE FROM arbor_compaction WHERE seq IN ({drop_marks})", list(dropped)
                )
            cur.execute(
                "UPDATE arbor_session SET message_count = message_count - %s, "
                "search_tokens = search_tokens - %s WHERE id = %s",
                [len(rows), sum(r[4] for r in rows), session_id],
            )
            return len(rows)

    def _touched_overlays(self, cur: Any, session_id: str, doomed_ids: set[str]) -> list[int]:
        """Overlays with an endpoint, or any message of their range, among doomed_ids."""
        cur.execute(
            "SELECT seq, from_message_id, to_message_id FROM arbor_compaction "
            "WHERE session_id = %s ORDER BY seq",
            [session_id],
        )
        touched: list[int] = []
        for seq, from_id, to_id in cur.fetchall():
            if from_id in doomed_ids or to_id in doomed_ids:
                touched.append(seq)
                continue
            cur.execute(_PATH_TO_ID, [session_id, to_id])
            ids = [r[0] for r in cur.fetchall()]
            if from_id in ids and doomed_ids.intersection(ids[ids.index(from_id):]):
                touched.append(seq)
        return touched

    def clear(self, session_id: str) -> None:
        with transaction.atomic(), connection.cursor() as cur:
            self._lock(cur, session_id, 0, 0)
            cur.execute("DELETE FROM arbor_message WHERE session_id = %s", [session_id])
            cur.execute("DELETE FROM arbor_compaction WHERE session_id = %s", [session_id])
            cur.execute("DELETE FROM arbor_skill_state WHERE session_id = %s", [session_id])
            cur.execute(
                "UPDATE arbor_session SET message_count = 0, search_tokens = 0 WHERE id = %s",
                [session_id],
            )

    def get_message(self, session_id: str, message_id: str) -> Message | None:
        with connection.cursor() as cur:
            dialects.current().fast_reads(cur)
            found = self._find(cur, session_id, [message_id])
        return found[message_id][1] if message_id in found else None

    def latest_leaf(self, session_id: str) -> Message | None:
        with connection.cursor() as cur:
            dialects.current().fast_reads(cur)
            cur.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM arbor_message WHERE seq = ({_LATEST_LEAF})",
                [session_id],
            )
            row = cur.fetchone()
        return self._row_message(row) if row else None

    def children(self, session_id: str, message_id: str) -> list[Message]:
        with connection.cursor() as cur:
            dialects.current().fast_reads(cur)
            cur.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM arbor_message WHERE parent_seq = "
                f"(SELECT seq FROM arbor_message WHERE session_id = %s AND message_id = %s) "
                f"ORDER BY seq",
                [session_id, message_id],
            )
            rows = cur.fetchall()
        if not rows and self.get_message(session_id, message_id) is None:
            raise NotFound(f"message {message_id} not found in session {session_id}")
        return [self._row_message(r) for r in rows]

    def path(
        self, session_id: str, leaf_id: str | None, *, with_overlays: bool
    ) -> tuple[list[Message], list[Compaction], dict[tuple[str, str], Any]]:
        to_dt = dialects.current().to_datetime
        loads = orjson.loads
        new = tuple.__new__
        with connection.cursor() as cur:
            dialects.current().fast_reads(cur)
            if leaf_id is None:
                cur.execute(_PATH_TO_LATEST, [session_id])
            else:
                cur.execute(_PATH_TO_ID, [session_id, leaf_id])
            with _no_gc():
                rows = cur.fetchall()
                if leaf_id is not None and not rows:
                    raise NotFound(f"message {leaf_id} not found in session {session_id}")
                # tuple.__new__ skips NamedTuple's Python-level __new__ (10k calls).
                path = [
                    new(Message, (r[0], r[1], r[2], loads(r[3]),
                                  {} if r[4] == "{}" else loads(r[4]), to_dt(r[5]), r[6]))
                    for r in rows
                ]
            overlays, unloaded = (
                self._read_views(cur, session_id) if with_overlays and path else ([], {})
            )
        return path, overlays, unloaded

    def path_length(self, session_id: str, leaf_id: str | None) -> int:
        anchor = (
            "session_id = %s AND message_id = %s" if leaf_id is not None
            else f"seq = ({_LATEST_LEAF})"
        )
        params = [session_id, leaf_id] if leaf_id is not None else [session_id]
        with connection.cursor() as cur:
            cur.execute(
                f"""WITH RECURSIVE path(seq, parent_seq) AS (
                        SELECT seq, parent_seq FROM arbor_message WHERE {anchor}
                        UNION ALL
                        SELECT m.seq, m.parent_seq FROM path p
                        JOIN arbor_message m ON m.seq = p.parent_seq)
                    SELECT count(*) FROM path""",
                params,
            )
            count = int(cur.fetchone()[0])
        if leaf_id is not None and count == 0:
            raise NotFound(f"message {leaf_id} not found in session {session_id}")
        return count

    def tree(self, session_id: str) -> list[TreeRow]:
        to_dt = dialects.current().to_datetime
        with connection.cursor() as cur:
            dialects.current().fast_reads(cur)
            cur.execute(
                "SELECT message_id, parent_message_id, role, text, created_at "
                "FROM arbor_message WHERE session_id = %s ORDER BY seq",
                [session_id],
            )
            rows = [(r[0], r[1], r[2], r[3], to_dt(r[4])) for r in cur.fetchall()]
        return tree_rows(rows)

    def message_count(self, session_id: str) -> int:
        return int(
            models.Session.objects.filter(id=session_id)
            .values_list("message_count", flat=True)
            .first()
            or 0
        )

    # --------------------------------------------------------------- compactions
    def _read_views(
        self, cur: Any, session_id: str
    ) -> tuple[list[Compaction], dict[tuple[str, str], Any]]:
        """Overlays (oldest first) and unloaded skills, in one query."""
        to_dt = dialects.current().to_datetime
        cur.execute(
            """SELECT 'c', overlay_id, summary, from_message_id, to_message_id, created_at, seq
               FROM arbor_compaction WHERE session_id = %s
               UNION ALL
               SELECT 's', label, key, NULL, NULL, unloaded_at, id
               FROM arbor_skill_state WHERE session_id = %s AND unloaded_at IS NOT NULL
               ORDER BY 1, 6, 7""",
            [session_id, session_id],
        )
        overlays: list[Compaction] = []
        unloaded: dict[tuple[str, str], Any] = {}
        for kind, a, b, c, d, stamp, _ in cur.fetchall():
            if kind == "c":
                overlays.append(Compaction(a, b, c, d, to_dt(stamp)))
            else:
                unloaded[(a, b)] = to_dt(stamp)
        return overlays, unloaded

    def _compactions(self, cur: Any, session_id: str) -> list[Compaction]:
        to_dt = dialects.current().to_datetime
        cur.execute(
            "SELECT overlay_id, summary, from_message_id, to_message_id, created_at "
            "FROM arbor_compaction WHERE session_id = %s ORDER BY created_at, seq",
            [session_id],
        )
        return [Compaction(r[0], r[1], r[2], r[3], to_dt(r[4])) for r in cur.fetchall()]

    def add_compaction(
        self, session_id: str, *, summary: str, from_id: str, to_id: str
    ) -> Compaction:
        with transaction.atomic():
            path, _, _ = self.path(session_id, to_id, with_overlays=False)
            if from_id not in {m.id for m in path}:
                if self.get_message(session_id, from_id) is None:
                    raise NotFound(f"message {from_id} not found in session {session_id}")
                raise InvalidInput(f"message {from_id} is not on the path to {to_id}")
            try:
                row = models.Compaction.objects.create(
                    session_id=session_id, summary=summary.replace("\x00", ""),
                    from_message_id=from_id, to_message_id=to_id, created_at=now(),
                )
            except IntegrityError as exc:  # the session vanished meanwhile
                raise NotFound(f"session {session_id} not found") from exc
        return Compaction(row.overlay_id, row.summary, from_id, to_id, row.created_at)

    def get_compactions(self, session_id: str) -> list[Compaction]:
        with connection.cursor() as cur:
            return self._compactions(cur, session_id)

    def remove_compaction(self, session_id: str, compaction_id: str) -> bool:
        deleted, _ = models.Compaction.objects.filter(
            session_id=session_id, overlay_id=compaction_id
        ).delete()
        return bool(deleted)

    # -------------------------------------------------------------------- search
    def search(
        self, *, agent_id: str, session_id: str | None, terms: Sequence[str], limit: int,
        exclude_session_id: str | None = None,
    ) -> list[SearchHit]:
        if not terms:
            return []
        d = dialects.current()
        scope = (
            dialects.session_token(session_id) if session_id is not None
            else dialects.agent_token(agent_id)
        )
        exclude = (dialects.session_token(exclude_session_id)
                   if exclude_session_id is not None and session_id is None else None)
        with connection.cursor() as cur:
            d.fast_reads(cur)
            rows = d.search(cur, scope=scope, terms=terms, limit=limit, exclude=exclude)
        return [
            SearchHit(
                id=r[0], session_id=r[1], role=r[2], content=r[3],
                created_at=d.to_datetime(r[4]), rank=i + 1, score=round(float(r[5]), 6),
            )
            for i, r in enumerate(rows)
        ]
