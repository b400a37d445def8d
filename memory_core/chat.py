"""One assistant turn: prompt + history + tools -> model -> tool loop -> stored messages.

Every step is stored in the tree as it happens (the assistant's tool-call message, the
tool results, the final answer), so an interrupted turn leaves a readable path; the
converters give providers a valid request from any path (stub results, orphans dropped).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from .compaction import truncate_older_messages
from .errors import InvalidInput
from .llm.factory import default_llm
from .messages import Message, new_id

if TYPE_CHECKING:
    from .events import Status
    from .host import SessionHost
    from .tools import Tool

log = logging.getLogger(__name__)
MAX_STEPS = 8  # model calls per turn; a model that keeps calling tools is stopped here
UPSERT_EVERY_SECONDS = 0.25  # streaming writes the growing answer this often


def resolve_llm(session: SessionHost) -> Any:
    if session.config.llm is None:
        session.config.llm = default_llm()
    return session.config.llm


def _history(session: SessionHost, leaf_id: str) -> list[Message]:
    history = session.get_history(leaf_id)
    return truncate_older_messages(history) if session.config.micro_compaction else history


def _usage_dict(usage: Any, model: str) -> dict[str, Any]:
    return {"input_tokens": int(usage.input_tokens), "output_tokens": int(usage.output_tokens),
            "cost": float(usage.cost), "model": model}


def _assistant_parts(text: str, calls: list[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "tool-call", "toolCallId": c.id, "toolName": c.name, "input": c.arguments}
              for c in calls]
    return parts


def _run_tools(
    session: SessionHost, tools: dict[str, Tool], calls: list[Any], parent_id: str
) -> tuple[Message, list[dict[str, Any]]]:
    parts, events = [], []
    for c in calls:
        tool = tools.get(c.name)
        problem = getattr(c, "argument_error", None)
        if tool is None:
            content, is_error = f"Error: unknown tool '{c.name}'", True
        elif problem:  # the model sent arguments that are not a JSON object
            content, is_error = f"Error: {problem}", True
        else:
            result = tool.call(c.arguments)
            content, is_error = result.content, result.is_error
        parts.append({"type": "tool-result", "toolCallId": c.id, "toolName": c.name,
                      "output": content, "isError": is_error})
        events.append({"type": "tool_result", "id": c.id, "name": c.name, "result": content,
                       "is_error": is_error})
    stored = session.append_message({"role": "tool", "parts": parts}, parent_id)
    return stored, events


def _check(content: Any) -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content must be a non-empty string")
    return content


def run_turn(session: SessionHost, content: str, parent_id: str | None = None) -> Message:
    """A whole turn without streaming; returns the stored final assistant message."""
    final: Message | None = None
    for event in stream_turn(session, content, parent_id, stream=False):
        if event["type"] == "done":
            final = event["message"]
    assert final is not None
    return final


def stream_turn(
    session: SessionHost, content: str, parent_id: str | None = None, *, stream: bool = True
) -> Iterator[dict[str, Any]]:
    """Events: text_delta, tool_call, tool_result, then done with the stored message.

    The session's status is "thinking" while the turn runs, then "idle", or "error"
    when the turn fails."""
    _check(content)
    session.set_status("thinking")
    session.in_turn = True
    status: Status | None = "error"
    try:
        for event in _turn(session, content, parent_id, stream=stream):
            if event["type"] == "done":  # idle before the last event: callers may stop here
                _end_turn(session, "idle")
                status = None
            yield event
    except GeneratorExit:  # the caller stopped listening: the turn just ends
        status = "idle" if status is not None else None
        raise
    finally:
        if status is not None:
            _end_turn(session, status)


def _end_turn(session: SessionHost, status: Status) -> None:
    session.in_turn = False
    try:
        session.set_status(status)
    except Exception:  # the turn's own outcome (or error) is what the caller needs
        log.exception("could not store the status of session %s", session.id)


def _turn(
    session: SessionHost, content: str, parent_id: str | None, *, stream: bool
) -> Iterator[dict[str, Any]]:
    llm = resolve_llm(session)
    user = session.append_message(
        {"role": "user", "parts": [{"type": "text", "text": content}]}, parent_id)
    system = session.freeze_system_prompt()
    tools = {t.name: t for t in session.tools()}
    tool_list = list(tools.values())
    leaf = user.id
    totals = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    for step in range(MAX_STEPS):
        history = _history(session, leaf)
        if stream:
            answer_id, response = yield from _stream_step(
                session, llm, system, history, tool_list, leaf)
        else:
            response = llm.complete(system=system, history=history, tools=tool_list)
            answer_id = new_id()
        for key in ("input_tokens", "output_tokens"):
            totals[key] += int(getattr(response.usage, key))
        totals["cost"] += float(response.usage.cost)
        usage = _usage_dict(response.usage, response.model)
        calls = list(response.tool_calls) if step < MAX_STEPS - 1 else []
        metadata: dict[str, Any] = {"usage": usage, "model": response.model}
        if not calls:
            metadata["turn_usage"] = {**totals, "model": response.model}
        message = {"id": answer_id, "role": "assistant",
                   "parts": _assistant_parts(response.text, calls), "metadata": metadata}
        stored = session.upsert_message(message, leaf)
        session_usage(session, response.usage)
        if not calls:
            yield {"type": "done", "message": stored}
            return
        for c in calls:
            yield {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        result_message, events = _run_tools(session, tools, calls, stored.id)
        yield from events
        leaf = result_message.id


def session_usage(session: SessionHost, usage: Any) -> None:
    with session.storage.transaction():
        info = session.storage.add_usage(
            session.agent_id, session.id, input_tokens=int(usage.input_tokens),
            output_tokens=int(usage.output_tokens), cost=float(usage.cost))
        session.emit("session.updated", {"input_tokens": info.input_tokens,
                                         "output_tokens": info.output_tokens,
                                         "estimated_cost": info.estimated_cost})


def _stream_step(
    session: SessionHost, llm: Any, system: str, history: list[Message], tools: list[Tool],
    parent_id: str,
) -> Generator[dict[str, Any], None, tuple[str, Any]]:
    """Stream one model call, upserting the growing assistant message.
    Returns (the message's id, the model's response)."""
    message_id = new_id()
    text = ""
    last_write = 0.0
    response = None
    try:
        for event in llm.stream(system=system, history=history, tools=tools):
            if event.type == "text_delta" and event.text:
                text += event.text
                session.emit("message.delta", {"message_id": message_id, "parent_id": parent_id,
                                               "text": event.text})
                yield {"type": "text_delta", "text": event.text, "message_id": message_id}
                if time.monotonic() - last_write >= UPSERT_EVERY_SECONDS:
                    session.upsert_message(
                        {"id": message_id, "role": "assistant",
                         "parts": [{"type": "text", "text": text}],
                         "metadata": {"streaming": True}}, parent_id)
                    last_write = time.monotonic()
            elif event.type == "done":
                response = event.response
    except Exception as exc:
        if text:  # keep what arrived, marked as cut off, then let the caller know
            session.upsert_message(
                {"id": message_id, "role": "assistant", "parts": [{"type": "text", "text": text}],
                 "metadata": {"interrupted": True, "error": str(exc)[:500]}}, parent_id)
        raise
    if response is None:
        raise InvalidInput("the model's stream ended without a final response")
    return message_id, response
