"""The MCP server: one low-level `mcp` Server whose handlers read the caller's scope.

The low-level server (not MCPServer's decorators) because the tool list is per caller
and per session: the memory tools and their label enums follow the session's blocks.
Every handler does its ORM work in a worker thread, as the JSON API does
(`sync_to_async`); a tool never raises to the client (errors are `isError` results), a
resource that does not exist (or is another tenant's) is an INVALID_PARAMS error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from memory_core import ArborError, NotFound
from memory_core.tools import Tool, ToolResult

from .scope import McpScope
from .tools import all_tools

log = logging.getLogger(__name__)
T = TypeVar("T")
ScopeOf = Callable[[ServerRequestContext[Any, Any]], McpScope]

PROMPT_TEMPLATE = "arbor://sessions/{session_id}/prompt"
BLOCK_TEMPLATE = "arbor://sessions/{session_id}/blocks/{label}"
PREFIX = "arbor://sessions/"
INSTRUCTIONS = (
    "Arbor: an agent's persistent conversation memory. With a session in scope, its "
    "memory tools (set_context, load_context, unload_context, search_context, "
    "session_search) act on it; list_sessions, read_history, append_message, search, "
    "fork_session and block_history act on any session of the agent. Resources: each "
    "session's frozen system prompt and its context blocks.")


def prompt_uri(session_id: str) -> str:
    return PROMPT_TEMPLATE.format(session_id=quote(session_id, safe=""))


def block_uri(session_id: str, label: str) -> str:
    return BLOCK_TEMPLATE.format(session_id=quote(session_id, safe=""),
                                 label=quote(label, safe=""))


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run sync ORM work in Django's thread, closing stale connections around it as a
    request would (a stdio server lives long; daphne's MCP calls skip Django's signals)."""
    def work() -> T:
        close_old_connections()
        try:
            return fn(*args)
        finally:
            close_old_connections()
    return await sync_to_async(work, thread_sensitive=True)()


def call_tool(scope: McpScope, name: str, arguments: Any) -> ToolResult:
    """Find the tool in the caller's scope and run it; never raises."""
    try:
        tools = {t.name: t for t in all_tools(scope)}
    except ArborError as exc:
        return ToolResult(f"Error: {exc.detail}", True)
    tool = tools.get(name)
    if tool is None:
        return ToolResult(f"Error: no tool {name!r} here (there are: {', '.join(tools)})", True)
    return tool.call({} if arguments is None else arguments)


def _describe(tool: Tool) -> types.Tool:
    return types.Tool(name=tool.name, description=tool.description,
                      input_schema=tool.input_schema)


def _resources(scope: McpScope) -> list[types.Resource]:
    if scope.session_id is None:
        return []
    session = scope.session()
    found = [types.Resource(uri=prompt_uri(session.id), name="system prompt",
                            description="The session's frozen system prompt, as the model "
                            "sees it (identical until a refresh).", mime_type="text/plain")]
    for block in session.get_context_blocks():
        found.append(types.Resource(
            uri=block_uri(session.id, block.label), name=f"block {block.label}",
            description=block.description or f"The context block {block.label}.",
            mime_type="text/plain"))
    return found


def read(scope: McpScope, uri: str) -> types.TextResourceContents:
    """A resource's text; raises ArborError (NotFound) for a missing one."""
    parts = uri[len(PREFIX):].split("/") if uri.startswith(PREFIX) else []
    if len(parts) == 2 and parts[1] == "prompt":
        session = scope.session(unquote(parts[0]))
        session.freeze_system_prompt()
        text, frozen_at = session.context.frozen_prompt()
        meta = {"session_id": session.id,
                "frozen_at": frozen_at.isoformat() if frozen_at else None}
        return types.TextResourceContents(uri=uri, text=text, mime_type="text/plain",
                                          _meta=meta)
    if len(parts) == 3 and parts[1] == "blocks":
        session = scope.session(unquote(parts[0]))
        block = session.get_context_block(unquote(parts[2])).to_dict()
        text = block.pop("content")
        return types.TextResourceContents(uri=uri, text=text, mime_type="text/plain",
                                          _meta={"session_id": session.id, **block})
    raise NotFound(f"no resource {uri} (the forms are {PROMPT_TEMPLATE} and {BLOCK_TEMPLATE})")


def build_server(scope_of: ScopeOf, *, name: str = "arbor") -> Server[Any]:
    """The server; `scope_of(ctx)` says whom each request acts for."""

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        scope = scope_of(ctx)
        try:
            tools = await in_thread(all_tools, scope)
        except ArborError as exc:  # the session in scope went away
            raise MCPError(types.INVALID_PARAMS, exc.detail) from None
        return types.ListToolsResult(tools=[_describe(t) for t in tools])

    async def on_call_tool(ctx: ServerRequestContext[Any, Any],
                           params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await in_thread(call_tool, scope_of(ctx), params.name, params.arguments)
        except Exception:  # never an exception to the client
            log.exception("MCP tool %s failed", params.name)
            result = ToolResult(f"Error: {params.name} failed unexpectedly", True)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)],
            is_error=result.is_error)

    async def list_resources(ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        try:
            found = await in_thread(_resources, scope_of(ctx))
        except ArborError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.detail) from None
        return types.ListResourcesResult(resources=found)

    async def list_templates(ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=PROMPT_TEMPLATE, name="system prompt",
                                   description="A session's frozen system prompt.",
                                   mime_type="text/plain"),
            types.ResourceTemplate(uri_template=BLOCK_TEMPLATE, name="context block",
                                   description="One context block of a session.",
                                   mime_type="text/plain"),
        ])

    async def read_resource(ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            contents = await in_thread(read, scope_of(ctx), uri)
        except ArborError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.detail, {"uri": uri}) from None
        except Exception:
            log.exception("MCP resource %s failed", uri)
            raise MCPError(types.INTERNAL_ERROR, f"reading {uri} failed unexpectedly") from None
        return types.ReadResourceResult(contents=[contents])

    return Server(
        name, version="1", instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=on_call_tool,
        on_list_resources=list_resources, on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
