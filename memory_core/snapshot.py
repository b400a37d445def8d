"""A whole session as plain values: what export reads and import hands to the storage
in one call (`SessionStorage.restore_session`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .messages import Message
from .tree import Compaction


@dataclass(frozen=True)
class SkillState:
    label: str
    key: str
    loaded: bool
    loaded_at: Any
    unloaded_at: Any = None


@dataclass(frozen=True)
class FrozenPrompt:
    text: str
    sections: dict[str, str]
    frozen_at: Any


@dataclass(frozen=True)
class SessionSnapshot:
    """Registry fields, block declarations (label, spec, removed), messages parents
    first, overlays, skill states and the frozen prompt of one session."""

    id: str
    name: str
    created_at: datetime
    updated_at: datetime
    parent_session_id: str | None = None
    model: str | None = None
    source: str | None = None
    end_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost: float = 0.0
    blocks: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    # (parts JSON, metadata JSON, text) of each message, when the caller has them from
    # prepare() already: the storage writes these instead of making them a second time.
    encoded: list[tuple[str, str, str]] | None = None
    compactions: list[Compaction] = field(default_factory=list)
    skills: list[SkillState] = field(default_factory=list)
    prompt: FrozenPrompt | None = None
