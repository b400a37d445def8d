"""SQL functions Arbor registers on every SQLite connection Django opens.

`arbor_search_body(parts, search_extra)` is a message's full-text body: the index tokens
of its parts' text, then its stored extra tokens (a tool result's call name and input).
The message index is a contentless FTS5 table (migration 0014): it keeps the tokens' index
but not the body, so removing or replacing a row (triggers on arbor_message, a fork's
copy) hands FTS5 the body again, rebuilt from the message by this function. It must give
the tokens the write indexed: a change to `index_tokens` or `project_text` ships with a
migration that rebuilds the index. A connection without it (the sqlite3 shell) cannot
delete or edit messages: the trigger fails and nothing changes.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.db.backends.signals import connection_created

from memory_core.messages import project_text
from memory_core.words import index_tokens


def search_tokens(parts: list[dict[str, Any]] | str, extra: str | None) -> list[str]:
    """The tokens a message row indexes (parts as stored JSON text, or decoded)."""
    decoded = orjson.loads(parts) if isinstance(parts, str) else parts
    tokens = index_tokens(project_text(decoded))
    return tokens + extra.split() if extra else tokens


def search_body(parts: str, extra: str | None) -> str:
    return " ".join(search_tokens(parts, extra))


def _on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "sqlite":
        connection.connection.create_function("arbor_search_body", 2, search_body,
                                              deterministic=True)


def install() -> None:
    connection_created.connect(_on_connect, dispatch_uid="arbor-sqlite-functions")
