"""Message embeddings in arbor_message_vector (migration 0004): which messages wait for a
vector, storing vectors, and reading an agent's vectors for a search.

Same SQL on both databases. A message waits for a vector while it has none made by the
current model: found by an anti-join from a `seq` on (a worker polls past the last seq it
saw, and sweeps from 0 now and then for edits, whose trigger dropped their vector).
Vectors are int8 with a per-vector scale: a quarter of float32's size, and ranking by
cosine loses nothing measurable at 384 dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from memory_core.embedding import Vector

from .sql import AGENT_MESSAGES

PENDING = """SELECT m.seq, s.agent_id, m.session_key, m.parts, p.parts
    FROM arbor_message m
    JOIN arbor_session s ON s.key = m.session_key
    LEFT JOIN arbor_message p ON p.seq = m.parent_seq
    LEFT JOIN arbor_message_vector v ON v.message_seq = m.seq AND v.model = %s
    WHERE m.seq > %s AND v.message_seq IS NULL{agent}
    ORDER BY m.seq LIMIT %s"""
# Inserted only while the message still holds the parts that were embedded: a message
# deleted or edited meanwhile is left to the next round.
STORE = """INSERT INTO arbor_message_vector
    (message_seq, agent_id, session_key, model, dim, scale, vector)
    SELECT m.seq, %s, m.session_key, %s, %s, %s, %s FROM arbor_message m
    WHERE m.seq = %s AND m.parts = %s
    ON CONFLICT (message_seq) DO NOTHING"""
# The highest id (an index's last entry) and the agent's deletes (one key): never a count,
# which reads every index entry of the agent.
# With the agent's message count too, so a search learns what is pending in the same query.
STATE = f"""SELECT (SELECT coalesce(max(id), 0) FROM arbor_message_vector
                    WHERE agent_id = %s AND model = %s),
                   (SELECT coalesce(max(n), 0) FROM arbor_vector_deletes WHERE agent_id = %s),
                   ({AGENT_MESSAGES})"""
COUNT = "SELECT count(*) FROM arbor_message_vector WHERE agent_id = %s AND model = %s"
ROWS_AFTER = """SELECT id, message_seq, session_key, dim, scale, vector
    FROM arbor_message_vector WHERE agent_id = %s AND model = %s AND id > %s ORDER BY id"""
MESSAGES_ALL = "SELECT count(*) FROM arbor_message"
VECTORS_ALL = "SELECT count(*) FROM arbor_message_vector WHERE model = %s"
DIMS = "SELECT dim FROM arbor_message_vector WHERE model = %s AND dim > 0 LIMIT 1"
LAST_SEQ = "SELECT coalesce(max(seq), 0) FROM arbor_message"


class Pending(NamedTuple):
    """A message waiting for a vector, with the one it follows (what a reply answers)."""

    seq: int
    agent_id: str
    session_key: int
    parts: str  # JSON, as read (the store checks it is still the message's)
    parent_parts: str | None  # JSON: what a reply is embedded after (embedding.in_context)


def pending(cur: Any, *, model: str, after: int, limit: int,
            agent_id: str | None = None) -> list[Pending]:
    """The messages past `after` with no vector by `model`, oldest first."""
    params: list[Any] = [model, after]
    agent = ""
    if agent_id is not None:
        agent = " AND s.agent_id = %s"
        params.append(agent_id)
    cur.execute(PENDING.format(agent=agent), [*params, limit])
    return [Pending(int(r[0]), r[1], int(r[2]), _text(r[3]), None if r[4] is None else _text(r[4]))
            for r in cur.fetchall()]


def quantise(vector: Vector | None) -> tuple[int, float, bytes]:
    """(dim, scale, int8 bytes) of a unit vector; None (nothing to embed): (0, 0, b"")."""
    if vector is None or not vector.size:
        return 0, 0.0, b""
    peak = float(np.abs(vector).max())
    scale = peak / 127.0 if peak > 0 else 1.0
    return int(vector.size), scale, np.round(vector / scale).astype(np.int8).tobytes()


def store(cur: Any, *, model: str,
          rows: Sequence[tuple[int, str, str, Vector | None]]) -> None:
    """Store (seq, agent_id, parts JSON as read, vector) rows made by `model`, replacing
    any vector of another model."""
    if not rows:
        return
    marks = ", ".join(["%s"] * len(rows))
    cur.execute(f"DELETE FROM arbor_message_vector WHERE message_seq IN ({marks})",
                [r[0] for r in rows])
    values = []
    for seq, agent_id, parts, vector in rows:
        dim, scale, data = quantise(vector)
        values.append([agent_id, model, dim, scale, data, seq, parts])
    cur.executemany(STORE, values)


def stored_dim(cur: Any, *, model: str) -> int | None:
    """The size of the vectors `model` made so far (None: none yet)."""
    cur.execute(DIMS, [model])
    row = cur.fetchone()
    return int(row[0]) if row else None


def state(cur: Any, *, agent_id: str, model: str) -> tuple[int, int, int]:
    """(highest id of the agent's vectors by `model`, vectors of the agent ever deleted,
    the agent's messages): a cache read at the same first two holds them all."""
    cur.execute(STATE, [agent_id, model, agent_id, agent_id])
    top, deleted, messages = cur.fetchone()
    return int(top), int(deleted), int(messages)


def count(cur: Any, *, agent_id: str, model: str) -> int:
    cur.execute(COUNT, [agent_id, model])
    return int(cur.fetchone()[0])


def rows_after(cur: Any, *, agent_id: str, model: str,
               after: int) -> list[tuple[int, int, int, int, float, bytes]]:
    """(id, message seq, session key, dim, scale, int8 bytes), by id, past `after`."""
    cur.execute(ROWS_AFTER, [agent_id, model, after])
    return [(int(r[0]), int(r[1]), int(r[2]), int(r[3]), float(r[4]), bytes(r[5]))
            for r in cur.fetchall()]


def pending_count(cur: Any, *, model: str, agent_id: str | None = None,
                  embedded: int | None = None) -> int:
    """Messages (of one agent, or all) without a vector by `model`; `embedded`: the
    agent's vector count when the caller has it already."""
    if agent_id is None:
        cur.execute(MESSAGES_ALL)
        messages = int(cur.fetchone()[0])
        cur.execute(VECTORS_ALL, [model])
        return max(0, messages - int(cur.fetchone()[0]))
    cur.execute(AGENT_MESSAGES, [agent_id])
    messages = int(cur.fetchone()[0])
    if embedded is None:
        embedded = count(cur, agent_id=agent_id, model=model)
    return max(0, messages - embedded)


def last_seq(cur: Any) -> int:
    cur.execute(LAST_SEQ)
    return int(cur.fetchone()[0])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else bytes(value).decode()
