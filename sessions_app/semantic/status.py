"""What is said about search by meaning (the API, the prompt panel): the embedder, and
how many of an agent's messages wait for a vector."""

from __future__ import annotations

from typing import Any

from django.db import connection

from ..storage import vectors
from . import config, worker


def status(agent_id: str) -> dict[str, Any]:
    """{"enabled", "model", "embedded", "pending", "failing", "error"}: `failing` while the
    background worker's last tries failed (`error` says why)."""
    embedder = config.embedder()
    running = worker.current()
    failing = bool(running and running.failures)
    out: dict[str, Any] = {"enabled": embedder is not None, "model": None, "embedded": 0,
                           "pending": 0, "failing": failing,
                           "error": running.last_error if running and failing else ""}
    if embedder is None:
        return out
    with connection.cursor() as cur:
        embedded = vectors.count(cur, agent_id=agent_id, model=embedder.model)
        pending = vectors.pending_count(cur, model=embedder.model, agent_id=agent_id,
                                        embedded=embedded)
    out.update(model=embedder.model, embedded=embedded, pending=pending)
    return out
