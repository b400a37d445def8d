"""Search by meaning, the storage's half: the messages whose vectors are nearest a
question's, as SearchHits (score: cosine), from the agent's matrix (vector_index.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from memory_core.embedding import Vector
from memory_core.messages import project_text
from memory_core.search import SearchHit
from memory_core.storage import DenseScan

from . import hot, vector_index, vectors
from .vendors.chosen import current

MESSAGES = """SELECT m.seq, m.message_id, s.id, m.role, m.parts, m.created_at
    FROM arbor_message m JOIN arbor_session s ON s.key = m.session_key
    WHERE m.seq IN ({marks})"""
KEY_OF = "SELECT key FROM arbor_session WHERE id = %s"


@dataclass(frozen=True)
class Scan:
    """memory_core.storage.DenseScan over an agent's matrix (vector_index.AgentVectors)."""

    held: vector_index.AgentVectors
    pending: int
    size: int
    session_key: int | None = None
    exclude_key: int | None = None

    def scan(self, query: Vector, *, limit: int) -> list[tuple[int, float]]:
        if not self.size:
            return []
        return vector_index.nearest(self.held, query, limit=limit,
                                    session_key=self.session_key, exclude_key=self.exclude_key)


class Dense:
    def nearest(
        self, *, agent_id: str, model: str, query_vector: Callable[[], Vector], limit: int,
        session_id: str | None = None, exclude_session_id: str | None = None,
    ) -> tuple[list[SearchHit], int]:
        """(hits, messages still waiting for a vector by `model`): the `limit` messages
        of the agent (one session, or all but one) nearest the question, best first.
        `query_vector` is called only when the agent has vectors. Raises what it raises,
        and WrongDimension."""
        found = self.dense_scan(agent_id=agent_id, model=model, session_id=session_id,
                                exclude_session_id=exclude_session_id)
        if not found.size:
            return [], found.pending
        return self.dense_hits(found.scan(query_vector(), limit=limit)), found.pending

    def dense_scan(
        self, *, agent_id: str, model: str, session_id: str | None = None,
        exclude_session_id: str | None = None,
    ) -> DenseScan:
        """The agent's vectors by `model` as stored now, scoped; the scan needs no query."""
        with hot.cursor() as cur:
            top, deleted, messages = vectors.state(cur, agent_id=agent_id, model=model)
            held = vector_index.agent_vectors(cur, agent_id=agent_id, model=model,
                                              state=(top, deleted))
            pending = max(0, messages - held.rows)
            if not held.size:
                return Scan(held, pending, 0)
            session_key = self._key(cur, session_id)
            if session_id is not None and session_key is None:
                return Scan(held, pending, 0)
            return Scan(held, pending, held.size, session_key,
                        self._key(cur, exclude_session_id))

    def dense_hits(self, best: Sequence[tuple[int, float]]) -> list[SearchHit]:
        """The messages of (seq, cosine) pairs as hits, in that order (deleted ones left
        out), score the cosine, matched "meaning"."""
        if not best:
            return []
        d = current()
        with hot.cursor() as cur:
            cur.execute(MESSAGES.format(marks=", ".join(["%s"] * len(best))),
                        [seq for seq, _ in best])
            rows = {r[0]: r for r in cur.fetchall()}
        hits = []
        for seq, score in best:
            r = rows.get(seq)
            if r is None:  # deleted since the matrix was read
                continue
            hits.append(SearchHit(
                id=r[1], session_id=r[2], role=r[3], content=project_text(orjson.loads(r[4])),
                created_at=d.to_datetime(r[5]), rank=len(hits) + 1, score=round(score, 6),
                matched="meaning"))
        return hits

    @staticmethod
    def _key(cur: Any, session_id: str | None) -> int | None:
        if session_id is None:
            return None
        cur.execute(KEY_OF, [session_id])
        row = cur.fetchone()
        return int(row[0]) if row else None
