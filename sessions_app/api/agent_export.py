"""The whole-agent export (issue 31): JSON Lines, so it streams both ways. The first line
is the agent (its block templates, retention policy and pinned sessions), each further
line one of its sessions as Arbor's own session document (api/documents.py), oldest
first, so a continuation comes after the session it continues. Importing the same body
into an agent brings back every session, the templates and the policy, all or nothing;
exported again, it gives the same bytes (ids and timestamps are kept unless they
collide with existing ones, as for a single session's import)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import transaction
from pydantic import ValidationError as PydanticError

from memory_core import InvalidInput, NotFound
from memory_core.messages import SessionInfo
from memory_core.transfer import export_session, import_session

from .. import models
from ..access import manager_for
from ..lifecycle import retention
from .agents import _templates
from .documents import SessionDocument
from .errors import strict_loads, validation_detail
from .render import dumps
from .schemas import BlockTemplate

FORMAT = "arbor.agent"
VERSION = 1


def header(agent: models.Agent) -> dict[str, Any]:
    return {
        "format": FORMAT, "version": VERSION,
        "agent": {"id": agent.id, "name": agent.name, "context": agent.context,
                  "retention": {"max_age_days": agent.retention_max_age_days,
                                "max_sessions": agent.retention_max_sessions}},
        "pinned": list(models.Session.objects.filter(agent_id=agent.id, pinned=True)
                       .order_by("created_at", "id").values_list("id", flat=True)),
    }


def export_lines(agent: models.Agent) -> Iterator[bytes]:
    """The agent's export, a line at a time (one session read at a time)."""
    yield dumps(header(agent)) + b"\n"
    manager = manager_for(agent)
    ids = list(models.Session.objects.filter(agent_id=agent.id)
               .order_by("created_at", "id").values_list("id", flat=True))
    for session_id in ids:
        try:
            yield dumps(export_session(manager, session_id)) + b"\n"
        except NotFound:  # deleted while the export streamed
            continue


def is_agent_export(body: bytes) -> bool:
    """Whether a body's first line is this export's header (a cheap look: the whole
    body is checked by import_lines)."""
    first = body.lstrip()[:200]
    return first.startswith(b"{") and b'"format":"arbor.agent"' in first.replace(b" ", b"")


def import_lines(agent: models.Agent, body: bytes) -> list[SessionInfo]:
    """Every session of the export as a new session of `agent`, its templates and
    policy the agent's: all or nothing. Raises InvalidInput naming the line at fault."""
    lines = [(n, line) for n, line in enumerate(body.splitlines(), start=1) if line.strip()]
    head = _json(lines[0][1], 1, strict_loads)
    if head.get("format") != FORMAT or head.get("version") != VERSION:
        raise InvalidInput(f"line 1: not an {FORMAT} version {VERSION} header")
    about = head.get("agent") if isinstance(head.get("agent"), dict) else {}
    policy = about.get("retention") or {}
    pinned = head.get("pinned") or []
    if not isinstance(policy, dict) or not isinstance(pinned, list):
        raise InvalidInput("line 1: retention must be an object and pinned a list")
    try:
        templates = _templates([BlockTemplate.model_validate(t)
                                for t in about.get("context") or []])
    except PydanticError as exc:
        raise InvalidInput(f"line 1: agent.context: {_detail(exc)}") from None
    max_age, max_sessions = policy.get("max_age_days"), policy.get("max_sessions")
    for value in (max_age, max_sessions):
        if value is not None and (type(value) is not int):
            raise InvalidInput("line 1: retention values must be whole numbers or null")
    retention.check(max_age_days=max_age, max_sessions=max_sessions)
    documents = []
    for n, line in lines[1:]:
        try:
            documents.append(SessionDocument.model_validate(_json(line, n, strict_loads)))
        except PydanticError as exc:
            raise InvalidInput(f"line {n}: {_detail(exc)}") from None
    manager = manager_for(agent)
    with transaction.atomic():
        infos = [import_session(manager, d.model_dump()) for d in documents]
        renamed = {d.session.id: i.id for d, i in zip(documents, infos, strict=True)}
        models.Session.objects.filter(
            id__in=[renamed[p] for p in pinned if p in renamed]).update(pinned=True)
        agent.context, agent.retention_max_age_days = templates, max_age
        agent.retention_max_sessions = max_sessions
        agent.save(update_fields=["context", "retention_max_age_days",
                                  "retention_max_sessions", "updated_at"])
    return infos


def _detail(exc: PydanticError) -> str:
    # Located as ninja locates body errors, so the message names the field the same way.
    return validation_detail([{**e, "loc": ("body", "body", *e["loc"])}
                              for e in exc.errors(include_url=False)])


def _json(line: bytes, n: int, loads: Any) -> Any:
    try:
        value = loads(line)
    except InvalidInput as exc:
        raise InvalidInput(f"line {n}: {exc.detail}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"line {n}: must be a JSON object")
    return value
