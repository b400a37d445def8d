"""Search by meaning: the embedder and how far it has come with an agent's messages."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import Field

from ..access import agent_for
from ..semantic.status import status
from .schemas import errors

router = Router(tags=["search"])


class EmbeddingsOut(Schema):
    enabled: bool = Field(description="Whether search by meaning is on (ARBOR_EMBEDDINGS).")
    model: str | None = Field(description="The embedding model; null when off.")
    embedded: int = Field(description="The agent's messages that have a vector by it.")
    pending: int = Field(description="The agent's messages waiting for one: until embedded "
                         "(in the background), search finds them by their words only.")
    failing: bool = Field(description="Whether the background embedder's last tries failed.")
    error: str = Field(description="Why, when failing.")


@router.get("/agents/{aid:agent_id}/embeddings", response={200: EmbeddingsOut, **errors(404)})
def agent_embeddings(request: HttpRequest, agent_id: str) -> Any:
    """The embedder and how many of the agent's messages wait for a vector."""
    return status(agent_for(request.auth, agent_id).id)
