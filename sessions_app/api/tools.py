"""The memory tools a session's blocks enable: their definitions, and calling one."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router

from memory_core import NotFound

from ..access import session_for
from .context_schemas import ToolCallIn, ToolCallOut, ToolList
from .schemas import errors

router = Router(tags=["tools"])
S = "/sessions/{aid:session_id}"


@router.get(S + "/tools", response={200: ToolList, **errors(404, 422)})
def list_tools(
    request: HttpRequest, session_id: str,
    format: Literal["openai", "anthropic", "mcp"] = Query("openai"),
) -> Any:
    """Tool definitions in OpenAI, Anthropic or MCP format, ready to send to a model."""
    return {"items": session_for(request.auth, session_id).tools(format)}


@router.post(S + "/tools/{aid:name}", response={200: ToolCallOut, **errors(404, 413, 422)})
def call_tool(request: HttpRequest, session_id: str, name: str, body: ToolCallIn) -> Any:
    """Run a tool as the model would. Bad arguments are a result with is_error set (what
    the model would read), not an HTTP error."""
    session = session_for(request.auth, session_id)
    tools = {t.name: t for t in session.tools()}
    tool = tools.get(name)
    if tool is None:
        raise NotFound(f"no tool {name!r} in this session (it has: {', '.join(tools) or 'none'})")
    if body.message_id is not None and session.get_message(body.message_id) is None:
        raise NotFound(f"message {body.message_id} not found")
    # A memory tool call is the model's write, whoever relays it (the key kept).
    with session.acting("model", session.context.writer.actor_id,
                        message_id=body.message_id, leaf_id=body.message_id):
        result = tool.call(body.arguments)
    return {"result": result.content, "is_error": result.is_error}
