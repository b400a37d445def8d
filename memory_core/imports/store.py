"""Conversations into sessions: one transaction for a whole file, one bulk copy per
conversation, and a record of each so a second import of the same file adds nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..limits import MAX_ID_LENGTH
from ..message_rules import check_message
from ..messages import Message, prepare
from ..snapshot import SessionSnapshot
from .tree import BadExport, Conversation, Planned, plan

if TYPE_CHECKING:
    from ..manager import SessionManager


@dataclass(slots=True)
class ImportSummary:
    """What an import made: `sessions` [{id, name, messages, source_id}] and `skipped`
    [{source_id, reason}], in file order."""

    format: str
    sessions: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "sessions": self.sessions, "skipped": self.skipped}


def import_conversations(
    manager: SessionManager, fmt: str, conversations: Iterable[Conversation], *,
    progress: Callable[[Conversation, int], None] | None = None,
) -> ImportSummary:
    """Store each conversation as a new session of the manager's agent, all or nothing:
    the first malformed conversation (BadExport) rolls back every one before it.
    A conversation already imported into this agent (same format and id) is skipped."""
    storage = manager.storage
    summary = ImportSummary(fmt)
    seen: set[str] = set()
    with storage.transaction(bulk_writes=True):
        for conv in conversations:
            planned = plan(conv)  # checked even when skipped: a bad file imports nothing
            if len(conv.id) > MAX_ID_LENGTH:
                raise BadExport(f"the id is longer than {MAX_ID_LENGTH} characters",
                                conversation=conv.id[:40] + "...", field="id")
            done = conv.id in seen or storage.imported_session(
                manager.agent_id, conv.format, conv.id)
            if done:
                reason = ("appears earlier in this file" if conv.id in seen else
                          f"already imported as session {done}")
                summary.skipped.append({"source_id": conv.id, "reason": reason})
            else:
                info = storage.store_imported(
                    manager.agent_id, _snapshot(manager, planned),
                    source_format=conv.format, conversation_id=conv.id)
                manager.announce_new(info.id)
                summary.sessions.append({"id": info.id, "name": info.name,
                                         "messages": len(planned.messages),
                                         "source_id": conv.id})
            seen.add(conv.id)
            if progress is not None:
                progress(conv, len(planned.messages))
    return summary


def _snapshot(manager: SessionManager, planned: Planned) -> SessionSnapshot:
    limit = manager.config.max_tool_output_chars
    messages: list[Message] = []
    encoded: list[tuple[str, str, str]] = []
    for m in planned.messages:
        try:
            # (The parsers' values are JSON's own, decoded from the file: no round trip.)
            new = prepare(check_message(m, from_json=True), keep_created_at=True,
                          max_tool_output=limit)
        except BadExport:
            raise
        except InvalidInput as exc:  # e.g. text the databases cannot hold
            source = m["metadata"]["source"]["message_id"]
            raise BadExport(f"message {source!r}: {exc.detail}",
                            conversation=planned.conversation.id,
                            field=exc.field or "message") from None
        messages.append(new.to_message(m["parent_id"]))
        encoded.append((new.parts_json, new.metadata_json, new.text))
    conv = planned.conversation
    return SessionSnapshot(
        id=str(uuid.uuid4()), name=planned.name, created_at=planned.created_at,
        updated_at=planned.updated_at, model=conv.model, source=conv.format,
        messages=messages, encoded=encoded)
