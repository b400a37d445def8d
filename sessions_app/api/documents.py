"""The export/import document of SPEC §9: a whole session as one JSON value.

Its pieces reuse the request shapes of schemas.py; the limits behind them are
memory_core.limits'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints

from memory_core.limits import MAX_TEXT, Role
from memory_core.versions import ACTIONS, ACTORS

from .schemas import NO_NUL, BlockOptions, Cost, Count, Id, JsonIn, Label, Name, Reason, RowId


def _utc(value: datetime) -> datetime:
    # Postgres refuses offsets past ±15:59; every stored time is UTC anyway.
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise ValueError("datetime is out of range") from None


Stamp = Annotated[datetime, AfterValidator(_utc)]


class Doc(JsonIn):
    """Lax about types (timestamps arrive as text), strict about unknown fields."""


class DocSession(Doc):
    id: RowId
    name: Name = ""
    parent_session_id: RowId | None = None
    model: Name | None = None
    source: Name | None = None
    input_tokens: Count = 0
    output_tokens: Count = 0
    estimated_cost: Cost = 0.0
    end_reason: Reason | None = None
    created_at: Stamp
    updated_at: Stamp


class DocMessage(Doc):
    id: Id
    parent_id: Id | None = None
    role: Role
    parts: list[dict[str, Any]]
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: Stamp


class DocCompaction(Doc):
    id: RowId
    summary: Annotated[str, StringConstraints(min_length=1)]
    from_message_id: Id
    to_message_id: Id
    created_at: Stamp


class DocEntry(Doc):
    key: Id
    content: str
    description: str = ""


def _known(allowed: tuple[str, ...]) -> Any:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value
    return AfterValidator(check)


class DocSource(Doc):
    message_id: Id | None = None
    leaf_id: Id | None = None


class DocVersionEntry(DocEntry):
    source: DocSource | None = None


class DocVersion(Doc):
    """One kept state of a block (memory_core/versions.py)."""

    number: Annotated[int, Field(ge=1, le=2**31 - 1)]
    action: Annotated[str, _known(ACTIONS)]
    key: Id | None = None
    content: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None
    entries: list[DocVersionEntry] | None = None
    loaded: list[Id] | None = None
    actor: Annotated[str, _known(ACTORS)]
    actor_id: Annotated[str, StringConstraints(max_length=64, pattern=NO_NUL)] | None = None
    message_id: Id | None = None
    leaf_id: Id | None = None
    source_session_id: RowId | None = Field(None, description="Set when the version was "
                                            "written in another session (a fork's history).")
    source_deleted: bool = False
    restored_from: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None
    created_at: Stamp


class DocBlock(Doc):
    label: Label
    spec: BlockOptions
    removed: bool = False
    content: str | None = Field(None, description="A session-scoped writable block's text.")
    entries: list[DocEntry] = Field(default_factory=list, description="A session-scoped "
                                    "skill or search block's entries.")
    versions: list[DocVersion] | None = Field(None, description="A session-scoped block's "
                                              "kept versions, oldest first (absent in older "
                                              "documents).")


class DocSkill(Doc):
    label: Label
    key: Id
    loaded: bool
    loaded_at: Stamp
    unloaded_at: Stamp | None = None


class DocPrompt(Doc):
    text: Annotated[str, StringConstraints(max_length=MAX_TEXT, pattern=NO_NUL)]
    # Each block's digest, so a refresh can tell which blocks changed.
    sections: dict[Label, Annotated[str, StringConstraints(max_length=200)]] = Field(
        default_factory=dict)
    frozen_at: Stamp


class SessionDocument(Doc):
    """A whole session: registry row, message tree (parents before children),
    compaction overlays and session-scoped blocks with their contents."""

    format: Literal["arbor.session"] = "arbor.session"
    version: Literal[1] = 1
    session: DocSession
    messages: list[DocMessage] = Field(default_factory=list)
    compactions: list[DocCompaction] = Field(default_factory=list)
    blocks: list[DocBlock] = Field(default_factory=list)
    skills: list[DocSkill] = Field(default_factory=list, description="Skills loaded or "
                                   "unloaded in the session (absent in older documents).")
    prompt: DocPrompt | None = Field(None, description="The frozen system prompt, if any.")
