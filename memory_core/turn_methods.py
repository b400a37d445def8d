"""Session's methods for its turns (chat, regenerate, stop) and compaction: each hands
over to chat.py, busy.py or autocompact.py. A mixin of Session, as ContextMethods is, so
session.py holds the message tree; their async twins sit beside them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from . import autocompact as auto
from . import busy, events
from . import chat as chat_turn
from .async_steps import aturn

if TYPE_CHECKING:
    from .host import SessionHost
    from .tree import Compaction


class TurnMethods:
    """The turn half of Session's public API."""

    # ------------------------------------------------------------------ chat
    def chat(self: SessionHost, content: str, parent_id: str | None = None, stream: bool = False, *,
             root: bool = False) -> Any:
        """Run one assistant turn with the configured model and store every step.

        Appends the user message (under parent_id, else the latest leaf; root=True: as a
        new root), sends the frozen prompt, history and tools, runs tool calls until the
        model answers. Chatting under an earlier message makes a branch (edit-and-resend:
        under the original's parent). Returns the stored final assistant Message; with
        stream=True, an iterator of events (text_delta, tool_call, tool_result, done).
        """
        return chat_turn.start(self, chat_turn.Ask(content, parent_id, root), stream=stream)

    def regenerate(self: SessionHost, message_id: str, stream: bool = False) -> Any:
        """A new answer beside the assistant message message_id: the model sees the path
        up to its parent, and the answer is stored under that parent (a branch). Returns
        what chat() returns. Raises NotFound; InvalidInput for a message that is not an
        assistant's or has no parent."""
        return chat_turn.start(self, chat_turn.Ask(regenerate=message_id), stream=stream)

    async def achat(self: SessionHost, content: str, parent_id: str | None = None, stream: bool = False, *,
                    root: bool = False) -> Any:
        """Async twin of chat(); with stream=True an async iterator of the same events."""
        return await aturn(self, chat_turn.Ask(content, parent_id, root), stream=stream)

    async def aregenerate(self: SessionHost, message_id: str, stream: bool = False) -> Any:
        """Async twin of regenerate(), as achat() is of chat()."""
        return await aturn(self, chat_turn.Ask(regenerate=message_id), stream=stream)

    def request_stop(self: SessionHost) -> bool:
        """Ask this session's running turn to stop, wherever it runs (another thread or
        worker process): the request is stored, and a streaming turn checks for it every
        STOP_CHECK_SECONDS, keeps the partial answer (metadata.interrupted) and ends with
        `done`. A non-streaming turn stops only between model calls (before the next step
        of its tool loop). Returns False, storing nothing, when no turn is running
        (status not "thinking"). A turn that died with its process (busy.py) is not
        waited for: the session is freed, status "error", and this returns False."""
        if busy.free_if_gone(self):
            return False
        with self.storage.transaction():
            stopping = self.storage.set_stop(self.id, requested=True)
            if stopping:
                self.emit(events.session_status("thinking", stopping=True))
        return stopping

    # ------------------------------------------------------------ compaction
    def compact(self: SessionHost) -> Compaction | None:
        """Run the configured compact function now (default: the offline summariser).

        Returns the new overlay, or None when compacting would not shrink the history.
        Raises CompactionError when the summariser fails; nothing is lost then.
        """
        return auto.compact_now(self)

    def compaction_status(self: SessionHost) -> dict[str, Any]:
        """{error, failed_at, retry_at} of the last failed automatic compaction."""
        error, failed_at, retry_at = self.storage.compaction_state(self.id)
        return {"error": error or None, "failed_at": failed_at, "retry_at": retry_at}

    arequest_stop = sync_to_async(request_stop)
    acompact = sync_to_async(compact)
    acompaction_status = sync_to_async(compaction_status)
