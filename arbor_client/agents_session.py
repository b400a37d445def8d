"""`ArborSession`: the OpenAI Agents SDK `Session` protocol, kept in Arbor over its API.

    from agents import Agent, Runner
    from arbor_client.agents_session import ArborSession

    session = await ArborSession.create(agent_id, base_url="http://127.0.0.1:8000",
                                        api_key="arb_...", name="support chat")
    result = await Runner.run(Agent(name="helper"), "Hi!", session=session)

Each SDK item becomes one Arbor message on the session's current branch: the item itself
is kept in `metadata.openai_item` (so it reads back exactly), and its words become AI SDK
parts (text, tool-call, tool-result, reasoning), so Arbor's search, tree, UI and the
other API clients see a normal conversation. Messages written by other clients read back
as items too; a compaction overlay reads as one system item with its summary.
Needs only httpx at import time; the `openai-agents` package is what calls it.
"""

from __future__ import annotations

import json
from typing import Any

from .client import ArborAPIError, AsyncArborClient

__all__ = ["ArborSession", "item_to_message", "message_to_items"]

ITEM_KEY = "openai_item"
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


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


def item_to_message(item: Any) -> dict[str, Any]:
    """An SDK input item as an Arbor message (SPEC §1 shape), the item kept in metadata."""
    item = _plain(item)
    kind = item.get("type", "message")
    parts: list[dict[str, Any]] = []
    if kind == "function_call":
        role = "assistant"
        parts.append({"type": "tool-call", "toolCallId": str(item.get("call_id", "")),
                      "toolName": str(item.get("name", "")),
                      "input": _arguments(item.get("arguments"))})
    elif kind == "function_call_output":
        role = "tool"
        parts.append({"type": "tool-result", "toolCallId": str(item.get("call_id", "")),
                      "output": item.get("output")})
    elif kind == "reasoning":
        role = "assistant"
        parts += [{"type": "reasoning", "text": t} for t in _texts(item.get("summary"))]
    elif "role" in item:
        role = _ROLES.get(str(item["role"]), "user")
        parts += [{"type": "text", "text": t} for t in _texts(item.get("content"))]
    else:  # other tool kinds: assistant-side calls, tool-side outputs
        role = "tool" if str(kind).endswith("_output") else "assistant"
    return {"role": role, "parts": parts, "metadata": {ITEM_KEY: item}}


def message_to_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An Arbor message as SDK input items (one, unless another client wrote it)."""
    stored = (message.get("metadata") or {}).get(ITEM_KEY)
    if isinstance(stored, dict):
        return [stored]
    role, items, texts = message.get("role"), [], []
    for part in message.get("parts") or []:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "tool-call":
            items.append({"type": "function_call", "call_id": str(part.get("toolCallId")),
                          "name": str(part.get("toolName")),
                          "arguments": json.dumps(part.get("input") or {})})
        elif kind == "tool-result":
            output = part.get("output")
            items.append({"type": "function_call_output", "call_id": str(part.get("toolCallId")),
                          "output": output if isinstance(output, str) else json.dumps(output)})
    if texts and role in ("user", "assistant", "system"):
        items.insert(0, {"role": role, "content": "\n".join(texts)})
    return items


class ArborSession:
    """An OpenAI Agents SDK session whose items live in an Arbor session."""

    session_settings: Any = None

    def __init__(self, session_id: str, *, client: AsyncArborClient | None = None,
                 base_url: str | None = None, api_key: str | None = None) -> None:
        if client is None:
            if not base_url or not api_key:
                raise ValueError("give an AsyncArborClient, or base_url and api_key")
            client = AsyncArborClient(base_url, api_key)
        self.session_id = session_id
        self.client = client

    @classmethod
    async def create(cls, agent_id: str, *, name: str | None = None,
                     client: AsyncArborClient | None = None, base_url: str | None = None,
                     api_key: str | None = None) -> ArborSession:
        """A new Arbor session of `agent_id`, wrapped."""
        if client is None:
            if not base_url or not api_key:
                raise ValueError("give an AsyncArborClient, or base_url and api_key")
            client = AsyncArborClient(base_url, api_key)
        info = await client.create_session(agent_id, name, source="openai-agents")
        return cls(info["id"], client=client)

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The current branch as items, oldest first (the last `limit` when given)."""
        history = await self.client.history(self.session_id)
        items = [item for m in history["messages"] for item in message_to_items(m)]
        if limit is not None:
            return items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append the items in order on the current branch, all or nothing."""
        if items:
            await self.client.append_batch(self.session_id, [item_to_message(i) for i in items])

    async def pop_item(self) -> dict[str, Any] | None:
        """Remove the latest message and return its (last) item."""
        leaf = (await self.client.leaf(self.session_id))["message"]
        if leaf is None:
            return None
        try:
            await self.client.delete_message(self.session_id, leaf["id"])
        except ArborAPIError as exc:
            if exc.status != 404:  # popped meanwhile by someone else: nothing to return
                raise
            return None
        items = message_to_items(leaf)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        await self.client.clear(self.session_id)
