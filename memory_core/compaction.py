"""Non-destructive compaction: summarise a middle range into an overlay (SPEC §7).

The head and a token-budgeted tail stay as they are; the boundaries move so that no tool
call is split from its result and no pending call is summarised away. Nothing stored is
changed: the summary is an overlay applied when history is read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import CompactionError
from .messages import Message, tool_name, tool_part_finished
from .tokens import MESSAGE_OVERHEAD, TokenCounter, estimate_tokens
from .tree import Compaction


class CompactionHost(Protocol):
    """What compaction needs from a session (`Session` satisfies it; importing session.py
    here would be a cycle, since it imports this module)."""

    def get_history(self, leaf_id: str | None = None, raw: bool = False) -> list[Message]: ...

    def get_compactions(self) -> list[Compaction]: ...

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> Compaction: ...


Summarize = Callable[[str], str]
CompactFunction = Callable[[CompactionHost], "Compaction | None"]

PROMPT_HEAD = """You are compacting a conversation so it keeps fitting in a model's context.
Write a summary with exactly these sections:
## Topic / goal
## Key points and decisions
## Current state
## Open items
Keep names, numbers, dates, ids and decisions exactly as written. Do not invent anything."""
PROMPT_UPDATE = """There is already a summary of the earlier part. Update it with the new
messages: keep what still holds, revise what changed, add what is new.

PREVIOUS SUMMARY:
{previous}"""


# --------------------------------------------------------------- tool pairing
def _calls(message: Message) -> tuple[set[str], bool]:
    """Call ids in this message that wait for a result in a later message (split-form
    calls, and AI SDK tool parts still without output), and whether it holds one."""
    ids: set[str] = set()
    for part in message.parts:
        kind = part.get("type")
        if kind == "tool-call":
            ids.add(str(part.get("toolCallId")))
        elif kind != "tool-result" and tool_name(part) is not None:
            # AI SDK form: call and result share one part; no output yet means pending,
            # unless a later message answers the same id.
            if not tool_part_finished(part):
                ids.add(str(part.get("toolCallId")))
    return ids, bool(ids)


def _results(message: Message) -> set[str]:
    """Ids this message answers: split-form results, and finished AI SDK tool parts
    (which answer a pending part of the same id in an earlier message, if any)."""
    out = set()
    for part in message.parts:
        kind = part.get("type")
        if kind == "tool-result" or (kind != "tool-call" and tool_name(part) is not None
                                     and tool_part_finished(part)):
            out.add(str(part.get("toolCallId")))
    return out


def choose_range(
    path: Sequence[Message], *, protect_head: int, tail_token_budget: int,
    min_tail_messages: int, counter: TokenCounter,
) -> tuple[int, int] | None:
    """Indices [start, end] of the middle to summarise, or None when nothing would shrink."""
    n = len(path)
    start = max(protect_head, 0)
    tail_start, used = n, 0
    while tail_start > start:
        cost = counter(path[tail_start - 1].text) + MESSAGE_OVERHEAD
        if n - tail_start >= min_tail_messages and used + cost > tail_token_budget:
            break
        used += cost
        tail_start -= 1
    end = tail_start - 1
    call_at: dict[str, int] = {}
    result_at: dict[str, int] = {}
    for i, message in enumerate(path):
        ids, _ = _calls(message)
        call_at.update({c: i for c in ids})
        result_at.update({r: i for r in _results(message) if r in call_at and r not in result_at})
    # a call never answered (an interrupted turn, a pending AI SDK part) stays in the tail
    pending_at = [i for i, m in enumerate(path) if any(c not in result_at for c in _calls(m)[0])]
    # Move the boundaries until the middle holds whole tool pairs and no pending call:
    # a result whose call stays in the head moves the start past it; a call whose result
    # stays in the tail (or never came) moves the end before it.
    changed = True
    while changed and start <= end:
        changed = False
        for i in range(start, end + 1):
            if any(call_at.get(r, start) < start for r in _results(path[i])):
                start, changed = i + 1, True
                break
            ids, _ = _calls(path[i])
            if i in pending_at or any(result_at.get(c, n) > end for c in ids):
                end, changed = i - 1, True
                break
    if end - start + 1 < 2:
        return None
    return start, end


# ------------------------------------------------------------------- prompt
def render_messages(messages: Sequence[Message]) -> str:
    lines = []
    for m in messages:
        text = " ".join(m.text.split())
        if text:
            lines.append(f"[{m.role}] {text}")
    return "\n".join(lines)


def build_prompt(messages: Sequence[Message], previous: str | None) -> str:
    parts = [PROMPT_HEAD]
    if previous:
        parts.append(PROMPT_UPDATE.format(previous=previous))
    parts.append("MESSAGES:\n" + render_messages(messages))
    return "\n\n".join(parts)


# ---------------------------------------------------------------- function
@dataclass(frozen=True)
class CompactOptions:
    summarize: Summarize
    protect_head: int = 3
    tail_token_budget: int = 20_000
    min_tail_messages: int = 2
    token_counter: TokenCounter | None = None


def _latest_overlay(path: Sequence[Message], overlays: Sequence[Compaction]) -> tuple[int, int, Compaction] | None:
    position = {m.id: i for i, m in enumerate(path)}
    for overlay in reversed(overlays):  # newest first
        a, b = position.get(overlay.from_message_id), position.get(overlay.to_message_id)
        if a is not None and b is not None and a <= b:
            return a, b, overlay
    return None


@dataclass(frozen=True)
class BuiltinCompact:
    """The compact function `create_compact_function` makes: callable like any other, with
    its options readable, so the engine can reuse its summariser (compact_and_split) and
    ask it to be strict (automatic compaction)."""

    options: CompactOptions

    def __call__(self, session: CompactionHost) -> Compaction | None:
        return run_compaction(session, self.options)


def create_compact_function(
    summarize: Summarize, protect_head: int = 3, tail_token_budget: int = 20_000,
    min_tail_messages: int = 2, token_counter: TokenCounter | None = None,
) -> CompactFunction:
    """A compact function for `on_compaction`: `fn(session) -> Compaction | None`.

    The previous summary is read from that session's own stored overlays each time, so
    nothing leaks between sessions that share the function.
    """
    return BuiltinCompact(CompactOptions(summarize, protect_head, tail_token_budget,
                                         min_tail_messages, token_counter))


def run_compaction(
    session: CompactionHost, options: CompactOptions, *, strict: bool = False,
) -> Compaction | None:
    """Summarise the middle of the path; None when there is nothing to summarise.

    A summary that would not shrink the history is also None, unless `strict`: then it
    raises CompactionError, so the automatic check can tell a wasted model call (wait a
    cooldown) from "nothing to summarise yet" (try again on the next append).
    """
    counter = options.token_counter or estimate_tokens
    path = session.get_history(raw=True)
    chosen = choose_range(path, protect_head=options.protect_head,
                          tail_token_budget=options.tail_token_budget,
                          min_tail_messages=options.min_tail_messages, counter=counter)
    if chosen is None:
        return None
    start, end = chosen
    previous = _latest_overlay(path, session.get_compactions())
    previous_summary = None
    new_from = start
    middle = list(path[start:end + 1])
    replaced = sum(counter(m.text) + MESSAGE_OVERHEAD for m in middle)
    if previous is not None and previous[0] <= end:
        a, b, overlay = previous
        if b >= end:
            return None  # already summarised up to here: nothing would shrink
        # One overlay from the earliest start: the old summary plus what it lacks.
        new_from = min(a, start)
        middle = list(path[new_from:a]) + list(path[b + 1:end + 1])
        previous_summary = overlay.summary
        replaced = counter(overlay.summary) + MESSAGE_OVERHEAD + sum(
            counter(m.text) + MESSAGE_OVERHEAD for m in middle)
    try:
        summary = options.summarize(build_prompt(middle, previous_summary))
    except Exception as exc:  # summarisers are user code or network calls
        raise CompactionError(f"summariser failed: {exc}") from exc
    if not isinstance(summary, str) or not summary.strip():
        raise CompactionError("summariser returned an empty summary")
    if counter(summary) + MESSAGE_OVERHEAD >= replaced:
        # A summary as long as what it replaces would not shrink anything.
        if strict:
            raise CompactionError("the summary would not shrink the history")
        return None
    return session.add_compaction(summary.strip(), path[new_from].id, path[end].id)


def truncate_older_messages(
    history: Sequence[Message], keep_recent: int = 4, tool_output_chars: int = 500,
    text_chars: int = 10_000,
) -> list[Message]:
    """Micro-compaction on a copy: shorten older tool outputs and very long texts."""
    out: list[Message] = []
    cutoff = len(history) - max(keep_recent, 0)
    for i, message in enumerate(history):
        if i >= cutoff:
            out.append(message)
            continue
        parts, changed = [], False
        for part in message.parts:
            new = _truncate_part(part, tool_output_chars, text_chars)
            changed = changed or new is not part
            parts.append(new)
        out.append(message._replace(parts=parts) if changed else message)
    return out


def _cut(text: str, limit: int, note: str) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} {note}]"


def _truncate_part(part: dict[str, Any], tool_chars: int, text_chars: int) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("text", "reasoning") and isinstance(part.get("text"), str):
        if len(part["text"]) > text_chars:
            return {**part, "text": _cut(part["text"], text_chars, "characters omitted")}
        return part
    if "output" in part:
        output = part["output"]
        text = output if isinstance(output, str) else None
        if text is None:
            import orjson

            text = orjson.dumps(output).decode()
        if len(text) > tool_chars:
            new = copy.copy(part)
            new["output"] = _cut(text, tool_chars, "characters omitted; re-run the tool for all")
            return new
    return part
