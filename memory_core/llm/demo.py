"""The offline demo model (SPEC §15): deterministic, no network, real tool protocol.

It saves facts said with "remember ..." through `set_context`, answers "what do you
remember" from the MEMORY block and facts saved in this conversation, and searches past
sessions through `session_search`, so every feature can be tried without an LLM. It
streams word by word with a pause between chunks (`stream_delay`), so streaming and Stop
can be watched, and numbers regenerated answers (see DemoModel).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..messages import Message
from ..prompt import SEPARATOR
from ..tokens import estimate_message_tokens, estimate_tokens
from ..tools import Tool
from .base import LLMResponse, StreamEvent, ToolCall, Usage
from .convert import ToolExchange, tool_exchanges

MEMORY_LABEL = "memory"
MAX_HITS = 5
_RECALL = re.compile(
    r"^\W*(?:so,?\s+)?what\s+(?:else\s+)?(?:do|did|have)\s+you\s+"
    r"(?:remember(?:ed)?|know|saved?|memori[sz]ed)(?:\s+about\s+me)?\s*(?:so far)?\W*$", re.I)
_SEARCHES = [re.compile(p, re.I | re.S) for p in (
    r"^\W*(?:please\s+|can you\s+|could you\s+)?search(?:\s+(?:the\s+)?(?:past|previous|old|"
    r"other|my|our)\s+(?:sessions|conversations|chats|messages))?(?:\s+for)?\s+(?P<q>.+)",
    r"\bdid\s+(?:we|i|you)\s+(?:ever\s+)?(?:talk|speak|chat|discuss|say anything|mention)"
    r"(?:\s+about)?\s+(?P<q>.+)",
    r"\bwhat\s+did\s+(?:we|i|you)\s+(?:say|decide|discuss|agree|conclude|talk)"
    r"(?:\s+(?:about|on))?\s+(?P<q>.+)",
    r"\bwhat\s+do\s+you\s+remember\s+about\s+(?P<q>.+)",
    r"\bdo\s+you\s+remember\s+(?:anything\s+about\s+|when\s+|what\s+)?(?P<q>.+)",
)]
_REMEMBER = re.compile(
    r"^\W*(?:(?:please|pls|can you|could you|would you|i want you to|you should|also)\s+)?"
    r"remember\b(?:\s+that\b)?[\s:,-]*(?P<fact>.+)$", re.I | re.S)
_HIT = re.compile(r"^- \d{4}-\d{2}-\d{2}\b")  # session_search's line per hit
HELP = (
    "I can save facts (\u201cremember that \u2026\u201d), tell you what I remember "
    "(\u201cwhat do you remember?\u201d) and search past sessions (\u201csearch for "
    "\u2026\u201d). For real answers, set ARBOR_LLM_BASE_URL (with ARBOR_LLM_API_KEY and "
    "ARBOR_LLM_MODEL) for any OpenAI-compatible endpoint such as OpenAI, vLLM, Ollama or "
    "llama.cpp, or ARBOR_ANTHROPIC_API_KEY for Anthropic, then restart the server."
)


def _clean(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".!?").strip()


def memory_section(system: str) -> list[str]:
    """The content lines of the prompt's MEMORY block (SPEC §16 layout)."""
    lines = system.splitlines()
    for i in range(len(lines) - 2):
        header = lines[i + 1].upper()
        if lines[i] == SEPARATOR and lines[i + 2] == SEPARATOR and (
                header == "MEMORY" or header.startswith("MEMORY ")):
            content: list[str] = []
            for j in range(i + 3, len(lines)):
                if lines[j] == SEPARATOR or (lines[j] == "" and j + 1 < len(lines)
                                             and lines[j + 1] == SEPARATOR):
                    break
                content.append(lines[j])
            return [line.strip() for line in content if line.strip()]
    return []


class DemoModel:
    """An LLMClient that needs no network: canned, deterministic, and honest about it.

    `stream_delay`: seconds between streamed chunks (0: none); the Django app passes
    ARBOR_DEMO_STREAM_DELAY. Regenerated answers differ: a deterministic model given the
    same path would repeat itself, and the path up to a parent does not show the answers
    already under it. So the chat turn tells a model that declares `numbered_variants`
    which answer under that parent it is writing (`variant=N`, N >= 2, a keyword real
    clients are never given), and the Nth answer starts "(variant N)".
    """

    model = "arbor-offline-demo"
    label = "offline demo model"
    offline = True
    numbered_variants = True

    def __init__(self, stream_delay: float = 0.0) -> None:
        self.stream_delay = max(0.0, float(stream_delay))

    def complete(self, *, system: str, history: list[Message], tools: list[Tool],
                 variant: int = 1) -> LLMResponse:
        text, calls = self._decide(system, history, tools)
        if text and variant > 1:
            text = f"(variant {variant}) {text}"
        spent = estimate_tokens(text) + sum(estimate_tokens(json.dumps(c.arguments))
                                            for c in calls)
        usage = Usage(estimate_message_tokens(history, system_prompt=system), spent, 0.0)
        return LLMResponse(text, calls, usage, self.model,
                           "tool_calls" if calls else "stop")

    def stream(self, *, system: str, history: list[Message], tools: list[Tool],
               variant: int = 1) -> Iterator[StreamEvent]:
        response = self.complete(system=system, history=history, tools=tools, variant=variant)
        for i, word in enumerate(re.findall(r"\s*\S+\s*", response.text)):
            if i and self.stream_delay:
                time.sleep(self.stream_delay)
            yield StreamEvent("text_delta", text=word)
        for call in response.tool_calls:
            yield StreamEvent("tool_call", tool_call=call)
        yield StreamEvent("done", response=response)

    def _decide(self, system: str, history: Sequence[Message], tools: Sequence[Tool]
                ) -> tuple[str, list[ToolCall]]:
        last_user = next((i for i in range(len(history) - 1, -1, -1)
                          if history[i].role == "user"), None)
        if last_user is None:
            return "Hello! I am Arbor's offline demo model. " + HELP, []
        turn = tool_exchanges(history[last_user:])
        if turn:  # a tool already ran for this message: answer from its result
            return _after_tool(turn[-1]), []
        user = history[last_user]
        said = _clean(user.text)
        offered = {t.name: t for t in tools}
        if _RECALL.match(said + "?"):
            return _recall(system, history), []
        for pattern in _SEARCHES:
            match = pattern.search(user.text.strip())
            if match and _clean(match["q"]):
                return self._call(user, len(history), offered, "session_search",
                                  {"query": _clean(match["q"])})
        match = _REMEMBER.match(user.text.strip())
        if match and _clean(match["fact"]):
            args = {"label": MEMORY_LABEL, "content": f"- {_clean(match['fact'])}",
                    "action": "append"}
            return self._call(user, len(history), offered, "set_context", args)
        quoted = said if len(said) <= 80 else said[:79] + "\u2026"
        return (f"You said \u201c{quoted}\u201d. I am Arbor's offline demo model, so my "
                f"replies are canned. {HELP}"), []

    @staticmethod
    def _call(user: Message, position: int, offered: dict[str, Tool], name: str,
              args: dict[str, Any]) -> tuple[str, list[ToolCall]]:
        tool = offered.get(name)
        if tool is None or (name == "set_context" and not _accepts_memory(tool)):
            what = ("writable 'memory' block" if name == "set_context"
                    else "session_search tool")
            return (f"I would use {name} for that, but this session has no {what}. "
                    "Add it to the agent to try this."), []
        seed = f"{user.id}|{position}|{name}|{json.dumps(args, sort_keys=True)}"
        call_id = "call_demo_" + hashlib.sha1(seed.encode()).hexdigest()[:16]
        return "", [ToolCall(call_id, name, args)]


def _accepts_memory(tool: Tool) -> bool:
    label = tool.input_schema.get("properties", {}).get("label", {})
    return MEMORY_LABEL in label.get("enum", [MEMORY_LABEL])


def _saved_facts(history: Sequence[Message]) -> list[str]:
    return [str(call.input.get("content", "")).strip()
            for call in tool_exchanges(history)
            if call.name == "set_context" and isinstance(call.input, dict)
            and call.input.get("label") == MEMORY_LABEL and call.output is not None
            and not call.is_error and not call.output.startswith("Error")]


def _recall(system: str, history: Sequence[Message]) -> str:
    facts: list[str] = []
    for line in memory_section(system) + _saved_facts(history):
        for fact in line.splitlines():
            fact = fact.strip()
            if fact and fact not in facts:
                facts.append(fact)
    if not facts:
        return ("My memory is empty so far. Tell me \u201cremember that \u2026\u201d and I "
                "will save it with set_context.")
    items = "\n".join(f if f.startswith("- ") else f"- {f}" for f in facts)
    return f"Here is what I remember:\n{items}"


def _after_tool(call: ToolExchange) -> str:
    output = call.output
    if output is None:
        return f"The {call.name} call got no result, so I cannot tell whether it worked."
    failed = call.is_error or output.startswith("Error")
    args = call.input if isinstance(call.input, dict) else {}
    if call.name == "set_context":
        fact = str(args.get("content", "")).removeprefix("- ")
        if failed:
            return f"I could not save that to memory: {output}"
        return f"Got it. I saved to memory: {fact} ({output})"
    if call.name == "session_search":
        query = args.get("query", "")
        if failed:
            return f"The search for \u201c{query}\u201d failed: {output}"
        hits: list[str] = []
        for line in output.splitlines():  # a hit's text may span lines: fold them in
            if _HIT.match(line):
                hits.append(line)
            elif hits:
                hits[-1] += " " + line.strip()
        if not hits:
            return f"I searched past sessions for \u201c{query}\u201d and found nothing."
        shown = [h if len(h) <= 240 else h[:239] + "\u2026" for h in hits[:MAX_HITS]]
        more = f"\n\u2026and {len(hits) - MAX_HITS} more." if len(hits) > MAX_HITS else ""
        noun = "message" if len(hits) == 1 else "messages"
        return (f"I found {len(hits)} {noun} about \u201c{query}\u201d in past sessions:\n"
                + "\n".join(shown) + more)
    return f"{call.name} answered: {output[:500]}"
