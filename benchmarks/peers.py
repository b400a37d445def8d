"""The stores an agent developer would pick instead of Arbor, measured in the same run.

The OpenAI Agents SDK's `SQLiteSession` (a flat table of JSON items, one file, at its
defaults: WAL, thread-local connections, every call through `asyncio.to_thread`),
driven the way its users drive it: its async methods on one event loop.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from typing import Any

from agents.memory import SQLiteSession

PEER = "OpenAI Agents SQLiteSession"


def item(message: dict[str, Any]) -> dict[str, Any]:
    """The SDK's input item for a corpus message: the same role and text."""
    text = "".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")
    return {"role": message["role"], "content": message.get("content", text)}


class Peer:
    """One SQLiteSession in a fresh file, called synchronously through its own loop."""

    def __init__(self, session_id: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="arbor-peer-")
        self.path = os.path.join(self.dir, "agents.sqlite3")
        self.loop = asyncio.new_event_loop()
        self.session = SQLiteSession(session_id, self.path)

    def add(self, message: dict[str, Any]) -> None:
        self.loop.run_until_complete(self.session.add_items([item(message)]))

    def add_many(self, messages: list[dict[str, Any]]) -> None:
        self.loop.run_until_complete(self.session.add_items([item(m) for m in messages]))

    def history(self) -> list[Any]:
        return self.loop.run_until_complete(self.session.get_items())

    def size(self) -> int:
        """Bytes on disk: the database file and its WAL."""
        return sum(os.path.getsize(self.path + s) for s in ("", "-wal")
                   if os.path.exists(self.path + s))

    def close(self) -> None:
        self.session.close()
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)
