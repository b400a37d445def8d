"""`ArborSession`: the OpenAI Agents SDK's `Session`, kept in Arbor (over its API).

    from agents import Agent, Runner
    from arbor_client.agents_session import ArborSession

    session = await ArborSession.create(agent_id, base_url="http://127.0.0.1:8000",
                                        api_key="arb_...", name="support chat")
    result = await Runner.run(Agent(name="helper"), "Hi!", session=session)
    session.close()

Each SDK item becomes one Arbor message on the session's branch: the item itself is kept
in `metadata.openai_item` (so it reads back exactly) and its words become AI SDK
`UIMessage` parts (text, reasoning, `tool-<name>` parts with `state`, `input`, `output`),
so Arbor's search, tree, UI and other clients see a normal conversation. Messages other
clients wrote read back as items too; a compaction overlay reads as one system item.

Like the SDK's own sessions it can be used from any event loop or thread (each call runs
the thread-safe sync client in a worker thread), honours `session_settings.limit`, and
refuses use after `close()`. Beyond `SQLiteSession` it has what `AdvancedSQLiteSession`
has, on Arbor's tree: branches (the UI's branch switcher shows the same ones), per-turn
usage, turn queries with Arbor's search, and `run_compaction` served by Arbor's
non-destructive compaction. `arbor_client.engine_session.LocalArborSession` is the same
session in-process (no HTTP), for agents running inside the Django project.
Needs only httpx at import time; the `openai-agents` package is what calls it.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from .client import ArborAPIError, ArborClient, AsyncArborClient

__all__ = ["ArborSession", "item_to_message", "message_to_items"]

ITEM_KEY = "openai_item"
ITEM_JSON_KEY = "openai_item_json"  # the item as JSON text, when it holds values JSON can't
BRANCH_KEY = "branch_name"  # on the first message of a branch named by the SDK
MAIN = "main"
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_INT64 = 2**63
_T = TypeVar("_T")


# ----------------------------------------------------------------- conversion
def _plain(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):  # a pydantic item from the openai package
        item = item.model_dump(exclude_unset=True, mode="json")
    return dict(item)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text") or p.get("refusal") or "") for p in content
                if isinstance(p, dict) and (p.get("text") or p.get("refusal"))]
    return []


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"arguments": raw}
    return raw


def _portable(value: Any) -> bool:
    """Whether `value` is plain JSON every store keeps: no NaN/infinity, no integer past
    64 bits, no lone surrogate or NUL in a string."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            if not -_INT64 <= v < _INT64:
                return False
        elif isinstance(v, float):
            if not math.isfinite(v):
                return False
        elif isinstance(v, str):
            if "\x00" in v or not _encodable(v):
                return False
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return True


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_text(text: str) -> str:
    """Text safe to store as a part: lone surrogates and NUL replaced by U+FFFD."""
    if _encodable(text) and "\x00" not in text:
        return text
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _clean(value: Any) -> Any:
    """A JSON value safe for every store (used for parts; the item itself is kept exactly)."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {_clean_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return _clean_text(str(value))


def _output_value(output: Any) -> Any:
    if isinstance(output, list):  # structured tool output: keep the texts
        texts = [str(p.get("text")) for p in output if isinstance(p, dict) and p.get("text")]
        return "\n".join(texts) if texts else output
    return output


def item_to_message(item: Any, tool_names: dict[str, str] | None = None,
                    tool_inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """An SDK input item as an Arbor message: an AI SDK `UIMessage` (roles user,
    assistant, system; tool calls as `tool-<name>` parts) with the item kept in metadata.

    `tool_names`/`tool_inputs` (by call id) let a `function_call_output` carry its call's
    name and input, as the AI SDK's tool part does."""
    item = _plain(item)
    kind = item.get("type", "message")
    parts: list[dict[str, Any]] = []
    role = "assistant"
    if kind == "function_call":
        call_id, name = str(item.get("call_id", "")), str(item.get("name") or "tool")
        parts.append({"type": f"tool-{name}", "toolCallId": call_id, "state": "input-available",
                      "input": _arguments(item.get("arguments"))})
    elif kind == "function_call_output":
        call_id = str(item.get("call_id", ""))
        name = (tool_names or {}).get(call_id)
        part: dict[str, Any] = {"type": f"tool-{name}" if name else "dynamic-tool",
                                "toolCallId": call_id, "state": "output-available",
                                "input": (tool_inputs or {}).get(call_id),
                                "output": _output_value(item.get("output"))}
        if not name:
            part["toolName"] = "tool"
        parts.append(part)
    elif kind == "reasoning":
        parts += [{"type": "reasoning", "text": t} for t in _texts(item.get("summary"))]
    elif "role" in item:
        role = _ROLES.get(str(item["role"]), "user")
        parts += [{"type": "text", "text": t} for t in _texts(item.get("content"))]
    if _portable(item):
        metadata: dict[str, Any] = {ITEM_KEY: item}
    else:  # kept exactly as JSON text; the parts carry a cleaned copy of its words
        metadata = {ITEM_JSON_KEY: json.dumps(item, ensure_ascii=True)}
    return {"role": role, "parts": _clean(parts), "metadata": metadata}


class _Source:
    """Which parts of a stored message an item came from, to take just that item back."""

    def __init__(self, parts: list[int], output_of: int | None = None) -> None:
        self.parts = parts
        self.output_of = output_of  # the output half of one AI SDK tool part


def _stored_item(metadata: dict[str, Any]) -> dict[str, Any] | None:
    stored = metadata.get(ITEM_KEY)
    if isinstance(stored, dict):
        return stored
    text = metadata.get(ITEM_JSON_KEY)
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _message_items(message: dict[str, Any], seen_calls: set[str] | None = None
                   ) -> list[tuple[dict[str, Any], _Source]]:
    metadata = message.get("metadata") or {}
    parts = message.get("parts") or []
    stored = _stored_item(metadata)
    if stored is not None:
        if stored.get("type") == "function_call" and seen_calls is not None:
            seen_calls.add(str(stored.get("call_id")))
        return [(stored, _Source(list(range(len(parts)))))]
    seen = seen_calls if seen_calls is not None else set()
    role = message.get("role")
    out: list[tuple[dict[str, Any], _Source]] = []
    texts: list[str] = []
    text_parts: list[int] = []
    for i, part in enumerate(parts):
        kind = str(part.get("type", ""))
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
            text_parts.append(i)
        elif kind == "tool-call":
            seen.add(str(part.get("toolCallId")))
            out.append(({"type": "function_call", "call_id": str(part.get("toolCallId")),
                         "name": str(part.get("toolName")),
                         "arguments": json.dumps(part.get("input") or {})}, _Source([i])))
        elif kind == "tool-result":
            out.append(({"type": "function_call_output", "call_id": str(part.get("toolCallId")),
                         "output": _as_text(part.get("output"))}, _Source([i])))
        elif kind == "dynamic-tool" or (kind.startswith("tool-") and part.get("toolCallId")):
            call_id = str(part.get("toolCallId"))
            name = str(part.get("toolName") or "tool") if kind == "dynamic-tool" else kind[5:]
            state = part.get("state")
            if call_id not in seen:
                seen.add(call_id)
                out.append(({"type": "function_call", "call_id": call_id, "name": name,
                             "arguments": json.dumps(part.get("input") or {})}, _Source([i])))
            if state == "output-available" or (state is None and "output" in part):
                output = _as_text(part.get("output"))
            elif state == "output-error":
                output = str(part.get("errorText") or "Error")
            else:
                continue
            out.append(({"type": "function_call_output", "call_id": call_id, "output": output},
                        _Source([i], output_of=i)))
    if texts and role in ("user", "assistant", "system"):
        out.insert(0, ({"role": role, "content": "\n".join(texts)}, _Source(text_parts)))
    return out


def _as_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output)


def message_to_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An Arbor message as SDK input items (one, unless another client wrote it)."""
    return [item for item, _ in _message_items(message)]


def path_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    return [item for m in messages for item, _ in _message_items(m, seen)]


def _is_user_turn(message: dict[str, Any]) -> bool:
    item = _stored_item(message.get("metadata") or {})
    if item is not None:
        return item.get("role") == "user" and item.get("type", "message") == "message"
    return message.get("role") == "user" and not (message.get("metadata") or {}).get(
        "compaction")


def _message_text(message: dict[str, Any]) -> str:
    item = _stored_item(message.get("metadata") or {})
    if item is not None and "content" in item:
        content = item["content"]
        return content if isinstance(content, str) else "\n".join(_texts(content))
    return "\n".join(p["text"] for p in message.get("parts") or []
                     if p.get("type") == "text" and isinstance(p.get("text"), str))


# ---------------------------------------------------------------------- stores
class _HttpStore:
    """The session's operations over the JSON API, with the sync client (thread-safe,
    bound to no event loop)."""

    def __init__(self, client: ArborClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    def path(self, leaf_id: str | None) -> list[dict[str, Any]]:
        return list(self.client.history(self.session_id, leaf_id=leaf_id)["messages"])

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


def _settings(value: Any) -> Any:
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:  # the SDK is not installed: keep what was given
        return value
    return SessionSettings() if value is None else coerce_session_settings(value)


_EMPTY = ""  # the pin of a session whose own path is empty (its root was popped)


class ArborSession:
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
            _sync_client(client, base_url, api_key), session_id)
        self._lock = threading.RLock()
        self._pin: str | None = None  # a message id, _EMPTY, or None: the latest leaf
        self._pending_branch: str | None = None
        self._closed = False

    @classmethod
    async def create(cls, agent_id: str, *, name: str | None = None,
                     client: ArborClient | AsyncArborClient | None = None,
                     base_url: str | None = None, api_key: str | None = None,
                     session_settings: Any = None) -> ArborSession:
        """A new Arbor session of `agent_id`, wrapped."""
        sync = _sync_client(client, base_url, api_key)
        info = await asyncio.to_thread(sync.create_session, agent_id, name,
                                       source="openai-agents")
        return cls(info["id"], client=sync, session_settings=session_settings)

    # ------------------------------------------------------------- plumbing
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    async def _run(self, fn: Callable[[], _T]) -> _T:
        """Run `fn` (store calls, under the session's lock) off the event loop."""
        self._check_open()

        def locked() -> _T:
            with self._lock:
                self._check_open()
                return fn()

        return await asyncio.to_thread(locked)

    def _leaf(self) -> str | None:
        return None if self._pin == _EMPTY else self._pin

    def _path(self) -> list[dict[str, Any]]:
        return [] if self._pin == _EMPTY else self._store.path(self._pin)

    def close(self) -> None:
        """Release the connection; later calls raise RuntimeError. Closing twice is fine."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._store.close()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> ArborSession:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------ Session protocol
    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's branch as items, oldest first; the last `limit` (default:
        `session_settings.limit`) when given."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        items = path_items(await self._run(self._path))
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit > 0 else []

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

    # ------------------------------------------------------------ branches
    def _tree_branches(self) -> list[dict[str, Any]]:
        """One entry per leaf: its id, branch id (the first message where it splits off,
        or "main"), and the messages on its path."""
        rows = self._store.tree()
        children: dict[str | None, list[str]] = {}
        for row in rows:
            children.setdefault(row.get("parent_id"), []).append(row["id"])
        parent = {row["id"]: row.get("parent_id") for row in rows}
        out = []
        for row in rows:
            if children.get(row["id"]):
                continue
            split, node = None, row["id"]
            while node is not None and split is None:
                siblings = children.get(parent[node], [])
                if siblings and siblings[0] != node:
                    split = node
                node = parent[node]
            out.append({"leaf": row["id"], "split": split})
        for entry in out:
            path = self._store.path(entry["leaf"])
            entry["path"] = path
            name = None
            if entry["split"] is not None:
                first = next((m for m in path if m["id"] == entry["split"]), None)
                name = ((first or {}).get("metadata") or {}).get(BRANCH_KEY)
            entry["branch_id"] = name or entry["split"] or MAIN
        return out

    def _current_branch(self, branches: list[dict[str, Any]]) -> str | None:
        if self._pending_branch is not None:
            return self._pending_branch
        if self._pin == _EMPTY:
            return None
        leaf = self._pin or (self._store.path(None) or [{}])[-1].get("id")
        for entry in branches:
            if any(m["id"] == leaf for m in entry["path"]) and entry["leaf"] == leaf:
                return str(entry["branch_id"])
        for entry in branches:
            if any(m["id"] == leaf for m in entry["path"]):
                return str(entry["branch_id"])
        return MAIN if not branches else None

    def _branch_path(self, branch_id: str | None) -> list[dict[str, Any]]:
        if branch_id is None or branch_id == self._pending_branch:
            return self._path()
        for entry in self._tree_branches():
            if entry["branch_id"] == branch_id:
                return list(entry["path"])
        raise ValueError(f"Branch '{branch_id}' does not exist")

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every branch of the session's tree (the UI's branch switcher shows the same):
        `branch_id`, `message_count`, `user_turns`, `is_current`, `created_at`."""

        def branches() -> list[dict[str, Any]]:
            entries = self._tree_branches()
            current = self._current_branch(entries)
            out = []
            for entry in entries:
                path = entry["path"]
                start = next((m for m in path if m["id"] == entry["split"]), path[0] if path
                             else {})
                out.append({"branch_id": entry["branch_id"], "message_count": len(path),
                            "user_turns": sum(1 for m in path if _is_user_turn(m)),
                            "is_current": entry["branch_id"] == current,
                            "created_at": start.get("created_at"), "leaf_id": entry["leaf"]})
            if self._pending_branch is not None:
                path = self._path()
                out.append({"branch_id": self._pending_branch, "message_count": len(path),
                            "user_turns": sum(1 for m in path if _is_user_turn(m)),
                            "is_current": True, "created_at": _now(),
                            "leaf_id": self._leaf()})
            return out

        return await self._run(branches)

    async def create_branch_from_turn(self, turn_number: int,
                                      branch_name: str | None = None) -> str:
        """Branch before user turn `turn_number` of the session's branch and switch to it:
        the next items are stored beside that turn (a branch in Arbor's tree). Returns
        the branch id (`branch_name`, or one made from the turn and time)."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")

        def create() -> str:
            path = self._path()
            turns = [i for i, m in enumerate(path) if _is_user_turn(m)]
            if not 1 <= turn_number <= len(turns):
                raise ValueError(f"Turn {turn_number} does not contain a user message")
            name = branch_name or f"branch_from_turn_{turn_number}_{int(_stamp())}"
            if name == MAIN or any(e["branch_id"] == name for e in self._tree_branches()):
                raise ValueError(f"Branch '{name}' already exists")
            at = turns[turn_number - 1]
            self._pin = path[at - 1]["id"] if at > 0 else _EMPTY
            self._pending_branch = name
            return name

        return await self._run(create)

    async def create_branch_from_content(self, search_term: str,
                                         branch_name: str | None = None) -> str:
        matches = await self.find_turns_by_content(search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matches[0]["turn"], branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Read and write that branch (from `list_branches`, or one the UI made)."""

        def switch() -> None:
            for entry in self._tree_branches():
                if entry["branch_id"] == branch_id:
                    self._pin, self._pending_branch = entry["leaf"], None
                    return
            if branch_id == MAIN:  # an empty session
                self._pin, self._pending_branch = None, None
                return
            raise ValueError(f"Branch '{branch_id}' does not exist")

        await self._run(switch)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete the branch's own messages (from where it splits off, with any branch
        that splits from them). "main" cannot be deleted; the current branch only with
        force=True, which moves the session to main."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")

        def delete() -> None:
            entries = self._tree_branches()
            entry = next((e for e in entries if e["branch_id"] == branch_id), None)
            if entry is None:
                if branch_id == self._pending_branch:  # nothing stored yet
                    self._pending_branch, self._pin = None, None
                    return
                raise ValueError(f"Branch '{branch_id}' does not exist")
            if self._current_branch(entries) == branch_id:
                if not force:
                    raise ValueError(f"Cannot delete current branch '{branch_id}'. Use "
                                     "force=True or switch branches first")
                self._pin, self._pending_branch = None, None
            rows = self._store.tree()
            doomed, frontier = set(), [entry["split"]]
            while frontier:
                node = frontier.pop()
                doomed.add(node)
                frontier += [r["id"] for r in rows if r.get("parent_id") == node]
            for message_id in sorted(doomed, key=lambda i: -_depth(rows, i)):
                self._store.delete(message_id)
            if self._pin is None:
                main = next((e for e in self._tree_branches() if e["branch_id"] == MAIN), None)
                self._pin = main["leaf"] if main else None

        await self._run(delete)

    # --------------------------------------------------------------- turns
    async def get_conversation_turns(self, branch_id: str | None = None
                                     ) -> list[dict[str, Any]]:
        """The user turns of a branch (the session's own when None): `turn`, `content`
        (first 100 characters), `full_content`, `timestamp`, `can_branch`."""
        return _turns(await self._run(lambda: self._branch_path(branch_id)))

    async def find_turns_by_content(self, search_term: str, branch_id: str | None = None
                                    ) -> list[dict[str, Any]]:
        """The user turns that Arbor's search finds for `search_term` (words, stemmed,
        ranked) or that contain it literally, in turn order."""

        def find() -> tuple[list[dict[str, Any]], set[str]]:
            path = self._branch_path(branch_id)
            try:
                hits = {str(h["id"]) for h in self._store.search(search_term, 50)}
            except ArborAPIError:
                hits = set()
            return path, hits

        path, hits = await self._run(find)
        needle = search_term.casefold()
        turns = _turns(path)
        return [t for t in turns
                if t["message_id"] in hits or needle in t["full_content"].casefold()]

    # --------------------------------------------------------------- usage
    async def store_run_usage(self, result: Any) -> None:
        """Keep a run's usage: added to the session's totals and, per turn, in the turn's
        last message (`metadata.turn_usage`, as Arbor's own chat turns do)."""
        usage = getattr(getattr(result, "context_wrapper", None), "usage", None)
        if usage is None:
            return
        record = {"requests": int(getattr(usage, "requests", 0) or 0),
                  "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
                  "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
                  "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
                  "input_tokens_details": _details(getattr(usage, "input_tokens_details", None)),
                  "output_tokens_details": _details(
                      getattr(usage, "output_tokens_details", None))}

        def store() -> None:
            self._store.add_usage(record["input_tokens"], record["output_tokens"])
            path = self._path()
            if not path:
                return
            last = path[-1]
            metadata = dict(last.get("metadata") or {})
            metadata["turn_usage"] = _add_usage(metadata.get("turn_usage"), record)
            self._store.update(last["id"], {"role": last["role"], "parts": last["parts"],
                                            "metadata": metadata})

        await self._run(store)

    async def get_turn_usage(self, user_turn_number: int | None = None,
                             branch_id: str | None = None) -> Any:
        """Usage by user turn on a branch: a list of all turns', or one turn's dict."""
        path = await self._run(lambda: self._branch_path(branch_id))
        by_turn = _usage_by_turn(path)
        if user_turn_number is not None:
            found = by_turn.get(user_turn_number)
            return {k: v for k, v in found.items() if k != "user_turn_number"} if found else {}
        return [by_turn[n] for n in sorted(by_turn)]

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Total usage: `requests`, `input_tokens`, `output_tokens`, `total_tokens`,
        `total_turns`, of one branch or (None) the whole session. None when nothing ran."""

        def usage() -> dict[str, int] | None:
            if branch_id is not None:
                paths = [self._branch_path(branch_id)]
            else:
                paths = [e["path"] for e in self._tree_branches()]
            seen: set[str] = set()
            records = []
            for path in paths:
                for message in path:
                    turn_usage = (message.get("metadata") or {}).get("turn_usage")
                    if isinstance(turn_usage, dict) and message["id"] not in seen:
                        seen.add(message["id"])
                        records.append(turn_usage)
            if not records:
                return None
            total = {k: sum(int(r.get(k) or 0) for r in records)
                     for k in ("requests", "input_tokens", "output_tokens", "total_tokens")}
            if not total["total_tokens"]:
                total["total_tokens"] = total["input_tokens"] + total["output_tokens"]
            return {**total, "total_turns": len(records)}

        return await self._run(usage)

    # ---------------------------------------------------------- compaction
    async def run_compaction(self, args: dict[str, Any] | None = None) -> None:
        """The SDK's compaction hook, served by Arbor's compaction: older messages are
        summarised in an overlay (nothing is deleted; the UI can expand it), so
        `get_items` then returns the summary and the recent items."""
        await self._run(self._store.compact)


def _call_id(item: dict[str, Any]) -> str:
    return str(item.get("call_id")) if item.get("type") == "function_call" else ""


def _without(message: dict[str, Any], source: _Source) -> dict[str, Any]:
    """The message with one item's parts taken out (an answered tool part goes back to
    waiting for its output)."""
    parts = []
    for i, part in enumerate(message.get("parts") or []):
        if i == source.output_of:
            part = {k: v for k, v in part.items() if k not in ("output", "errorText")}
            part["state"] = "input-available"
        elif i in source.parts:
            continue
        parts.append(part)
    return {"role": message["role"], "parts": parts, "metadata": message.get("metadata") or {}}


def _depth(rows: list[dict[str, Any]], node: str) -> int:
    parent = {r["id"]: r.get("parent_id") for r in rows}
    depth = 0
    while parent.get(node) is not None:
        node, depth = parent[node], depth + 1
    return depth


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _stamp() -> float:
    return datetime.now(UTC).timestamp()


def _turns(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in path:
        if _is_user_turn(message):
            text = _message_text(message)
            out.append({"turn": len(out) + 1, "content": text[:100], "full_content": text,
                        "timestamp": message.get("created_at"), "can_branch": True,
                        "message_id": message["id"]})
    return out


def _details(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(value) if isinstance(value, dict) else None


def _add_usage(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(old, dict):
        return new
    out = dict(old)
    for key in ("requests", "input_tokens", "output_tokens", "total_tokens"):
        out[key] = int(old.get(key) or 0) + int(new.get(key) or 0)
    return out


def _usage_by_turn(path: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    by_turn: dict[int, dict[str, Any]] = {}
    turn = 0
    for message in path:
        if _is_user_turn(message):
            turn += 1
        record = (message.get("metadata") or {}).get("turn_usage")
        if turn and isinstance(record, dict):
            merged = _add_usage(by_turn.get(turn), record)
            merged.setdefault("requests", 1)
            merged.setdefault("total_tokens", int(merged.get("input_tokens") or 0)
                              + int(merged.get("output_tokens") or 0))
            by_turn[turn] = {**merged, "user_turn_number": turn}
    return by_turn
