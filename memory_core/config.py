"""What a SessionManager's builder configures for every session it hands out.

Settings that come from the host application (the tool-output limit, where skill files
live) arrive through `default_config()`: the host installs a factory once with
`set_default_config` (Arbor's Django app does so from settings), and every
`SessionManager` starts from a fresh config that factory builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .blocks import BlockSpec
from .compaction import CompactFunction
from .events import NO_EVENTS, EventSink
from .messages import MAX_TOOL_OUTPUT_CHARS
from .tokens import TokenCounter
from .tree import Compaction
from .versions import DEFAULT_KEEP

ErrorHandler = Callable[[Exception], Any]
CompactionListener = Callable[[Compaction], Any]
FileSkillsFactory = Callable[[str], Any]  # folder -> a skill provider over its files
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
    file_skills: FileSkillsFactory | None = None  # None: blocks with `files` are refused
    events: EventSink = NO_EVENTS  # where every write announces itself (SPEC §10)
    # search by meaning: called at each search for the current Embedder (None: words only)
    embedder: Callable[[], Any] | None = None
    block_versions: int = DEFAULT_KEEP  # versions kept per block (versions.py)


_default_factory: Callable[[], SessionConfig] = SessionConfig


def set_default_config(factory: Callable[[], SessionConfig]) -> None:
    """Install the factory every new SessionManager takes its starting config from."""
    global _default_factory
    _default_factory = factory


def default_config() -> SessionConfig:
    """A fresh config from the installed factory (called per manager, so a changed
    setting applies to the next manager)."""
    return _default_factory()
