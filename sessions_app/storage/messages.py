"""Message writes: append (one, or a chain), update, delete, clear, and the bulk
`copy_path` that fork and import share.

Every write runs on Django's connection inside `atomic()`, locks the session row first
(dialect.lock_session), decides what the write does, and only then moves the session's
counters and `updated_at`: an idempotent replay changes nothing at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import orjson
from django.db import connection, transaction

from memory_core.errors import Conflict, NotFound
from memory_core.messages import Message, NewMessage, now, tool_calls_in
from memory_core.search import index_tokens
from memory_core.storage import Appended

from . import bulk, erasure, hot, sql
from .paths import (  # (bulk writes: the GC paused as for long reads)
    _no_gc,
    find,
    has_sibling,
    leaf,
    raise_missing_parent,
)
from .rows import MessageRow, message_scope
from .vendors.chosen import current
from .versions import VersionRows

# What an append did: inserted a row, found the same message stored, or rewrote it.
# BRANCHED: inserted, beside a sibling (under a parent that had a child, or a new root)
INSERTED, UNCHANGED, REWRITTEN, BRANCHED = "inserted", "unchanged", "rewritten", "branched"


_engine = threading.local()


@contextmanager
def engine_transaction(*, bulk_writes: bool = False) -> Iterator[None]:
    """The engine's transaction around a write and its events (OrmStorage.transaction);
    with bulk_writes, their term statistics are added once, at its end (bulk.counts_once)."""
    with transaction.atomic(), bulk.counts_once() if bulk_writes else nullcontext():
        _engine.depth = getattr(_engine, "depth", 0) + 1
        try:
            yield
        finally:
            _engine.depth -= 1


def write_transaction() -> Any:
    """A message write's transaction. Inside the engine's, which rolls back whole on any
    error, it is that one (no savepoint, no second atomic block: an append is hot)."""
    if getattr(_engine, "depth", 0):
        return nullcontext()
    return transaction.atomic()


def lock(cur: Any, session_id: str) -> str | None:
    """Hold the session for this transaction (see Dialect.lock_session)."""
    return current().lock_session(cur, session_id)


def stored_count(cur: Any, session_id: str) -> int:
    """The session's message count, kept by every write (for the erasure log)."""
    cur.execute("SELECT message_count FROM arbor_session WHERE id = %s", [session_id])
    row = cur.fetchone()
    return int(row[0]) if row else 0


def delete_rows(cur: Any, session_id: str) -> None:
    """Every message (with its index rows, by trigger or column) and overlay of a session.
    Raw deletes: the ORM would load every message to cascade."""
    cur.execute(sql.DELETE_MESSAGES, [session_id])
    cur.execute(sql.DELETE_COMPACTIONS, [session_id])
    current().messages_deleted(cur)


def _call_context(cur: Any, parent_seq: int | None, call_ids: Sequence[str]) -> str:
    """Name and input of the calls these tool results answer, found among ancestors."""
    if parent_seq is None or not call_ids:
        return ""
    cur.execute(sql.CALL_CONTEXT, [parent_seq])
    found: dict[str, str] = {}
    for (parts,) in cur.fetchall():
        for call_id, words in tool_calls_in(orjson.loads(parts)).items():
            found.setdefault(call_id, words)
    return " ".join(found[c] for c in call_ids if c in found)


def _tokens(cur: Any, new: NewMessage, parent_seq: int | None) -> tuple[list[str], str | None]:
    """Index tokens: the text's, plus for tool results their call's name and input; and
    those extra tokens space-joined (the row's search_extra), or None."""
    tokens = index_tokens(new.text)
    call_ids = new.tool_result_ids()
    context = _call_context(cur, parent_seq, call_ids) if call_ids else ""
    return _with_extra(tokens, index_tokens(context) if context else [])


def _with_extra(tokens: list[str], extra: list[str]) -> tuple[list[str], str | None]:
    return (tokens + extra, " ".join(extra)) if extra else (tokens, None)


class Messages(VersionRows):
    """The write half of the message storage; deletes mark the block versions their
    messages wrote (VersionRows)."""

    def _insert(
        self, cur: Any, session_id: str, agent_id: str | None, new: NewMessage,
        parent: tuple[int, str] | None,
    ) -> Message:
        """The one single-row insert (row, index rows, counters)."""
        d = current()
        message = new.to_message(parent[1] if parent else None)
        tokens, extra = _tokens(cur, new, parent[0] if parent else None)
        row = MessageRow(
            session_id=session_id, message_id=new.id, parent_seq=parent[0] if parent else None,
            parent_id=message.parent_id, role=new.role, parts=new.parts_json,
            metadata=new.metadata_json, created_at=d.message_time(new.created_at),
            tokens=tokens, search_len=len(tokens), search_extra=extra,
        )
        d.insert_message(cur, row, agent_id)
        return message

    def _append_locked(
        self, cur: Any, session_id: str, agent_id: str | None, new: NewMessage, *,
        parent_id: str | None, if_latest: str | None, upsert: bool, root: bool = False,
        new_parent: bool = False,
    ) -> tuple[Message, str]:
        """Inside a locked transaction: (message, INSERTED/BRANCHED/UNCHANGED/REWRITTEN). Decides
        before writing: a Conflict or NotFound, or an unchanged replay, writes nothing.
        root: no parent (parent_id is None then), instead of the latest leaf. new_parent:
        parent_id was made by this transaction (a chain): it has no other child."""
        wanted = [i for i in (new.id if new.id_given else None, parent_id) if i is not None]
        found = find(cur, session_id, wanted)
        if new.id_given and new.id in found:
            seq, stored = found[new.id]
            if new.same_content(stored):
                return stored, UNCHANGED
            if not upsert:
                raise Conflict(f"message {new.id} already exists with other content")
            return self._rewrite(cur, session_id, seq, stored, new), REWRITTEN
        wants_leaf = if_latest is not None or (parent_id is None and not root)
        current = leaf(cur, session_id) if wants_leaf else None
        if if_latest is not None and (current is None or current[1] != if_latest):
            now_leaf = current[1] if current else None
            raise Conflict(f"message {if_latest} is no longer the latest leaf (now {now_leaf})",
                           current_leaf_id=now_leaf)
        parent = None if root else current
        branched = False
        if parent_id is not None:
            if parent_id not in found:
                raise_missing_parent(cur, session_id, parent_id)
            parent = (found[parent_id][0], parent_id)
            if not new_parent:
                cur.execute(sql.MARK_BRANCH_UNDER, [session_id, parent[0]])
                branched = cur.rowcount > 0
        elif root:
            cur.execute(sql.MARK_BRANCH_ROOT, [session_id, session_id])
            branched = cur.rowcount > 0
        return self._insert(cur, session_id, agent_id, new, parent), \
            BRANCHED if branched else INSERTED

    def append(
        self, session_id: str, new: NewMessage, *, parent_id: str | None,
        if_latest: str | None = None, upsert: bool = False, root: bool = False,
    ) -> Appended:
        with write_transaction(), hot.cursor() as cur:
            agent_id = lock(cur, session_id)
            message, status = self._append_locked(
                cur, session_id, agent_id, new, parent_id=parent_id, if_latest=if_latest,
                upsert=upsert, root=root,
            )
            branch = status == BRANCHED
            if status == UNCHANGED and not upsert and (parent_id is not None or root):
                branch = has_sibling(cur, session_id, message)  # a replay: ask (rare)
            return Appended(message, existed=status in (UNCHANGED, REWRITTEN), branch=branch)

    def append_chain(
        self, session_id: str, messages: Sequence[NewMessage], *, parent_id: str | None,
        root: bool = False,
    ) -> list[Message]:
        from . import chains

        out: list[Message] = []
        with write_transaction(), hot.cursor() as cur, _no_gc():
            agent_id = lock(cur, session_id)
            fresh = chains.append(cur, session_id, messages, parent_id=parent_id, root=root)
            if fresh is not None:  # no id of the chain stored before: one bulk write
                return fresh
            parent, made = parent_id, False
            for i, new in enumerate(messages):
                message, status = self._append_locked(
                    cur, session_id, agent_id, new, parent_id=parent, if_latest=None,
                    upsert=False, root=root and i == 0, new_parent=made,
                )
                out.append(message)
                parent, made = message.id, status in (INSERTED, BRANCHED)
        return out

    def _rewrite(
        self, cur: Any, session_id: str, seq: int, stored: Message, new: NewMessage
    ) -> Message:
        """Replace a stored message's content and index row (a rewritten tool result keeps
        its call's name and input in the index)."""
        cur.execute("SELECT search_len, parent_seq FROM arbor_message WHERE seq = %s", [seq])
        old_len, parent_seq = cur.fetchone()
        tokens, extra = _tokens(cur, new, parent_seq)
        # (SQLite: a trigger re-indexes the row from its new parts and search_extra.)
        cur.execute(
            "UPDATE arbor_message SET role = %s, parts = %s, metadata = %s, "
            "search_len = %s, search_extra = %s WHERE seq = %s",
            [new.role, new.parts_json, new.metadata_json, len(tokens), extra, seq],
        )
        d = current()
        agent_id = d.count(cur, session_id, messages=0, tokens=len(tokens) - old_len)
        d.replace_index(cur, seq, tokens, message_scope(session_id, agent_id))
        return Message(stored.id, stored.parent_id, new.role, new.parts, new.metadata,
                       stored.created_at)

    def update(self, session_id: str, new: NewMessage) -> Message:
        with write_transaction(), connection.cursor() as cur:
            lock(cur, session_id)
            found = find(cur, session_id, [new.id])
            if new.id not in found:
                raise NotFound(f"message {new.id} not found in session {session_id}")
            seq, stored = found[new.id]
            return self._rewrite(cur, session_id, seq, stored, new)

    def delete_messages(self, session_id: str, ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not ids:
            return 0
        with write_transaction(), connection.cursor() as cur:
            agent_id = lock(cur, session_id)
            marks = ", ".join(["%s"] * len(ids))
            cur.execute(
                f"SELECT seq, message_id, parent_seq, search_len "
                f"FROM arbor_message WHERE session_key = {sql.SESSION_KEY} "
                f"AND message_id IN ({marks}) "
                "ORDER BY seq",
                [session_id, *ids],
            )
            rows = cur.fetchall()
            if not rows:
                return 0
            doomed = {r[0]: r[2] for r in rows}
            dropped = self._touched_overlays(cur, session_id, {r[1] for r in rows})

            def kept_ancestor(seq: int) -> int | None:
                parent_seq = doomed[seq]
                while parent_seq in doomed:
                    parent_seq = doomed[parent_seq]
                return parent_seq

            # Children of a deleted message move up to its nearest kept ancestor.
            cur.executemany("UPDATE arbor_message SET parent_seq = %s WHERE parent_seq = %s",
                            [(kept_ancestor(seq), seq) for seq in doomed])
            seq_marks = ", ".join(["%s"] * len(doomed))
            cur.execute(f"DELETE FROM arbor_message WHERE seq IN ({seq_marks})", list(doomed))
            d = current()
            d.messages_deleted(cur)
            erasure.erased(agent_id=agent_id, session_id=session_id, scope="messages",
                           messages=len(rows), overlays=dropped)
            if dropped:
                drop_marks = ", ".join(["%s"] * len(dropped))
                cur.execute(
                    f"DELETE FROM arbor_compaction WHERE seq IN ({drop_marks})", list(dropped)
                )
            d.count(cur, session_id, messages=-len(rows), tokens=-sum(r[3] for r in rows))
            self.mark_deleted_sources(session_id, [r[1] for r in rows])
            d.give_back_free_pages(cur)
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
            cur.execute(sql.PATH_TO_ID, [session_id, to_id])
            ids = [r[0] for r in cur.fetchall()]
            if from_id in ids and doomed_ids.intersection(ids[ids.index(from_id):]):
                touched.append(seq)
        return touched

    def clear(self, session_id: str) -> None:
        with write_transaction(), connection.cursor() as cur:
            agent_id = lock(cur, session_id)
            erasure.erased(agent_id=agent_id, session_id=session_id, scope="clear",
                           messages=stored_count(cur, session_id), overlays=erasure.ALL_OVERLAYS)
            delete_rows(cur, session_id)
            cur.execute(sql.DELETE_SKILL_STATES, [session_id])
            cur.execute(sql.ZERO_COUNTS, [current().db_datetime(now()), session_id])
            self.mark_deleted_sources(session_id, None)
            current().give_back_free_pages(cur)

    def copy_path(
        self, session_id: str, agent_id: str, messages: Sequence[Message], *,
        index_from: str | None = None, updated_at: Any = None,
        encoded: Sequence[tuple[str, str, str]] | None = None,
    ) -> None:
        """Store messages (parents before children) into a new session in one bulk write
        (bulk.insert: a fixed number of statements), keeping their ids, metadata and
        created_at. Index tokens are built from the text, with the extra tokens (a tool
        result's call) of session `index_from` (a fork: the same ids live there), else
        found among the messages' ancestors. updated_at: the session's, else now.
        encoded: each message's (parts JSON, metadata JSON, text), when made already."""
        if not messages:
            return
        d = current()
        with transaction.atomic(savepoint=False), hot.cursor() as cur, _no_gc():
            if index_from is not None:
                cur.execute("SELECT message_id, search_extra FROM arbor_message "
                            f"WHERE session_key = {sql.SESSION_KEY} "
                            "AND search_extra IS NOT NULL", [index_from])
                extras = dict(cur.fetchall())
                tokens = [_with_extra(index_tokens(m.text), extras[m.id].split())
                          if m.id in extras else (index_tokens(m.text), None) for m in messages]
            else:
                tokens = _chain_tokens(messages, [e[2] for e in encoded] if encoded else None)
            if encoded is None:
                encoded = [(orjson.dumps(m.parts).decode(), orjson.dumps(m.metadata).decode(),
                            "") for m in messages]
            ids = {m.id for m in messages}
            rows = [bulk.BulkRow(
                m.id, m.parent_id if m.parent_id in ids else None, m.role, parts, metadata,
                d.message_time(m.created_at), words, extra)
                for m, (words, extra), (parts, metadata, _) in zip(messages, tokens, encoded,
                                                                  strict=True)]
            bulk.insert(cur, d.vendor, session_id, rows, {},
                        stamp=d.db_datetime(d.to_datetime(updated_at or now())),
                        branched=bulk.branches(rows, False, False))


def _chain_tokens(messages: Sequence[Message], texts: Sequence[str] | None
                  ) -> list[tuple[list[str], str | None]]:
    """Index tokens of messages given parents first, as an append would make them: tool
    results carry their call's name and input, found among their nearest ancestors.
    texts: the messages' texts, when made already."""
    by_id = {m.id: m for m in messages}
    out = []
    for i, m in enumerate(messages):
        tokens = index_tokens(m.text if texts is None else texts[i])
        call_ids = [str(p["toolCallId"]) for p in m.parts
                    if p.get("type") == "tool-result" and p.get("toolCallId") is not None]
        if not call_ids:  # (most messages: nothing to look for above)
            out.append((tokens, None))
            continue
        found: dict[str, str] = {}
        ancestor = by_id.get(m.parent_id) if m.parent_id else None
        for _ in range(sql.TOOL_CALL_DEPTH + 1):
            if ancestor is None:
                break
            for call_id, words in tool_calls_in(ancestor.parts).items():
                found.setdefault(call_id, words)
            ancestor = by_id.get(ancestor.parent_id) if ancestor.parent_id else None
        context = " ".join(found[c] for c in call_ids if c in found)
        out.append(_with_extra(tokens, index_tokens(context) if context else []))
    return out
