"""Embedding the messages that wait for a vector: one batch (the worker's step) or all of
them (`manage.py embed`). The embedder runs outside any transaction, so a slow model or
endpoint never holds a lock a write waits for; only the store is a (short) transaction."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from django.db import connection, transaction

from memory_core.embedding import Embedder, Vector, WrongDimension, in_context
from memory_core.messages import project_text

from ..storage import vectors

BATCH = 32  # messages per embedder call


def embed_batch(embedder: Embedder, *, after: int = 0, agent_id: str | None = None,
                limit: int = BATCH) -> tuple[int, int]:
    """Embed up to `limit` waiting messages past seq `after` (of one agent, or all).
    Returns (messages read, the last seq read: where the next batch starts).
    Raises EmbedderUnavailable, WrongDimension (then nothing is stored)."""
    with connection.cursor() as cur:
        rows = vectors.pending(cur, model=embedder.model, after=after, limit=limit,
                               agent_id=agent_id)
        known_dim = vectors.stored_dim(cur, model=embedder.model) if rows else None
    if not rows:
        return 0, after
    texts = [in_context(meaning_text(r.parts), r.parent_parts and meaning_text(r.parent_parts))
             for r in rows]
    wanted = [i for i, t in enumerate(texts) if t]
    made = embedder.embed_passages([texts[i] for i in wanted]) if wanted else []
    by_row: dict[int, Vector] = dict(zip(wanted, made, strict=True))
    for vector in made:
        if known_dim is not None and vector.size != known_dim:
            raise WrongDimension(
                f"{embedder.model} made a vector of {vector.size} dimensions; its stored "
                f"vectors have {known_dim}: refused (name another model to re-embed)")
    with transaction.atomic(), connection.cursor() as cur:
        vectors.store(cur, model=embedder.model, rows=[
            (r.seq, r.agent_id, r.parts, by_row.get(i)) for i, r in enumerate(rows)])
    return len(rows), rows[-1].seq


def meaning_text(parts: str) -> str:
    """What a message says, for the embedder: its text, tool inputs and outputs with their
    keys ("unhealthy hosts chk-node-7": the keys say what the values are)."""
    return project_text(orjson.loads(parts), keys=True).strip()


def pending_count(embedder: Embedder, *, agent_id: str | None = None) -> int:
    with connection.cursor() as cur:
        return vectors.pending_count(cur, model=embedder.model, agent_id=agent_id)


def embed_all(embedder: Embedder, *, agent_id: str | None = None,
              progress: Callable[[int], object] | None = None) -> int:
    """Embed every waiting message (of one agent, or all) and return how many were read;
    `progress(n)` after each batch. Ends when a pass from the first message finds none
    waiting (a message edited while it was embedded waits again)."""
    done = 0
    after = 0
    while True:
        read, last = embed_batch(embedder, after=after, agent_id=agent_id)
        if read:
            done += read
            after = last
            if progress is not None:
                progress(read)
            continue
        if after == 0:
            return done
        after = 0
