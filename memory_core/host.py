"""What the turn (chat.py) and the automatic compaction (autocompact.py) need from a
session, as a Protocol that `Session` satisfies. They take a `SessionHost` rather than
importing session.py, which imports them: the import graph stays a tree.

compaction.py declares its own narrower `CompactionHost`, since config.py (imported
here) imports compaction.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .config import SessionConfig
    from .context import SessionContext
    from .events import Payload, Status
    from .messages import Message
    from .storage import SessionStorage
    from .tree import Compaction


class SessionHost(Protocol):
    """The members of `Session` the turn and the automatic compaction use."""

    id: str
    agent_id: str
    config: SessionConfig
    storage: SessionStorage
    context: SessionContext
    in_turn: bool  # a chat turn is running: its status stays "thinking" around compaction
    turn_leaf: str | None  # while its tools run: the message the turn stands on (its branch)

    def get_history(self, leaf_id: str | None = None, raw: bool = False) -> list[Message]: ...

    def get_compactions(self) -> list[Compaction]: ...

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> Compaction: ...

    def get_message(self, message_id: str) -> Message | None: ...

    def get_branches(self, message_id: str | None) -> list[Message]: ...

    def append_message(
        self, message: Message | Mapping[str, Any], parent_id: str | None = None, *,
        if_latest: str | None = None, root: bool = False,
    ) -> Message: ...

    def upsert_message(
        self, message: Message | Mapping[str, Any], parent_id: str | None = None,
    ) -> Message: ...

    def freeze_system_prompt(self) -> str: ...

    def emit(self, payload: Payload) -> None: ...

    def set_status(self, status: Status) -> None: ...

    def tools(self, format: str | None = None) -> list[Any]: ...
