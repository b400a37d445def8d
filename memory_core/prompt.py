"""The system prompt format of SPEC §16. Every width and mark lives here."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

SEPARATOR = "\u2550" * 46  # ═ x 46
SECTION_JOIN = "\n\n"
TAGS = {"search": "[searchable]", "skill": "[loadable]", "readonly": "[readonly]",
        "writable": "[writable]"}


@dataclass(frozen=True, slots=True)
class Section:
    label: str
    kind: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None


def percent(used: int, limit: int) -> int:
    """used/limit as a whole percent, halves rounded up (12.5 -> 13), in integers."""
    return (200 * used + limit) // (2 * limit)


def header(section: Section) -> str:
    text = section.label.upper()
    if section.description:
        text += f" ({section.description})"
    if section.max_tokens:
        pct = percent(section.tokens, section.max_tokens)
        text += f" [{pct}% \u2014 {section.tokens}/{section.max_tokens} tokens]"
    return f"{text} {TAGS[section.kind]}"


def render_section(section: Section) -> str | None:
    """One block's section, or None for an empty read-only block (left out)."""
    if section.kind == "readonly" and not section.content:
        return None
    return "\n".join((SEPARATOR, header(section), SEPARATOR, section.content))


def render(sections: Sequence[Section]) -> tuple[str, dict[str, str]]:
    """The prompt, and a digest of each block's section (to tell what changed later)."""
    parts: list[str] = []
    digests: dict[str, str] = {}
    for section in sections:
        text = render_section(section)
        digests[section.label] = digest(text or "")
        if text is not None:
            parts.append(text)
    return SECTION_JOIN.join(parts), digests


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
