"""`ArborSession`: the OpenAI Agents SDK's `Session`, kept in Arbor (over its API).

    from agents import Agent, Runner
    from arbor_client.agents_session import ArborSession

    session = await ArborSession.create(agent_id, base_url="http://127.0.0.1:8000",
                                        api_key="arb_...", name="support chat")
    result = await Runner.run(Agent(name="helper"), "Hi!", session=session)
    await session.close()  # or session.close(): it closes at once either way

Each SDK item becomes one Arbor message on the session's branch: the item itself is kept
in `metadata.openai_item` (so it reads back exactly) and its words become AI SDK
`UIMessage` parts (text, reasoning, `tool-<name>` parts with `state`, `input`, `output`),
so Arbor's search, tree, UI and other clients see a normal conversation. Messages other
clients wrote read back as items too; a compaction overlay reads as one system item.

Like the SDK's own sessions it can be used from any event loop or thread (each call runs
the thread-safe sync client in a worker thread), honours `session_settings.limit`, and
refuses use after `close()`, which works called or awaited (the SDK's `SQLiteSession`
closes with `close()`, its `AsyncSQLiteSession` with `await close()`); `AsyncArborSession`
is the async-first spelling, whose `close()` is a coroutine that waits for a call in
flight without holding up the event loop. Beyond `SQLiteSession` it has what
`AdvancedSQLiteSession` has, on Arbor's tree: branches (the UI's branch switcher shows the
same ones), per-turn usage, turn queries with Arbor's search, and `run_compaction` served
by Arbor's non-destructive compaction. `arbor_client.engine_session.LocalArborSession` is the same
session in-process (no HTTP), for agents running inside the Django project.
Needs only httpx at import time; the `openai-agents` package is what calls it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Self, TypeVar

from .agents_branches import _EMPTY, BRANCH_KEY
from .agents_items import (
    _arguments,
    _call_id,
    _message_items,
    _plain,
    _without,
    item_to_message,
    message_to_items,
    path_items,
)
from .agents_turns import TurnsMixin
from .client import ArborAPIError, ArborClient, AsyncArborClient

__all__ = ["ArborSession", "AsyncArborSession", "item_to_message", "message_to_items"]
_T = TypeVar("_T")
MAX_PAGE = 500  # messages per history page the API serves


# ---------------------------------------------------------------------- stores
class _HttpStore:
    """The session's operations over the JSON API, with the sync client (thread-safe,
    bound to no event loop)."""

    def __init__(self, client: ArborClient, session_id: str, owns: bool) -> None:
        self.client = client
        self.session_id = session_id
        self.owns = owns  # made here (not the caller's): closed with the session

    def path(self, leaf_id: str | None) -> list[dict[str, Any]]:
        return list(self.client.history(self.session_id, leaf_id=leaf_id)["messages"])

    def page(self, leaf_id: str | None, limit: int, before_id: str | None) -> dict[str, Any]:
        return dict(self.client.history(self.session_id, leaf_id=leaf_id, limit=limit,
                                        before_id=before_id))

    def paths(self) -> dict[str, Any]:
        return dict(self.client.paths(self.session_id))

    def append(self, messages: list[dict[str, Any]], parent_id: str | None,
               root: bool) -> list[dict[str, Any]]:
        answer = self.client.append_batch(self.session_id, messages, parent_id=parent_id,
                                          root=root)
        return list(answer["items"])

    def update(self, message_id: str, message: dict[str, Any]) -> None:
        self.client.update_message(self.session_id, message_id, message)

    def delete(self, message_id: str) -> bool:
        try:
            self.client.delete_message(self.session_id, message_id)
        except ArborAPIError as exc:
            if exc.status != 404:
                raise
            return False
        return True

    def clear(self) -> None:
        self.client.clear(self.session_id)

    def tree(self) -> list[dict[str, Any]]:
        return list(self.client.tree(self.session_id)["items"])

    def info(self) -> dict[str, Any]:
        return dict(self.client.get_session(self.session_id))

    def add_usage(self, input_tokens: int, output_tokens: int) -> None:
        self.client.add_usage(self.session_id, input_tokens, output_tokens)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        return list(self.client.search(self.session_id, query, limit, full=True)["items"])

    def compact(self) -> Any:
        return self.client.compact(self.session_id)

    def close(self) -> None:
        if self.owns:
            self.client.close()


def _sync_client(client: Any, base_url: str | None, api_key: str | None) -> ArborClient:
    if isinstance(client, ArborClient):
        return client
    if isinstance(client, AsyncArborClient):  # same server and key, without its loop
        base = client._base[: -len("/api/v1")]
        key = client._headers["Authorization"].removeprefix("Bearer ")
        return ArborClient(base, key)
    if not base_url or not api_key:
        raise ValueError("give an ArborClient, or base_url and api_key")
    return ArborClient(base_url, api_key)


class _Closed:
    """What `ArborSession.close()` returns: already done, and awaitable, so code written
    for the SDK's `AsyncSQLiteSession` (`await session.close()`) runs unchanged."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()  # nothing left to wait for


_CLOSED = _Closed()


def _settings(value: Any) -> Any:
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:  # the SDK is not installed: keep what was given
        return value
    return SessionSettings() if value is None else coerce_session_settings(value)


class ArborSession(TurnsMixin):
    """An OpenAI Agents SDK session whose items live in an Arbor session.

    The session reads and writes the latest branch (the UI's current one) unless it was
    moved: popping items walks back along its own path (never onto a branch another
    client made), and `switch_to_branch` / `create_branch_from_turn` pick a branch.
    """

    session_settings: Any = None

    def __init__(self, session_id: str, *, client: ArborClient | AsyncArborClient | None = None,
                 base_url: str | None = None, api_key: str | None = None,
                 session_settings: Any = None, store: Any = None) -> None:
        self.session_id = session_id
        self.session_settings = _settings(session_settings)
        self._store = store if store is not None else _HttpStore(
            _sync_client(client, base_url, api_key), session_id,
            owns=not isinstance(client, ArborClient))
        self._lock = threading.RLock()
        self._pin: str | None = None  # a message id, _EMPTY, or None: the latest leaf
        self._pending_branch: str | None = None
        self._closed = False

    @classmethod
    async def create(cls, agent_id: str, *, name: str | None = None,
                     client: ArborClient | AsyncArborClient | None = None,
                     base_url: str | None = None, api_key: str | None = None,
                     session_settings: Any = None) -> Self:
        """A new Arbor session of `agent_id`, wrapped."""
        sync = _sync_client(client, base_url, api_key)
        info = await asyncio.to_thread(sync.create_session, agent_id, name,
                                       source="openai-agents")
        session = cls(info["id"], client=sync, session_settings=session_settings)
        session._store.owns = not isinstance(client, ArborClient)
        return session

    # ------------------------------------------------------------- plumbing
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    def _locked(self, fn: Callable[[], _T]) -> Callable[[], _T]:
        """`fn` (store calls) to run under the session's lock, once it is known open."""
        self._check_open()

        def locked() -> _T:
            with self._lock:
                self._check_open()
                return fn()

        return locked

    async def _run(self, fn: Callable[[], _T]) -> _T:
        """Run `fn` (store calls, under the session's lock) off the event loop."""
        return await asyncio.to_thread(self._locked(fn))

    def _leaf(self) -> str | None:
        return None if self._pin == _EMPTY else self._pin

    def _on_branch(self, read: Callable[[str | None], _T]) -> _T:
        """read(the leaf the session stands on)."""
        try:
            return read(self._pin)
        except Exception as exc:
            gone = getattr(exc, "status", None) == 404 or getattr(exc, "code", None) == "not_found"
            if self._pin is None or not gone:
                raise
        # Where the session stood was deleted by another client: back to the latest leaf.
        self._pin, self._pending_branch = None, None
        return read(None)

    def _path(self) -> list[dict[str, Any]]:
        if self._pin == _EMPTY:
            return []
        return self._on_branch(self._store.path)

    def _last_items(self, limit: int) -> list[dict[str, Any]]:
        """The last `limit` items of the branch, from pages read from its end until they
        hold that many: not the whole path."""
        if self._pin == _EMPTY:
            return []
        size = min(limit, MAX_PAGE)
        page = self._on_branch(lambda leaf: self._store.page(leaf, size, None))
        messages = list(page["messages"])
        while True:
            items = path_items(messages)
            if len(items) >= limit or not page["has_more"]:
                return items[-limit:]
            leaf = page["leaf_id"]
            page = self._store.page(leaf, size, page["next_before_id"])
            messages = list(page["messages"]) + messages

    def _shut(self) -> None:
        """Close once (after a call in flight ends: it holds the lock)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._store.close()

    def close(self) -> Awaitable[None]:
        """Release the connection; later calls raise RuntimeError. Closing twice is fine.

        It closes before it returns; what it returns may be awaited (and need not be), so
        `session.close()` and `await session.close()` both work."""
        self._shut()
        return _CLOSED

    async def aclose(self) -> None:
        self._shut()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # ------------------------------------------------------ Session protocol
    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's branch as items, oldest first; the last `limit` (default:
        `session_settings.limit`) when given."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        if limit is None or limit < 0:
            return path_items(await self._run(self._path))
        if limit == 0:
            return []
        wanted = limit
        return await self._run(lambda: self._last_items(wanted))

    async def add_items(self, items: list[Any]) -> None:
        """Append the items in order on the session's branch, all or nothing."""
        self._check_open()
        if not items:
            return
        plain = [_plain(i) for i in items]
        names = {str(i.get("call_id")): str(i.get("name")) for i in plain
                 if i.get("type") == "function_call"}
        inputs = {str(i.get("call_id")): _arguments(i.get("arguments")) for i in plain
                  if i.get("type") == "function_call"}

        def add() -> None:
            missing = {str(i.get("call_id")) for i in plain
                       if i.get("type") == "function_call_output"} - set(names)
            if missing:  # outputs of calls stored earlier: their names, for the tool part
                for item in path_items(self._path()):
                    if item.get("type") == "function_call" and item.get("call_id") in missing:
                        names[str(item["call_id"])] = str(item.get("name"))
                        inputs[str(item["call_id"])] = _arguments(item.get("arguments"))
            messages = [item_to_message(i, names, inputs) for i in plain]
            if self._pending_branch is not None:
                messages[0]["metadata"][BRANCH_KEY] = self._pending_branch
            self._store.append(messages, self._leaf(), self._pin == _EMPTY)
            self._pin = None  # what was just appended is the latest leaf
            self._pending_branch = None

        await self._run(add)

    async def pop_item(self) -> dict[str, Any] | None:
        """Remove the session's most recent item and return it (None when empty).

        A message another client wrote with several items (text and a tool call, say)
        loses only its last one. The session then stands on the popped message's parent,
        even where that is a branch point."""

        def pop() -> dict[str, Any] | None:
            while True:
                path = self._path()
                if not path:
                    return None
                leaf = path[-1]
                if str(leaf.get("id", "")).startswith("compaction-"):
                    return None  # a summary overlay is not an item to pop
                items = _message_items(leaf, {_call_id(i) for m in path[:-1]
                                              for i in message_to_items(m)})
                if len(items) > 1:
                    item, source = items[-1]
                    self._store.update(leaf["id"], _without(leaf, source))
                    self._pin = leaf["id"]
                    return item
                if not self._store.delete(leaf["id"]):
                    continue  # popped meanwhile by another writer: look again
                self._pin = leaf.get("parent_id") or _EMPTY
                if items:
                    return items[0][0]

        return await self._run(pop)

    async def clear_session(self) -> None:
        """Remove every message of the session (all branches)."""

        def clear() -> None:
            self._store.clear()
            self._pin = None
            self._pending_branch = None

        await self._run(clear)


class AsyncArborSession(ArborSession):
    """`ArborSession` for async-first code, as the SDK's `AsyncSQLiteSession` is to its
    `SQLiteSession`: the same session, with `close()` a coroutine to await. Closing waits
    for a call in flight in a worker thread, so the event loop keeps running meanwhile.
    """

    async def close(self) -> None:
        await asyncio.to_thread(self._shut)

    async def aclose(self) -> None:
        await self.close()
