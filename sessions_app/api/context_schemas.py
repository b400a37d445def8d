"""Shapes of a session's context: blocks, entries, the frozen prompt and its status, and
memory tool calls. Block and entry responses mirror the engine's values field for field."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Annotated, Any, get_type_hints

from ninja import Schema
from pydantic import Field, StringConstraints, create_model

from memory_core import limits as lim
from memory_core.context import ContextBlock, ContextEntry, PromptStatus

from .schemas import Id, In, Text


def _mirror(value: type, name: str) -> type[Schema]:
    """The response shape of an engine value, field for field: defined once, by the value."""
    hints = get_type_hints(value)
    return create_model(name, __base__=Schema,
                        **{f.name: (hints[f.name], ...) for f in fields(value)})


ContextBlockOut = _mirror(ContextBlock, "ContextBlockOut")
EntryOut = _mirror(ContextEntry, "EntryOut")
PromptStatusOut = _mirror(PromptStatus, "PromptStatusOut")


class ContextList(Schema):
    items: list[ContextBlockOut]


class ContentIn(In):
    content: Text


class EntryIn(In):
    content: Text
    description: Annotated[str, StringConstraints(max_length=lim.MAX_DESCRIPTION)] | None = None


class PromptOut(Schema):
    prompt: str
    frozen_at: datetime | None


# -------------------------------------------------------------------- tools
class ToolList(Schema):
    items: list[dict[str, Any]]


class ToolCallIn(In):
    arguments: dict[str, Any] = Field(default_factory=dict)
    message_id: Id | None = Field(None, description="The assistant message of this session "
                                  "that carries the call: block versions name it as their "
                                  "source.")


class ToolCallOut(Schema):
    result: str
    is_error: bool
