"""Events: what the engine announces after each write (SPEC §10).

The engine emits every event through the session's configured `EventSink`, inside the
write's own storage transaction, so a sink that stores them (Arbor's Django sink numbers
them with a per-session `seq` and keeps them in an outbox) commits or rolls back with the
write. Nothing else emits. The default sink drops everything.

Two names beyond SPEC §10's list: `compaction.removed` (an overlay was removed; data
`compaction_id`) and `session.updated` (registry fields changed: end_reason, model,
source, or the usage totals; data: the changed fields' new values).

What each carries in `data` is one TypedDict per type below (`PAYLOADS`), built only by
the named constructors after them (`message_appended(message)`, `session_status(status)`,
...), which every emit site calls: `mypy --strict` checks each shape where it is built.
A new session (created, forked, continued, imported) announces itself with
`session.status` "idle"; `message.delta` is ephemeral (no seq, not stored), sent while a
turn streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, cast, get_args

if TYPE_CHECKING:
    from .messages import Message, SessionInfo
    from .tree import Compaction

EventType = Literal[
    "message.appended",
    "message.updated",
    "messages.deleted",
    "branch.created",
    "session.status",
    "compaction.started",
    "compaction.completed",
    "compaction.failed",
    "compaction.removed",
    "context.updated",
    "prompt.refreshed",
    "session.renamed",
    "session.deleted",
    "session.updated",
    "message.delta",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
EPHEMERAL: frozenset[str] = frozenset({"message.delta"})  # not stored, no seq

Status = Literal["idle", "thinking", "compacting", "error"]
ContextAction = Literal["replace", "append", "set_entry", "add", "remove", "load", "unload",
                        "restore"]

MessageJson = dict[str, Any]  # Message.to_dict(): SPEC §9's shape
CompactionJson = dict[str, Any]  # Compaction.to_dict()


# ------------------------------------------------------------------ payloads
# One per event type: the `data` of its frame, exactly as the wire carries it.
class MessageAppended(TypedDict):
    message: MessageJson
    parent_id: str | None


class MessageUpdated(TypedDict):
    message: MessageJson


class MessagesDeleted(TypedDict, total=False):
    ids: list[str]  # with count: these messages (and their descendants)
    count: int
    all: Literal[True]  # alone: every message (clear)


class BranchCreated(TypedDict):
    message_id: str
    parent_id: str | None


# (Optional keys are declared in a total=False subclass, not with NotRequired: under
# postponed annotations only that is seen at run time, in __optional_keys__.)
class _Status(TypedDict):
    status: Status


class SessionStatus(_Status, total=False):
    stopping: Literal[True]  # a stop was asked of the running turn


class CompactionStarted(TypedDict):
    pass


class CompactionCompleted(TypedDict):
    compaction: CompactionJson | None  # None: an automatic compaction found nothing to do


class CompactionFailed(TypedDict):
    error: str


class CompactionRemoved(TypedDict):
    compaction_id: str


class _Context(TypedDict):
    label: str
    action: ContextAction


class ContextUpdated(_Context, total=False):
    key: str  # set_entry, load, unload
    number: int  # restore: the version restored


class PromptRefreshed(TypedDict):
    frozen_at: str | None


class SessionRenamed(TypedDict):
    name: str


class SessionDeleted(TypedDict):
    pass


UpdatedField = Literal["end_reason", "model", "source", "input_tokens", "output_tokens",
                       "estimated_cost"]
UPDATED_FIELDS: tuple[UpdatedField, ...] = get_args(UpdatedField)
USAGE_FIELDS: tuple[UpdatedField, ...] = ("input_tokens", "output_tokens", "estimated_cost")


class SessionUpdated(TypedDict, total=False):
    """The changed registry fields' new values (any of them)."""

    end_reason: str | None
    model: str | None
    source: str | None
    input_tokens: int
    output_tokens: int
    estimated_cost: float


class MessageDelta(TypedDict):
    message_id: str
    parent_id: str | None
    text: str


PAYLOADS: dict[str, type[Any]] = {
    "message.appended": MessageAppended,
    "message.updated": MessageUpdated,
    "messages.deleted": MessagesDeleted,
    "branch.created": BranchCreated,
    "session.status": SessionStatus,
    "compaction.started": CompactionStarted,
    "compaction.completed": CompactionCompleted,
    "compaction.failed": CompactionFailed,
    "compaction.removed": CompactionRemoved,
    "context.updated": ContextUpdated,
    "prompt.refreshed": PromptRefreshed,
    "session.renamed": SessionRenamed,
    "session.deleted": SessionDeleted,
    "session.updated": SessionUpdated,
    "message.delta": MessageDelta,
}

Data = (MessageAppended | MessageUpdated | MessagesDeleted | BranchCreated | SessionStatus
        | CompactionStarted | CompactionCompleted | CompactionFailed | CompactionRemoved
        | ContextUpdated | PromptRefreshed | SessionRenamed | SessionDeleted | SessionUpdated
        | MessageDelta)


@dataclass(frozen=True)
class Payload:
    """An event before it names its session: what a constructor below returns and
    `Session.emit` / `Session.writing` take."""

    type: EventType
    data: Data


# -------------------------------------------------------------- constructors
# The only way the engine builds an event: each emit site calls one of these.
def message_appended(message: Message) -> Payload:
    return Payload("message.appended", MessageAppended(message=message.to_dict(),
                                                       parent_id=message.parent_id))


def message_updated(message: Message) -> Payload:
    return Payload("message.updated", MessageUpdated(message=message.to_dict()))


def messages_deleted(ids: list[str], count: int) -> Payload:
    return Payload("messages.deleted", MessagesDeleted(ids=ids, count=count))


def messages_cleared() -> Payload:
    return Payload("messages.deleted", MessagesDeleted(all=True))


def branch_created(message: Message) -> Payload:
    return Payload("branch.created", BranchCreated(message_id=message.id,
                                                   parent_id=message.parent_id))


def session_status(status: Status, *, stopping: bool = False) -> Payload:
    data = SessionStatus(status=status)
    if stopping:
        data["stopping"] = True
    return Payload("session.status", data)


def compaction_started() -> Payload:
    return Payload("compaction.started", CompactionStarted())


def compaction_completed(overlay: Compaction | None) -> Payload:
    return Payload("compaction.completed", CompactionCompleted(
        compaction=overlay.to_dict() if overlay is not None else None))


def compaction_failed(error: str) -> Payload:
    return Payload("compaction.failed", CompactionFailed(error=error))


def compaction_removed(compaction_id: str) -> Payload:
    return Payload("compaction.removed", CompactionRemoved(compaction_id=compaction_id))


def context_updated(label: str, action: ContextAction, *, key: str | None = None,
                    number: int | None = None) -> Payload:
    data = ContextUpdated(label=label, action=action)
    if key is not None:
        data["key"] = key
    if number is not None:
        data["number"] = number
    return Payload("context.updated", data)


def prompt_refreshed(frozen_at: str | None) -> Payload:
    return Payload("prompt.refreshed", PromptRefreshed(frozen_at=frozen_at))


def session_renamed(name: str) -> Payload:
    return Payload("session.renamed", SessionRenamed(name=name))


def session_deleted() -> Payload:
    return Payload("session.deleted", SessionDeleted())


def session_updated(info: SessionInfo, fields: Iterable[UpdatedField]) -> Payload:
    """The new values of `fields`, read from the session's registry row `info`."""
    return Payload("session.updated",
                   cast(SessionUpdated, {f: getattr(info, f) for f in fields}))


def message_delta(message_id: str, parent_id: str | None, text: str) -> Payload:
    return Payload("message.delta", MessageDelta(message_id=message_id, parent_id=parent_id,
                                                 text=text))


@dataclass(frozen=True)
class Event:
    type: EventType
    session_id: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ephemeral(self) -> bool:
        return self.type in EPHEMERAL


class EventSink(Protocol):
    def emit(self, event: Event) -> None:
        """Called inside the write's transaction (ephemeral events: outside any)."""


class NoEvents:
    """The default sink: drops every event."""

    def emit(self, event: Event) -> None:
        return None


NO_EVENTS = NoEvents()
