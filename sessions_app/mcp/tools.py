"""The MCP server's tools: the session's memory tools (SPEC §5, from the engine) and the
agent-wide ones (sessions, history, appends, search, forks), all as engine `Tool`s, so
every call is checked against its JSON Schema and every failure is an error result.

Each run is sync ORM work: the server calls it in a worker thread (sync_to_async).
Results are JSON text with ids and ISO dates (the memory tools keep their own text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from memory_core.limits import MAX_PATH_PAGE, ROLES
from memory_core.search import plain_text
from memory_core.tools import Tool
from memory_core.versions import MAX_PAGE as MAX_VERSION_PAGE

from .. import models
from ..api.pagination import MAX_LIMIT, page
from ..api.render import dumps
from ..api.schemas import SessionOut
from .scope import McpScope

MAX_SEARCH_HITS = 50
DEFAULT_HISTORY_PAGE = 50

_ID = {"type": "string", "description": "An id, as another tool returned it."}


def _json(data: Any) -> str:
    return dumps(data).decode()


def _schema(properties: Mapping[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": required,
            "additionalProperties": False}


def _session_arg(scope: McpScope) -> dict[str, Any]:
    default = (f" Default: the session in scope ({scope.session_id})."
               if scope.session_id else "")
    return {"session_id": {**_ID, "description": "The session's id." + default}}


def _agent_arg(scope: McpScope) -> dict[str, Any]:
    if scope.fixed_agent:
        return {}
    return {"agent_id": {**_ID, "description": "Which of your agents (needed when your key "
                                             "reaches several)."}}


def _session_required(scope: McpScope) -> list[str]:
    return [] if scope.session_id else ["session_id"]


def session_dict(row: Any) -> dict[str, Any]:
    """A session as the JSON API shows it (SessionOut), dates as ISO strings."""
    data: dict[str, Any] = orjson.loads(dumps(SessionOut.model_validate(row).model_dump()))
    return data


def agent_tools(scope: McpScope) -> list[Tool]:
    """The tools that act on any session of the scope's agent."""
    return [_list_sessions(scope), _read_history(scope), _append_message(scope),
            _search(scope), _fork_session(scope), _block_history(scope)]


def _list_sessions(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        agent = scope.agent(args.get("agent_id"))
        rows = models.Session.objects.filter(agent_id=agent.id)
        items, next_cursor = page(rows, field="updated_at", cursor=args.get("cursor"),
                                  limit=args.get("limit") or 20, newest_first=True)
        return _json({"agent_id": agent.id, "items": [session_dict(r) for r in items],
                      "next_cursor": next_cursor})

    return Tool("list_sessions", (
        "List the agent's sessions, most recently updated first, each with its id, name, "
        "message_count, created_at and updated_at. Pass next_cursor back as cursor for "
        "the next page."), _schema({
            **_agent_arg(scope),
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": "How many sessions (default 20)."},
            "cursor": {"type": "string", "description": "next_cursor of the previous page."},
        }, []), run)


def _read_history(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        session = scope.session(args.get("session_id"))
        got = session.get_history_page(
            args.get("leaf_id"), limit=args.get("limit") or DEFAULT_HISTORY_PAGE,
            before_id=args.get("before_id"), raw=bool(args.get("raw")))
        data = got.to_dict()
        data["session_id"] = session.id
        data["next_before_id"] = got.messages[0].id if got.has_more and got.messages else None
        return _json(data)

    return Tool("read_history", (
        "Read one branch of a session: the path from its root to leaf_id (default: the "
        "latest message), oldest first, the last `limit` messages. has_more says older "
        "ones exist: pass next_before_id as before_id for the page before. Each message "
        "has its id, parent_id, role, parts and created_at; `siblings` tells where it "
        "stands among its branches. A summary (compaction) stands in for the messages it "
        "summarises unless raw."), _schema({
            **_session_arg(scope),
            "leaf_id": {**_ID, "description": "The message the branch ends at."},
            "before_id": {**_ID, "description": "Read the messages before this one."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PATH_PAGE,
                      "description": f"How many messages (default {DEFAULT_HISTORY_PAGE})."},
            "raw": {"type": "boolean", "description": "The stored messages, no summaries."},
        }, _session_required(scope)), run)


def _append_message(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        session = scope.session(args.get("session_id"))
        message = {"role": args["role"], "parts": [{"type": "text", "text": args["content"]}]}
        stored = session.append_message(message, parent_id=args.get("parent_id"))
        return _json({"session_id": session.id, "message": stored.to_dict()})

    return Tool("append_message", (
        "Store a text message in a session, under parent_id (default: the latest message, "
        "so it continues the current branch; another parent starts a branch). Returns the "
        "stored message with its id and created_at."), _schema({
            **_session_arg(scope),
            "role": {"type": "string", "enum": list(ROLES), "description": "Who speaks."},
            "content": {"type": "string", "description": "The message text."},
            "parent_id": {**_ID, "description": "The message to answer."},
        }, ["role", "content", *_session_required(scope)]), run)


def _search(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        where = args.get("scope") or "agent"
        if where == "agent" and args.get("leaf_id") is None:
            manager = scope.manager(args.get("agent_id"))
            hits = manager.search(args["query"], args.get("limit") or 10, full=False)
            agent_id = manager.agent_id
        else:  # a session's branch or the whole session (or the agent, seen from it)
            session = scope.session(args.get("session_id"))
            hits = session.search(args["query"], args.get("limit") or 10, full=False,
                                  scope=where, leaf_id=args.get("leaf_id"))
            agent_id = session.agent_id
        items = [{**hit.to_dict(), "snippet": plain_text(hit.snippet)} for hit in hits]
        return _json({"agent_id": agent_id, "items": items, "semantic": hits.semantic})

    return Tool("search", (
        "Search the messages of all the agent's sessions (this one included) by their "
        "words and their meaning, best first; or, with scope, one session or one branch "
        "of it. Each hit has the message id, session_id, role, created_at, an excerpt "
        "around the match (its start when found by meaning alone: matched) and the "
        "content (cut when long)."), _schema({
            **_agent_arg(scope),
            "query": {"type": "string", "description": "Words or a question."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_HITS,
                      "description": "How many hits (default 10)."},
            "scope": {"type": "string", "enum": ["agent", "session", "path"],
                      "description": "agent (default): every session; session: one session "
                      "(session_id, or the one in scope); path: its branch to leaf_id "
                      "(default: its latest leaf)."},
            "session_id": {**_ID, "description": "The session, for scope session or path."},
            "leaf_id": {**_ID, "description": "The branch's last message (scope path)."},
        }, ["query"]), run)


def _fork_session(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        session = scope.session(args.get("session_id"))
        manager = scope.manager(session.agent_id)
        info = manager.fork(session.id, args["message_id"], args.get("name"))
        return _json({"session": info.to_dict()})

    return Tool("fork_session", (
        "Copy a session's branch, from its root up to message_id, into a new session "
        "(its parent_session_id is the source) with the same blocks. Returns the new "
        "session with its id and dates."), _schema({
            **_session_arg(scope),
            "message_id": {**_ID, "description": "The last message to copy."},
            "name": {"type": "string", "description": "The new session's name."},
        }, ["message_id", *_session_required(scope)]), run)




def _block_history(scope: McpScope) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        session = scope.session(args.get("session_id"))
        label = args["label"]
        if args.get("number") is not None:
            version = session.block_version(label, args["number"]).to_dict()
            version["diff"] = session.block_diff(label, args["number"])
            return _json({"session_id": session.id, "version": version})
        got = session.block_versions(label, limit=args.get("limit") or 20,
                                     before=args.get("before"))
        return _json({"session_id": session.id, **got.to_dict()})

    return Tool("block_history", (
        "The versions of a context block, newest first: each write's value, who made it "
        "(actor: model, api, ui, mcp, import or system), the message that carried it and "
        "the leaf the session stood on. Pass next_cursor as `before` for older ones; give "
        "`number` for one version with its diff against the one before."), _schema({
            **_session_arg(scope),
            "label": {"type": "string", "description": "The block's label."},
            "number": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1,
                       "description": "One version's number."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_VERSION_PAGE,
                      "description": "How many versions (default 20)."},
            "before": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1,
                       "description": "next_cursor of the previous page."},
        }, ["label", *_session_required(scope)]), run)


def all_tools(scope: McpScope) -> list[Tool]:
    """The memory tools of the session in scope (if any), then the agent-wide ones."""
    memory = scope.session().tools() if scope.session_id else []
    return [*memory, *agent_tools(scope)]
