"""Sessions imported from other tools' conversations, and the record that makes a second
import of the same conversation a no-op."""

from __future__ import annotations

from dataclasses import replace

from django.db import IntegrityError, connection, transaction

from memory_core.context import specs_from_templates
from memory_core.errors import Conflict
from memory_core.messages import SessionInfo, now
from memory_core.snapshot import SessionSnapshot

from .registry import Registry

_IMPORTED = ("SELECT session_id FROM arbor_import_source WHERE agent_id = %s "
             "AND source_format = %s AND conversation_id = %s")


_RECORD = ("INSERT INTO arbor_import_source (agent_id, session_id, source_format, "
           "conversation_id, created_at) VALUES (%s, %s, %s, %s, %s)")


class Imported(Registry):
    """Sessions imported from other tools: restored like any session (Registry), with
    the agent's block templates, and recorded once per agent."""

    def imported_session(self, agent_id: str, source_format: str,
                         conversation_id: str) -> str | None:
        # Raw: asked once per conversation of a file, where the ORM's 1 ms to build the
        # query is a tenth of the conversation's whole import.
        with connection.cursor() as cur:
            cur.execute(_IMPORTED, [agent_id, source_format, conversation_id])
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def store_imported(self, agent_id: str, snapshot: SessionSnapshot, *, source_format: str,
                       conversation_id: str) -> SessionInfo:
        # Like any new session, it starts with the agent's block templates.
        templates = specs_from_templates(self.agent_templates(agent_id))
        snapshot = replace(snapshot, blocks=[(t.label, t.stored(), False) for t in templates])
        try:
            with transaction.atomic(savepoint=False):  # (no savepoint: an error undoes the whole import)
                info = self.restore_session(agent_id, snapshot)
                with connection.cursor() as cur:  # (raw, as _IMPORTED: once a conversation)
                    cur.execute(_RECORD, [agent_id, info.id, source_format, conversation_id,
                                          connection.ops.adapt_datetimefield_value(now())])
        except IntegrityError:  # another import of the same file got there first
            raise Conflict(f"conversation {conversation_id} is being imported by another "
                           "request") from None
        return info
