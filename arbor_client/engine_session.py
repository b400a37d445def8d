"""`LocalArborSession`: `ArborSession` on the engine itself, for agents that run inside
the Django project (no HTTP, no API key).

    from agents import Agent, Runner
    from arbor_client.engine_session import LocalArborSession

    session = await LocalArborSession.create(agent, name="support chat")  # model or id
    result = await Runner.run(Agent(name="helper"), "Hi!", session=session)

The same items, branches, usage and compaction as `ArborSession`, written through
`memory_core.SessionManager` (so events, search and the UI see them as any other write).
Engine calls run in Django's thread-sensitive executor, from any event loop or thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

from memory_core import SessionManager

from .agents_session import ArborSession

__all__ = ["LocalArborSession"]
_T = TypeVar("_T")


class _EngineStore:
    """The operations ArborSession needs, on a SessionManager (plain dicts out)."""

    def __init__(self, manager: SessionManager, session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id

    def _session(self) -> Any:
        return self.manager.get_session(self.session_id)

    def path(self, leaf_id: str | None) -> list[dict[str, Any]]:
        return [m.to_dict() for m in self._session().get_history(leaf_id)]

    def page(self, leaf_id: str | None, limit: int, before_id: str | None) -> dict[str, Any]:
        got = self._session().get_history_page(leaf_id, limit=limit, before_id=before_id)
        first = got.messages[0].id if got.has_more and got.messages else None
        return {**got.to_dict(), "next_before_id": first}

    def paths(self) -> dict[str, Any]:
        session = self._session()
        return {"tree": [row.to_dict() for row in session.get_tree()],
                "items": [{"leaf_id": leaf, "messages": [m.to_dict() for m in path]}
                          for leaf, path in session.get_leaf_paths()]}

    def append(self, messages: list[dict[str, Any]], parent_id: str | None,
               root: bool) -> list[dict[str, Any]]:
        stored = self.manager.append_all(self.session_id, messages, parent_id, root=root)
        return [m.to_dict() for m in stored]

    def update(self, message_id: str, message: dict[str, Any]) -> None:
        self._session().update_message({**message, "id": message_id})

    def delete(self, message_id: str) -> bool:
        return bool(self._session().delete_messages([message_id]))

    def clear(self) -> None:
        self._session().clear_messages()

    def tree(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self._session().get_tree()]

    def info(self) -> dict[str, Any]:
        info = self.manager.get(self.session_id)
        return info.to_dict() if info is not None else {}

    def add_usage(self, input_tokens: int, output_tokens: int) -> None:
        self.manager.add_usage(self.session_id, input_tokens, output_tokens)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        return [{"id": hit.id, "session_id": hit.session_id}
                for hit in self._session().search(query, limit)]

    def compact(self) -> Any:
        return self._session().compact()

    def close(self) -> None:
        return None


class LocalArborSession(ArborSession):
    """An OpenAI Agents SDK session kept by Arbor's engine in this process."""

    def __init__(self, session_id: str, agent: Any, *, session_settings: Any = None,
                 manager: SessionManager | None = None) -> None:
        manager = manager or SessionManager.for_agent(agent)
        super().__init__(session_id, session_settings=session_settings,
                         store=_EngineStore(manager, session_id))

    @classmethod
    async def create(cls, agent: Any, *, name: str | None = None,  # type: ignore[override]
                     session_settings: Any = None, **_: Any) -> LocalArborSession:
        """A new session of `agent` (an Agent model instance or its id), wrapped."""
        manager = SessionManager.for_agent(agent)
        info = await sync_to_async(manager.create)(name, source="openai-agents")
        return cls(info.id, agent, session_settings=session_settings, manager=manager)

    async def _run(self, fn: Callable[[], _T]) -> _T:
        return await sync_to_async(self._locked(fn), thread_sensitive=True)()
