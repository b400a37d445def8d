"""What a SessionManager's builder configures for every session it hands out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .compaction import CompactFunction
from .context import BlockSpec
from .messages import MAX_TOOL_OUTPUT_CHARS
from .tokens import TokenCounter
from .tree import Compaction

ErrorHandler = Callable[[Exception], Any]
CompactionListener = Callable[[Compaction], Any]
DEFAULT_COOLDOWN_SECONDS = 300.0


@dataclass
class SessionConfig:
    declared: dict[str, BlockSpec] = field(default_factory=dict)
    token_counter: TokenCounter | None = None
    compact_function: CompactFunction | None = None
    compact_threshold: int | None = None
    threshold_counter: TokenCounter | None = None
    cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS
    error_handlers: list[ErrorHandler] = field(default_factory=list)
    compaction_listeners: list[CompactionListener] = field(default_factory=list)
    llm: Any = None  # an LLMClient; None means: llm.default_llm() at first use
    micro_compaction: bool = True
    max_tool_output_chars: int = MAX_TOOL_OUTPUT_CHARS
