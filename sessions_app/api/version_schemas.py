"""Shapes of a block's versions (memory_core/versions.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import Field


class SourceOut(Schema):
    message_id: str | None = Field(description="The message that carried the write (a "
                                   "memory tool call), else null.")
    leaf_id: str | None = Field(description="The leaf the session stood on.")
    session_id: str | None = Field(description="The session the write came through.")
    deleted: bool = Field(description="The writing message (or its session) is deleted.")


class VersionOut(Schema):
    label: str
    number: int
    action: str
    key: str | None
    content: str | None = Field(description="A writable block's text after the write.")
    entries: list[dict[str, Any]] | None = Field(
        description="A keyed block's entries after the write: {key, content, description, "
        "source {message_id, leaf_id}}.")
    loaded: list[str] | None = Field(description="A skill block's loaded skills.")
    actor: str = Field(description="model, api, ui, mcp, import or system.")
    actor_id: str | None = Field(description="The API key's or the user's id.")
    message_id: str | None
    leaf_id: str | None
    source: SourceOut
    restored_from: int | None
    created_at: datetime


class VersionList(Schema):
    items: list[VersionOut]
    next_cursor: str | None


class DiffOut(Schema):
    label: str
    from_: int | None = Field(alias="from")
    to: int
    diff: str
