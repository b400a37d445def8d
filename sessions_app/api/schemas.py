"""Request and response shapes of SPEC §9, as pydantic models (through ninja).

Inputs forbid unknown fields and are strict about types, so a typo or a wrong type is a
422 naming the field rather than a silent default. Ids in inputs refuse NUL, which no
database column can hold. Limits, patterns and literals come from memory_core.limits;
the export/import document shapes live in documents.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from memory_core import limits as lim
from memory_core.limits import Kind, Role, Scope

NO_NUL = lim.NO_NUL_PATTERN
Id = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_ID_LENGTH, pattern=NO_NUL)]
Name = Annotated[str, StringConstraints(max_length=lim.MAX_NAME, pattern=NO_NUL)]
Label = Annotated[str, StringConstraints(pattern=lim.LABEL_PATTERN)]
Text = Annotated[str, StringConstraints(max_length=lim.MAX_TEXT)]
Count = Annotated[int, Field(ge=0, le=lim.MAX_TOKEN_TOTAL)]
Cost = Annotated[float, Field(ge=0, le=lim.MAX_COST, allow_inf_nan=False)]
RowId = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_ROW_ID_LENGTH,
                                         pattern=NO_NUL)]
Reason = Annotated[str, StringConstraints(max_length=lim.MAX_REASON, pattern=NO_NUL)]
Description = Annotated[str, StringConstraints(max_length=lim.MAX_DESCRIPTION, pattern=NO_NUL)]
AgentName = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_NAME,
                                             pattern=NO_NUL)]


class JsonIn(Schema):
    """A body read from JSON: unknown fields are refused, and it is validated once."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(cls, values: Any, handler: ModelWrapValidatorHandler[Any],
                            info: ValidationInfo) -> Any:
        # Replaces ninja's, which validates twice when extra is forbidden (once on the raw
        # dict, once through its ORM getter); inputs are JSON, so once is the whole job.
        return handler(values)


class In(JsonIn):
    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorOut(Schema):
    detail: str
    code: str


class ConflictOut(ErrorOut):
    current_leaf_id: str | None = Field(
        None, description="With if_latest: the session's latest leaf now.")


# ------------------------------------------------------------------ agents
class BlockOptions(In):
    description: Description | None = None
    max_tokens: Annotated[int, Field(gt=0, le=lim.MAX_BLOCK_TOKENS)] | None = None
    kind: Kind | None = Field(None, description="Default: writable.")
    content: Annotated[str, StringConstraints(max_length=lim.MAX_BLOCK_CONTENT,
                                              pattern=NO_NUL)] | None = None
    scope: Scope | None = Field(None, description="Default: session.")
    files: Annotated[str, StringConstraints(
        max_length=lim.MAX_NAME, pattern=lim.FILES_PATTERN,
    )] | None = Field(None, description="A skill block's folder in the skills storage.")


class BlockTemplate(BlockOptions):
    """A block every new session of the agent starts with (SPEC §4, §9)."""

    label: Label


class BlockTemplateOut(Schema):
    label: str
    description: str | None = None
    max_tokens: int | None = None
    kind: Kind | None = None
    content: str | None = None
    scope: Scope | None = None
    files: str | None = None

    @model_serializer(mode="wrap")
    def _only_set(self, handler: Any) -> dict[str, Any]:
        # Templates read back as they were stored: options not given are left out.
        return {k: v for k, v in handler(self).items() if v is not None}


class AgentIn(In):
    name: AgentName
    context: list[BlockTemplate] = Field(default_factory=list, max_length=lim.MAX_TEMPLATES)


class RetentionIn(In):
    """How long the agent's sessions are kept (null: forever)."""

    max_age_days: int | None = Field(
        None, ge=1, le=lim.MAX_RETENTION_DAYS, description="Sessions not updated for this many days "
        "are deleted (pinned ones stay).")
    max_sessions: int | None = Field(
        None, ge=1, le=lim.MAX_RETENTION_SESSIONS, description="Only the newest this many (unpinned) "
        "sessions are kept.")


class RetentionOut(Schema):
    max_age_days: int | None
    max_sessions: int | None


class AgentPatch(In):
    name: AgentName | None = None
    retention: RetentionIn | None = Field(None, description="The retention policy "
                                          "(replaces the current one).")
    context: list[BlockTemplate] | None = Field(
        None, max_length=lim.MAX_TEMPLATES, description="Replaces the templates; existing "
        "sessions keep "
        "the blocks they started with.")


class AgentOut(Schema):
    id: str
    name: str
    context: list[BlockTemplateOut]
    retention: RetentionOut
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_retention(obj: Any) -> dict[str, int | None]:
        return {"max_age_days": obj.retention_max_age_days,
                "max_sessions": obj.retention_max_sessions}


class AgentList(Schema):
    items: list[AgentOut]
    next_cursor: str | None


# ----------------------------------------------------------------- sessions
class SessionIn(In):
    name: Name | None = None
    parent_session_id: RowId | None = None
    model: Name | None = None
    source: Name | None = None


class SessionPatch(In):
    name: Name | None = None
    end_reason: Reason | None = Field(None, description="Ends the session; null reopens it.")
    pinned: bool | None = Field(None, description="A pinned session is never removed by "
                                "the agent's retention policy.")


class SessionOut(Schema):
    id: str
    agent_id: str
    name: str
    parent_session_id: str | None
    model: str | None
    source: str | None
    input_tokens: Count
    output_tokens: Count
    estimated_cost: Cost
    end_reason: str | None
    message_count: int
    created_at: datetime
    updated_at: datetime
    status: Literal["idle", "thinking", "compacting", "error"] = Field(
        "idle", description="What the session is doing now (a chat turn: thinking).")
    pinned: bool = Field(False, description="Never removed by a retention policy.")


class SessionList(Schema):
    items: list[SessionOut]
    next_cursor: str | None


class ForkIn(In):
    message_id: Id
    name: Name | None = None


class UsageIn(In):
    input_tokens: Count = 0
    output_tokens: Count = 0
    cost: Cost = 0.0


class CompactAndSplitIn(In):
    summary: Text | None = Field(None, description="Default: the configured summariser writes it.")
    name: Name | None = None


class CompactionIn(In):
    summary: Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_BLOCK_CONTENT)]
    from_message_id: Id
    to_message_id: Id


class CompactionOut(Schema):
    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: datetime


class CompactionList(Schema):
    items: list[CompactionOut]


class CompactOut(Schema):
    compaction: CompactionOut | None = Field(
        description="The new overlay, or null when compacting would not shrink the history.")


# ----------------------------------------------------------------- messages
# (what an append or edit takes: message_schemas.py)
ROOT_DOC = "A new root message (no parent), even in a session with messages; with parent_id, 422."


class MessageOut(Schema):
    id: str
    parent_id: str | None
    role: Role
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    created_at: datetime


class MessageList(Schema):
    items: list[MessageOut]


class SiblingOut(Schema):
    index: int = Field(description="1-based, in creation order among its parent's children "
                                   "(or the session's roots).")
    count: int
    previous_id: str | None
    next_id: str | None


class HistoryOut(Schema):
    leaf_id: str | None
    messages: list[MessageOut]
    has_more: bool | None = Field(
        None, description="Paged reads (limit or before_id): older messages exist above.")
    next_before_id: str | None = Field(
        None, description="Paged reads: before_id for the page above, when has_more.")
    siblings: dict[str, SiblingOut] | None = Field(
        None, description="Paged reads: each stored message's place among its siblings.")


class LeafOut(Schema):
    message: MessageOut | None


class TreeRowOut(Schema):
    id: str
    parent_id: str | None
    role: Role
    preview: str
    created_at: datetime
    child_count: int


class TreeOut(Schema):
    items: list[TreeRowOut]


class LeafPathOut(Schema):
    leaf_id: str
    messages: list[MessageOut]


class PathsOut(Schema):
    tree: list[TreeRowOut]
    items: list[LeafPathOut] = Field(description="Every leaf with its path as history reads "
                                     "it, oldest leaf first: the last is the latest leaf.")


# --------------------------------------------------------------------- chat
class ChatIn(In):
    """A user message to answer (`content`), or `regenerate`: exactly one of the two."""

    content: Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_BLOCK_CONTENT)
                       ] | None = Field(None, description="The user message.")
    regenerate: Id | None = Field(None, description="An assistant message's id: a new answer "
                                  "beside it, from the path up to its parent.")
    parent_id: Id | None = Field(None, description="With content: default the latest leaf.")
    root: bool = Field(False, description="With content: " + ROOT_DOC)
    stream: bool = Field(False, description="Answer text/event-stream: text_delta, "
                         "tool_call, tool_result events, then done with the stored message.")

    @model_validator(mode="after")
    def _one_of(self) -> ChatIn:
        if (self.content is None) == (self.regenerate is None):
            raise ValueError("give content (a user message) or regenerate (an assistant "
                             "message id), exactly one of the two")
        if self.regenerate is not None and (self.parent_id is not None or self.root):
            raise ValueError("regenerate answers under the regenerated message's own parent: "
                             "give no parent_id or root with it")
        return self


class StopOut(Schema):
    stopping: bool = Field(description="Whether a running turn was asked to stop.")


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """Error responses of an operation, for the OpenAPI document (401 always)."""
    out: dict[int, type[ErrorOut]] = {401: ErrorOut}
    for status in statuses:
        out[status] = ConflictOut if status == 409 else ErrorOut
    return out
