"""An offline model asked one question over a few notes, for the local-model tests."""

from __future__ import annotations

from typing import Any

from sessions_app.semantic import config
from sessions_app.semantic.embed import embed_all
from tests.conftest import assistant_msg, user_msg


def ask(manager: Any, session: Any, settings: Any, *, local: str, model: str,
        notes: list[str], answer: str, question: str) -> tuple[Any, Any]:
    """With ARBOR_EMBEDDINGS_LOCAL=`local` (no URL) and its vectors made: the stored answer
    (after `notes`, each acknowledged) and the top 3 hits of the agent-wide `question`."""
    settings.ARBOR_EMBEDDINGS = "on"  # no URL, so the offline model
    settings.ARBOR_EMBEDDINGS_LOCAL = local
    embedder = config.embedder()
    assert embedder is not None and embedder.model == model
    for text in notes:
        session.append_message(user_msg(text))
        session.append_message(assistant_msg("Noted."))
    stored = session.append_message(user_msg(answer))
    embed_all(embedder)
    hits = manager.search(question, 3)
    assert hits.semantic == "on"
    return stored, hits
