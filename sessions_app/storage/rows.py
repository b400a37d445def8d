"""Vendor-neutral values of the message index: the scope tokens every indexed row
carries (built here only, whichever database indexes them) and the row to write."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def session_token(session_id: str) -> str:
    # '§' is never part of a user word, so a query cannot name a scope token.
    return "§s" + session_id.replace("-", "")


def agent_token(agent_id: str) -> str:
    return "§a" + agent_id.replace("-", "")


def namespace_token(namespace: str) -> str:
    return "§n" + hashlib.sha1(namespace.encode()).hexdigest()[:24]


def message_scope(session_id: str, agent_id: str) -> tuple[str, str]:
    """The scope tokens every indexed message carries."""
    return session_token(session_id), agent_token(agent_id)


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One arbor_message row to write, with its index tokens (search_len counts them):
    the text's, then `search_extra`'s."""

    session_id: str
    message_id: str
    parent_seq: int | None
    parent_id: str | None  # (not stored: a bulk insert finds the parent's seq by it)
    role: str
    parts: str  # JSON text
    metadata: str  # JSON text
    created_at: Any  # already in the database's form (Dialect.message_time)
    tokens: Sequence[str]
    search_len: int
    search_extra: str | None = None  # the tokens past the text's, space-joined

    def values(self) -> list[Any]:
        """sql.INSERT_MESSAGE's parameters."""
        return [self.session_id, self.message_id, self.parent_seq, self.role, self.parts,
                self.metadata, self.search_len, self.created_at, self.search_extra]

    def linked_values(self) -> list[Any]:
        """sql.INSERT_LINKED's parameters: the parent by its id."""
        return [self.session_id, self.message_id, self.session_id, self.parent_id, self.role,
                self.parts, self.metadata, self.search_len, self.created_at, self.search_extra]
