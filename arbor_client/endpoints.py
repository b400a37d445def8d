"""The API's operations, one method per endpoint: its path and body, nothing of HTTP.

`ArborClient` and `AsyncArborClient` (client.py) inherit them and supply `_call`, so the
sync and async clients cannot drift apart.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

API_PREFIX = "/api/v1"


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _clean(params: dict[str, Any] | None) -> dict[str, Any] | None:
    return {k: v for k, v in params.items() if v is not None} if params else None


class _Endpoints:
    """The API's operations; `_call` does the HTTP (a value, or an awaitable of one)."""

    _base: str
    _headers: dict[str, str]

    def _connect(self, base_url: str, api_key: str) -> None:
        self._base = base_url.rstrip("/") + API_PREFIX
        self._headers = {"Authorization": f"Bearer {api_key}"}

    def _request_args(self, path: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return {"url": self._base + path, "params": _clean(params), "headers": self._headers}

    def _call(self, method: str, path: str, *, json: Any = None,
              params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    # --------------------------------------------------------------- agents
    def create_agent(self, name: str, context: list[dict[str, Any]] | None = None) -> Any:
        return self._call("POST", "/agents", json={"name": name, "context": context or []})

    def list_agents(self, *, limit: int | None = None, cursor: str | None = None) -> Any:
        return self._call("GET", "/agents", params={"limit": limit, "cursor": cursor})

    def get_agent(self, agent_id: str) -> Any:
        return self._call("GET", f"/agents/{_seg(agent_id)}")

    def update_agent(self, agent_id: str, *, name: str | None = None,
                     context: list[dict[str, Any]] | None = None) -> Any:
        return self._call("PATCH", f"/agents/{_seg(agent_id)}",
                          json=_drop_none({"name": name, "context": context}))

    def delete_agent(self, agent_id: str) -> Any:
        return self._call("DELETE", f"/agents/{_seg(agent_id)}")

    # ------------------------------------------------------------- sessions
    def create_session(self, agent_id: str, name: str | None = None, *,
                       parent_session_id: str | None = None, model: str | None = None,
                       source: str | None = None) -> Any:
        body = _drop_none({"name": name, "parent_session_id": parent_session_id,
                           "model": model, "source": source})
        return self._call("POST", f"/agents/{_seg(agent_id)}/sessions", json=body)

    def list_sessions(self, agent_id: str, *, limit: int | None = None,
                      cursor: str | None = None) -> Any:
        return self._call("GET", f"/agents/{_seg(agent_id)}/sessions",
                          params={"limit": limit, "cursor": cursor})

    def get_session(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}")

    def update_session(self, session_id: str, **fields: Any) -> Any:
        """name=..., end_reason=... (None reopens)."""
        return self._call("PATCH", f"/sessions/{_seg(session_id)}", json=fields)

    def delete_session(self, session_id: str) -> Any:
        return self._call("DELETE", f"/sessions/{_seg(session_id)}")

    def fork(self, session_id: str, message_id: str, name: str | None = None) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/fork",
                          json=_drop_none({"message_id": message_id, "name": name}))

    def add_usage(self, session_id: str, input_tokens: int = 0, output_tokens: int = 0,
                  cost: float = 0.0) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/usage", json={
            "input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost})

    def compact(self, session_id: str) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/compact")

    def compact_and_split(self, session_id: str, summary: str | None = None,
                          name: str | None = None) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/compact-and-split",
                          json=_drop_none({"summary": summary, "name": name}))

    def list_compactions(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/compactions")

    def add_compaction(self, session_id: str, summary: str, from_message_id: str,
                       to_message_id: str) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/compactions", json={
            "summary": summary, "from_message_id": from_message_id,
            "to_message_id": to_message_id})

    def remove_compaction(self, session_id: str, compaction_id: str) -> Any:
        return self._call("DELETE",
                          f"/sessions/{_seg(session_id)}/compactions/{_seg(compaction_id)}")

    # ------------------------------------------------------------- messages
    def append(self, session_id: str, message: dict[str, Any], *, parent_id: str | None = None,
               if_latest: str | None = None) -> Any:
        body = _drop_none({"message": message, "parent_id": parent_id, "if_latest": if_latest})
        return self._call("POST", f"/sessions/{_seg(session_id)}/messages", json=body)

    def append_batch(self, session_id: str, messages: list[dict[str, Any]], *,
                     parent_id: str | None = None, root: bool = False) -> Any:
        """All or nothing, chained; under parent_id, else the latest leaf (root=True: as a
        new root)."""
        return self._call("POST", f"/sessions/{_seg(session_id)}/messages/batch",
                          json=_drop_none({"messages": messages, "parent_id": parent_id,
                                           "root": True if root else None}))

    def get_message(self, session_id: str, message_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/messages/{_seg(message_id)}")

    def update_message(self, session_id: str, message_id: str, message: dict[str, Any]) -> Any:
        return self._call("PUT", f"/sessions/{_seg(session_id)}/messages/{_seg(message_id)}",
                          json={"message": message})

    def delete_message(self, session_id: str, message_id: str) -> Any:
        return self._call("DELETE", f"/sessions/{_seg(session_id)}/messages/{_seg(message_id)}")

    def clear(self, session_id: str) -> Any:
        return self._call("DELETE", f"/sessions/{_seg(session_id)}/messages")

    def branches(self, session_id: str, message_id: str) -> Any:
        return self._call(
            "GET", f"/sessions/{_seg(session_id)}/messages/{_seg(message_id)}/branches")

    def history(self, session_id: str, leaf_id: str | None = None, raw: bool = False, *,
                limit: int | None = None, before_id: str | None = None) -> Any:
        """The whole path; with limit (1-500) or before_id, one page of it (has_more,
        next_before_id: the before_id of the page above, siblings)."""
        return self._call("GET", f"/sessions/{_seg(session_id)}/history",
                          params={"leaf_id": leaf_id, "raw": "true" if raw else None,
                                  "limit": limit, "before_id": before_id})

    def paths(self, session_id: str) -> Any:
        """Every branch at once: `tree` rows and `items` (leaf_id, messages as read)."""
        return self._call("GET", f"/sessions/{_seg(session_id)}/paths")

    def leaf(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/leaf")

    def tree(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/tree")

    # --------------------------------------------------------------- search
    def search(self, session_id: str, q: str, limit: int | None = None, *,
               full: bool = False, scope: str | None = None, leaf: str | None = None) -> Any:
        """Hits carry a snippet; content is cut (truncated: true) unless full=True.
        scope: "session" (default), "path" (the branch to `leaf`, default the latest
        leaf) or "agent". The answer's `semantic` says whether meaning was searched too."""
        return self._call("GET", f"/sessions/{_seg(session_id)}/search",
                          params={"q": q, "limit": limit, "full": "true" if full else None,
                                  "scope": scope, "leaf": leaf})

    def search_agent(self, agent_id: str, q: str, limit: int | None = None, *,
                     full: bool = False) -> Any:
        return self._call("GET", f"/agents/{_seg(agent_id)}/search",
                          params={"q": q, "limit": limit, "full": "true" if full else None})

    def embeddings(self, agent_id: str) -> Any:
        """Search by meaning for the agent: the model, and how many messages wait for a
        vector (`pending`)."""
        return self._call("GET", f"/agents/{_seg(agent_id)}/embeddings")

    # -------------------------------------------------------------- context
    def context(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/context")

    def get_block(self, session_id: str, label: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/context/{_seg(label)}")

    def add_block(self, session_id: str, label: str, **options: Any) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/context",
                          json={"label": label, **options})

    def replace_block(self, session_id: str, label: str, content: str) -> Any:
        return self._call("PUT", f"/sessions/{_seg(session_id)}/context/{_seg(label)}",
                          json={"content": content})

    def append_block(self, session_id: str, label: str, content: str) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/context/{_seg(label)}/append",
                          json={"content": content})

    def remove_block(self, session_id: str, label: str) -> Any:
        return self._call("DELETE", f"/sessions/{_seg(session_id)}/context/{_seg(label)}")

    def get_entry(self, session_id: str, label: str, key: str) -> Any:
        return self._call(
            "GET", f"/sessions/{_seg(session_id)}/context/{_seg(label)}/entries/{_seg(key)}")

    def put_entry(self, session_id: str, label: str, key: str, content: str,
                  description: str | None = None) -> Any:
        return self._call(
            "PUT", f"/sessions/{_seg(session_id)}/context/{_seg(label)}/entries/{_seg(key)}",
            json=_drop_none({"content": content, "description": description}))

    def system_prompt(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/system-prompt")

    def refresh_system_prompt(self, session_id: str) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/system-prompt/refresh")

    def system_prompt_status(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/system-prompt/status")

    # ---------------------------------------------------------- tools, chat
    def tools(self, session_id: str, format: str = "openai") -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/tools", params={"format": format})

    def call_tool(self, session_id: str, name: str, arguments: dict[str, Any]) -> Any:
        return self._call("POST", f"/sessions/{_seg(session_id)}/tools/{_seg(name)}",
                          json={"arguments": arguments})

    def chat(self, session_id: str, content: str, parent_id: str | None = None) -> Any:
        """One assistant turn run by the server; the stored final assistant message."""
        return self._call("POST", f"/sessions/{_seg(session_id)}/chat",
                          json=_drop_none({"content": content, "parent_id": parent_id}))

    # ------------------------------------------------------- export/import
    def export_session(self, session_id: str) -> Any:
        return self._call("GET", f"/sessions/{_seg(session_id)}/export")

    def import_session(self, agent_id: str, document: dict[str, Any]) -> Any:
        return self._call("POST", f"/agents/{_seg(agent_id)}/import", json=document)
