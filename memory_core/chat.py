"""One assistant turn: prompt + history + tools -> model -> tool loop -> stored messages.

Every step is stored in the tree as it happens, as AI SDK UIMessages: the assistant's
message with its `tool-<name>` parts (state input-available, then output-available or
output-error once the tools ran), then the final answer; so an interrupted turn leaves a
readable path. The converters give providers a valid request from any path (stub results,
orphans dropped), and still read the older split form (`tool-call` parts, `tool` messages).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import busy
from .compaction import truncate_older_messages
from .errors import InvalidInput, NotFound
from .events import USAGE_FIELDS, message_delta, session_updated
from .inputs import parent_choice
from .llm.factory import default_llm
from .messages import Message, new_id
from .versions import Writer

if TYPE_CHECKING:
    from .events import Status
    from .host import SessionHost
    from .tools import Tool

log = logging.getLogger(__name__)
MAX_STEPS = 8  # model calls per turn; a model that keeps calling tools is stopped here
UPSERT_EVERY_SECONDS = 0.25  # streaming writes the growing answer this often
STOP_CHECK_SECONDS = 0.2  # a streaming turn asks the database for a stop request this often


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
    """The step's answer as AI SDK UIMessage parts: its text, then one tool part per call
    (`tool-<name>`, waiting for its output until the tools have run)."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": f"tool-{c.name}", "toolCallId": c.id, "state": "input-available",
               "input": c.arguments} for c in calls]
    return parts


def _run_tools(
    session: SessionHost, tools: dict[str, Tool], calls: list[Any], message: Message
) -> tuple[Message, list[dict[str, Any]]]:
    """Run the calls and store each outcome on its tool part of the assistant `message`
    (state output-available with `output`, or output-error with `errorText`)."""
    outcomes: dict[str, dict[str, Any]] = {}
    events = []
    for c in calls:
        tool = tools.get(c.name)
        problem = getattr(c, "argument_error", None)
        if tool is None:
            content, is_error = f"Error: unknown tool '{c.name}'", True
        elif problem:  # the model sent arguments that are not a JSON object
            content, is_error = f"Error: {problem}", True
        else:
            # The model's write, carried by this message, on the branch it ends (the
            # door's key or user id kept: whose turn it was).
            door = session.context.writer
            with session.context.acting(Writer("model", door.actor_id, message.id,
                                               message.id)):
                result = tool.call(c.arguments)
            content, is_error = result.content, result.is_error
        outcomes[str(c.id)] = ({"state": "output-error", "errorText": content} if is_error
                               else {"state": "output-available", "output": content})
        events.append({"type": "tool_result", "id": c.id, "name": c.name, "result": content,
                       "is_error": is_error})
    parts = [{**p, **outcomes[str(p.get("toolCallId"))]}
             if str(p.get("toolCallId")) in outcomes and p.get("state") == "input-available"
             else p for p in message.parts]
    stored = session.upsert_message({"id": message.id, "role": "assistant", "parts": parts,
                                     "metadata": message.metadata}, message.parent_id)
    return stored, events


@dataclass(frozen=True, slots=True)
class Ask:
    """What starts a turn: a user message (`content`, under `parent_id`, else the latest
    leaf, or as a new root), or `regenerate`: a new answer beside that assistant message,
    made from the path up to its parent."""

    content: str | None = None
    parent_id: str | None = None
    root: bool = False
    regenerate: str | None = None


def _check(content: Any) -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content must be a non-empty string", field="content")
    return content


def _regenerating(session: SessionHost, message_id: Any) -> tuple[str, int]:
    """(the parent to answer under, the new answer's number among that parent's
    assistant answers). Raises NotFound, InvalidInput."""
    message = session.get_message(message_id)
    if message is None:
        raise NotFound(f"message {message_id} not found in session {session.id}")
    if message.role != "assistant":
        raise InvalidInput(f"message {message_id} is a {message.role} message: only an "
                           "assistant answer can be regenerated")
    if message.parent_id is None:
        raise InvalidInput(f"message {message_id} has no parent: there is nothing to answer")
    answers = [m for m in session.get_branches(message.parent_id) if m.role == "assistant"]
    return message.parent_id, len(answers) + 1


def _model_options(llm: Any, variant: int) -> dict[str, Any]:
    # Only a model that says it numbers its answers (the offline demo) is told which
    # answer under this parent it is writing; real clients take no extra argument.
    if variant > 1 and getattr(llm, "numbered_variants", False):
        return {"variant": variant}
    return {}


def start(session: SessionHost, ask: Ask, *, stream: bool) -> Any:
    """The turn `ask` starts: its events (stream=True), else its final message. Either
    way the input is checked and the session claimed (busy.py) before this returns: a
    second turn meets Conflict here, before anything is stored."""
    if not stream:
        return run_turn(session, ask)
    again = _checked(session, ask)
    return ClaimedTurn(session, busy.claim(session, "thinking"), ask, again)


def run_turn(session: SessionHost, ask: Ask) -> Message:
    """A whole turn without streaming; returns the stored final assistant message."""
    final: Message | None = None
    for event in stream_turn(session, ask, stream=False):
        if event["type"] == "done":
            final = event["message"]
    assert final is not None
    return final


def _checked(session: SessionHost, ask: Ask) -> tuple[str, int] | None:
    """Raises InvalidInput, NotFound; for a regeneration, its (parent, variant). The one
    check of a turn's input, for every door, before the session is claimed: a refused
    turn stores and announces nothing."""
    if ask.regenerate is not None:
        return _regenerating(session, ask.regenerate)
    _check(ask.content)
    parent = parent_choice(ask.parent_id, ask.root)
    if parent is not None and session.get_message(parent) is None:
        raise NotFound(f"parent message {parent} not found in session {session.id}")
    return None


def stream_turn(session: SessionHost, ask: Ask, *, stream: bool = True
                ) -> Iterator[dict[str, Any]]:
    """Events: text_delta, tool_call, tool_result, then done with the stored message.

    The session is claimed (busy.py; Conflict when a turn runs) when the first event is
    asked for; its status is "thinking" while the turn runs, then "idle", or "error"
    when the turn fails. A stop requested meanwhile (Session.request_stop) ends it early:
    see _stream_step."""
    again = _checked(session, ask)
    turn_id = busy.claim(session, "thinking")
    yield from _claimed_turn(session, ask, again, turn_id, stream=stream)


def _claimed_turn(session: SessionHost, ask: Ask, again: tuple[str, int] | None,
                  turn_id: str, *, stream: bool) -> Generator[dict[str, Any], None, None]:
    """The turn's events, under the claim turn_id, which it gives back when it ends."""
    session.in_turn = True
    status: Status | None = "error"
    try:
        for event in _turn(session, ask, again, turn_id, stream=stream):
            if event["type"] == "done":  # idle before the last event: callers may stop here
                _end_turn(session, turn_id, "idle")
                status = None
            yield event
    except GeneratorExit:  # the caller stopped listening: the turn just ends
        status = "idle" if status is not None else None
        raise
    finally:
        if status is not None:
            _end_turn(session, turn_id, status)


class ClaimedTurn(Iterator[dict[str, Any]]):
    """A streaming turn whose session is already claimed: its events. Closed (or
    dropped) before its first event, it gives the claim back, announcing "idle"."""

    def __init__(self, session: SessionHost, turn_id: str, ask: Ask,
                 again: tuple[str, int] | None) -> None:
        self._session, self._turn_id = session, turn_id
        self._events = _claimed_turn(session, ask, again, turn_id, stream=True)
        self._started = False

    def __next__(self) -> dict[str, Any]:
        self._started = True
        return next(self._events)

    def close(self) -> None:
        if not self._started:
            self._started = True
            _end_turn(self._session, self._turn_id, "idle")
        self._events.close()

    def __del__(self) -> None:
        if not self._started:
            self.close()


def _end_turn(session: SessionHost, turn_id: str, status: Status) -> None:
    session.in_turn = False
    session.turn_leaf = None
    try:
        busy.release(session, turn_id, status)
    except Exception:  # the turn's own outcome (or error) is what the caller needs
        log.exception("could not store the status of session %s", session.id)


def _turn(
    session: SessionHost, ask: Ask, again: tuple[str, int] | None, turn_id: str, *,
    stream: bool,
) -> Iterator[dict[str, Any]]:
    """again: (parent, variant) of a regenerated answer; else the user message is stored."""
    llm = resolve_llm(session)
    if again is None:
        user = session.append_message(
            {"role": "user", "parts": [{"type": "text", "text": ask.content}]}, ask.parent_id,
            root=ask.root)
        leaf, variant = user.id, 1
    else:
        leaf, variant = again
    options = _model_options(llm, variant)
    system = session.freeze_system_prompt()
    tools = {t.name: t for t in session.tools()}
    tool_list = list(tools.values())
    totals = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    stop = StopCheck(session, turn_id)
    stored: Message | None = None  # the last assistant message of this turn
    for step in range(MAX_STEPS):
        if stored is not None and stop.now():  # asked to stop while tools ran: no new call
            yield {"type": "done", "message": stored}
            return
        history = _history(session, leaf)
        if stream:
            answer_id, response, stopped = yield from _stream_step(
                session, llm, Call(system, history, tool_list, options), leaf, stop)
            if stopped is not None:
                yield {"type": "done", "message": stopped}
                return
        else:
            response = llm.complete(system=system, history=history, tools=tool_list, **options)
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
        session.turn_leaf = stored.id  # session_search's scope=path: this branch
        stored, events = _run_tools(session, tools, calls, stored)
        yield from events
        leaf = stored.id


def session_usage(session: SessionHost, usage: Any) -> None:
    with session.storage.transaction():
        info = session.storage.add_usage(
            session.agent_id, session.id, input_tokens=int(usage.input_tokens),
            output_tokens=int(usage.output_tokens), cost=float(usage.cost))
        session.emit(session_updated(info, USAGE_FIELDS))


class StopCheck:
    """Whether a stop was requested (Session.request_stop), asked of the database at most
    every STOP_CHECK_SECONDS (a monotonic-clock throttle, not once per chunk)."""

    def __init__(self, session: SessionHost, turn_id: str | None = None) -> None:
        self.session = session
        self.next_at = time.monotonic() + STOP_CHECK_SECONDS
        self.heartbeat = busy.Heartbeat(session, turn_id)  # the turn is alive: it looks

    def due(self) -> bool:
        if time.monotonic() < self.next_at:
            return False
        return self.now()

    def now(self) -> bool:
        self.next_at = time.monotonic() + STOP_CHECK_SECONDS
        self.heartbeat.beat()
        return self.session.storage.stop_requested(self.session.id)


@dataclass(frozen=True, slots=True)
class Call:
    """One model call's input."""

    system: str
    history: list[Message]
    tools: list[Tool]
    options: dict[str, Any]


def _stream_step(
    session: SessionHost, llm: Any, call: Call, parent_id: str, stop: StopCheck,
) -> Generator[dict[str, Any], None, tuple[str, Any, Message | None]]:
    """Stream one model call, upserting the growing assistant message. Returns (the
    message's id, the model's response, None); or, when a stop was requested, (id, None,
    the partial answer stored with metadata.interrupted)."""
    message_id = new_id()
    text = ""
    last_write = 0.0
    response = None
    events = llm.stream(system=call.system, history=call.history, tools=call.tools,
                        **call.options)
    try:
        for event in events:
            if event.type == "text_delta" and event.text:
                text += event.text
                session.emit(message_delta(message_id, parent_id, event.text))
                yield {"type": "text_delta", "text": event.text, "message_id": message_id}
                if time.monotonic() - last_write >= UPSERT_EVERY_SECONDS:
                    session.upsert_message(
                        {"id": message_id, "role": "assistant",
                         "parts": [{"type": "text", "text": text}],
                         "metadata": {"streaming": True}}, parent_id)
                    last_write = time.monotonic()
            elif event.type == "done":
                response = event.response
            if response is None and stop.due():
                return message_id, None, _keep_partial(session, message_id, text, parent_id,
                                                       {"stopped": True})
    except Exception as exc:
        if text:  # keep what arrived, marked as cut off, then let the caller know
            _keep_partial(session, message_id, text, parent_id, {"error": str(exc)[:500]})
        raise
    finally:
        close = getattr(events, "close", None)
        if close is not None:  # a stopped stream releases its connection now
            close()
    if response is None:
        raise InvalidInput("the model's stream ended without a final response")
    return message_id, response, None


def _keep_partial(session: SessionHost, message_id: str, text: str, parent_id: str,
                  why: dict[str, Any]) -> Message:
    parts = [{"type": "text", "text": text}] if text else []
    return session.upsert_message(
        {"id": message_id, "role": "assistant", "parts": parts,
         "metadata": {"interrupted": True, **why}}, parent_id)
