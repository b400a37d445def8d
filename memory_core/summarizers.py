"""Summarisers for compaction: any `prompt -> str` callable works; two come built in.

`extractive_summarizer` runs offline (the default when no LLM is configured): it keeps
the sentences that carry names, numbers, decisions and open questions, in the four
sections the compaction prompt asks for. `llm_summarizer(client)` asks a real model.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from .compaction import Summarize
from .messages import Message

SECTIONS = ("Topic / goal", "Key points and decisions", "Current state", "Open items")
MAX_POINTS = 12
MAX_OPEN = 6
MAX_SENTENCE = 240
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_LINE = re.compile(r"^\[(user|assistant|system|tool)\] (.*)$")
_DECISION = re.compile(
    r"\b(decid\w*|agree\w*|chose|chosen|choose|will|won't|must|should|plan\w*|book\w*|"
    r"confirm\w*|prefer\w*|need\w*|remember|deadline|due|budget|use|using|moved?|set)\b", re.I)
_NAMEISH = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+|\d")


def _sentences(text: str) -> list[str]:
    out = []
    for raw in _SENTENCE.findall(text):
        sentence = " ".join(raw.split())
        if len(sentence) > 3:
            out.append(sentence[:MAX_SENTENCE])
    return out


def _parse(prompt: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    previous: dict[str, list[str]] = {name: [] for name in SECTIONS}
    if "PREVIOUS SUMMARY:" in prompt:
        block = prompt.split("PREVIOUS SUMMARY:", 1)[1].split("MESSAGES:", 1)[0]
        current = None
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("## "):
                current = line[3:].strip() if line[3:].strip() in previous else None
            elif line and current:
                previous[current].append(line.lstrip("- ").strip())
    body = prompt.split("MESSAGES:", 1)[1] if "MESSAGES:" in prompt else prompt
    messages = []
    for line in body.splitlines():
        match = _LINE.match(line.strip())
        if match:
            messages.append((match.group(1), match.group(2)))
    return previous, messages


def _unique(items: list[str], limit: int) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out[-limit:]


def extractive_summarizer(prompt: str) -> str:
    """Offline summary of a compaction prompt: keeps facts, drops chatter."""
    previous, messages = _parse(prompt)
    user_texts = [t for role, t in messages if role == "user"]
    topic = previous["Topic / goal"] or (_sentences(user_texts[0])[:1] if user_texts else [])
    points = list(previous["Key points and decisions"])
    questions = list(previous["Open items"])
    for role, text in messages:
        for sentence in _sentences(text):
            if sentence.endswith("?"):
                if role == "user":
                    questions.append(sentence)
            elif _DECISION.search(sentence) or _NAMEISH.search(sentence):
                points.append(f"{role}: {sentence}" if not sentence.startswith(role) else sentence)
    last_assistant = next((t for r, t in reversed(messages) if r == "assistant"), "")
    state = _sentences(last_assistant)[:2] or previous["Current state"]
    # A summary must be shorter than what it replaces: a third of the input at most.
    budget = max(400, sum(len(t) for _, t in messages) // 3)
    kept_points = _unique(points, MAX_POINTS)
    while kept_points and sum(len(p) + 3 for p in kept_points) > budget:
        kept_points.pop(0)  # oldest first: later decisions supersede earlier ones
    sections = {
        "Topic / goal": topic or ["(not stated)"],
        "Key points and decisions": kept_points or ["(none recorded)"],
        "Current state": state or ["(unknown)"],
        "Open items": _unique(questions, MAX_OPEN) or ["(none)"],
    }
    return "\n".join(
        f"## {name}\n" + "\n".join(f"- {item}" for item in items)
        for name, items in sections.items()
    )


def llm_summarizer(client: Any, *, system: str = "") -> Summarize:
    """A summariser that asks an LLMClient (see memory_core.llm) to write the summary."""

    def summarize(prompt: str) -> str:
        message = Message(
            id="compaction-request", parent_id=None, role="user",
            parts=[{"type": "text", "text": prompt}], metadata={},
            created_at=datetime.now(UTC),
        )
        response = client.complete(system=system, history=[message], tools=[])
        return str(response.text)

    return summarize


def default_summarizer(llm: Any = None) -> Summarize:
    """An LLM summariser when a real model is configured, else the offline one."""
    if llm is None or getattr(llm, "offline", False):
        return extractive_summarizer
    return llm_summarizer(llm)
