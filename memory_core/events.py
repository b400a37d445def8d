"""Events: what the engine announces after each write (SPEC §10).

The engine emits every event through the session's configured `EventSink`, inside the
write's own storage transaction, so a sink that stores them (Arbor's Django sink numbers
them with a per-session `seq` and keeps them in an outbox) commits or rolls back with the
write. Nothing else emits. The default sink drops everything.

Two names beyond SPEC §10's list: `compaction.removed` (an overlay was removed; data
`compaction_id`) and `session.updated` (registry fields changed: end_reason, model,
source, or the usage totals; data: the changed fields' new values).

What each carries in `data`:
- message.appended   {message, parent_id}     message.updated  {message}
- messages.deleted   {ids, count} or {all: true} (clear)
- branch.created     {message_id, parent_id}  (a message that is not its parent's first child)
- session.status     {status}: idle | thinking | compacting | error; a new session
                     (created, forked, continued, imported) announces itself with "idle"
- compaction.started {}   compaction.completed {compaction: overlay or null}
- compaction.failed  {error}
- context.updated    {label, action: replace|append|set_entry|add|remove|load|unload[, key]}
- prompt.refreshed   {frozen_at}   session.renamed {name}   session.deleted {}
- message.delta      {message_id, parent_id, text}: ephemeral, while a turn streams
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

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
