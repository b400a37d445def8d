"""Search answers: the hits of a session's or an agent's search (sessions_app/api/search.py)."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema
from pydantic import Field

from memory_core.limits import Role
from memory_core.search import MAX_HIT_CHARS


class HitCopyOut(Schema):
    session_id: str
    message_id: str


class SearchHitOut(Schema):
    id: str
    session_id: str
    role: Role
    content: str = Field(description=f"The message text; cut to {MAX_HIT_CHARS} characters "
                         "unless full=1 (see truncated).")
    snippet: str = Field(description="A short excerpt around the best match: HTML-escaped, "
                         "matched words in <mark></mark>.")
    truncated: bool = Field(description="Whether content was cut.")
    created_at: datetime = Field(description="When the message was written: tells a later "
                                 "correction from what it corrects.")
    rank: int
    score: float
    superseded_by: str | None = Field(None, description="The id of a newer hit in these "
                                      "results, on the same subject, that reads as a "
                                      "correction of this one (it ranks above it); null if none.")
    copies: int = Field(1, description="How many hits had this very text; the newest is shown.")
    other_copies: list[HitCopyOut] = Field(
        default_factory=list, description="Where the other copies are (a fork's copy and its "
        "original, say): each one's session_id and message_id, best-ranked first.")
    matched: str = Field("words", description='How the hit was found: "words", "meaning" (no '
                         'query word in it: its snippet is its start) or "both".')


class SearchOut(Schema):
    items: list[SearchHitOut]
    semantic: str = Field("off", description='Search by meaning: "on", "off" (no embedder, or '
                          'nothing embedded yet) or "unavailable" (the embedder failed: words only).')
    pending: int = Field(0, description="The agent's messages still waiting for a vector: found "
                         "by their words only until the background worker embeds them.")
