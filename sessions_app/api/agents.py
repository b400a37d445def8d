"""Agents: the namespaces a key's user owns, with the block templates of new sessions."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from memory_core import InvalidInput
from memory_core.context import specs_from_templates

from .. import models
from ..access import agent_for, agents_of
from ..agents import delete_agent as delete_agent_row
from .errors import Forbidden
from .pagination import DEFAULT_LIMIT, MAX_LIMIT, page
from .schemas import AgentIn, AgentList, AgentOut, AgentPatch, BlockTemplate, errors

router = Router(tags=["agents"])


def _templates(templates: list[BlockTemplate]) -> list[dict[str, Any]]:
    """Checked by the engine's own rules, so no session can start with a bad block."""
    specs = specs_from_templates([t.model_dump(exclude_none=True) for t in templates])
    return [{"label": spec.label, **spec.stored()} for spec in specs]


def _name(value: str) -> str:
    name = value.strip()
    if not name:
        raise InvalidInput("name must not be blank")
    return name


@router.post("/agents", response={201: AgentOut, **errors(403, 413, 422)})
def create_agent(request: HttpRequest, body: AgentIn) -> Any:
    """A new agent owned by the key's user. Keys limited to one agent cannot create agents."""
    if request.auth.agent_id is not None:
        raise Forbidden("this API key is limited to one agent and cannot create agents")
    agent = models.Agent.objects.create(
        owner_id=request.auth.user_id, name=_name(body.name), context=_templates(body.context)
    )
    return Status(201, agent)


@router.get("/agents", response={200: AgentList, **errors(422)})
def list_agents(
    request: HttpRequest, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    cursor: str | None = Query(None, max_length=500),
) -> Any:
    """The agents the key may see, oldest first."""
    items, next_cursor = page(agents_of(request.auth), field="created_at", cursor=cursor,
                              limit=limit, newest_first=False)
    return {"items": items, "next_cursor": next_cursor}


@router.get("/agents/{aid:agent_id}", response={200: AgentOut, **errors(404)})
def get_agent(request: HttpRequest, agent_id: str) -> Any:
    return agent_for(request.auth, agent_id)


@router.patch("/agents/{aid:agent_id}", response={200: AgentOut, **errors(404, 413, 422)})
def update_agent(request: HttpRequest, agent_id: str, body: AgentPatch) -> Any:
    """Rename, replace the block templates (sessions made later start with them), or set
    the retention policy (`retention: null` keeps every session forever)."""
    agent = agent_for(request.auth, agent_id)
    fields = []
    if body.name is not None:
        agent.name = _name(body.name)
        fields.append("name")
    if body.context is not None:
        agent.context = _templates(body.context)
        fields.append("context")
    if "retention" in body.model_fields_set:
        policy = body.retention
        agent.retention_max_age_days = policy.max_age_days if policy else None
        agent.retention_max_sessions = policy.max_sessions if policy else None
        fields += ["retention_max_age_days", "retention_max_sessions"]
    if fields:
        agent.save(update_fields=[*fields, "updated_at"])
    return agent


@router.delete("/agents/{aid:agent_id}", response={204: None, **errors(404)})
def delete_agent(request: HttpRequest, agent_id: str) -> Any:
    """Delete the agent with all its sessions, messages, blocks and search rows."""
    delete_agent_row(agent_for(request.auth, agent_id))
    return Status(204, None)
