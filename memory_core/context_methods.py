"""Session's methods for its context blocks, entries, frozen prompt, skills and tools
(SPEC §4). Each hands over to the session's SessionContext (context.py); they are a mixin
of Session so session.py holds the message tree, and their async twins sit beside them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from . import autocompact as auto
from .blocks import ContextBlock, ContextEntry, PromptStatus
from .tools import Tool, export, session_tools

if TYPE_CHECKING:
    from .context import SessionContext
    from .host import SessionHost


class ContextMethods:
    """The context half of Session's public API. Session sets both attributes."""

    context: SessionContext
    _extra_tools: list[Tool]  # tools beside the memory tools (the manager's session_search)

    def get_context_block(self, label: str) -> ContextBlock:
        """{label, description, content, tokens, max_tokens, writable, is_skill, is_searchable}."""
        return self.context.get_context_block(label)

    def get_context_blocks(self) -> list[ContextBlock]:
        return self.context.get_context_blocks()

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Raises ReadOnly, OverBudget (naming limit and size), NotFound."""
        return self.context.replace_context_block(label, content)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        return self.context.append_context_block(label, content)

    def get_context_entry(self, label: str, key: str) -> ContextEntry:
        """{label, key, content, description} of one entry of a skill or search block,
        without loading it. Raises NotFound, InvalidInput (a block without entries)."""
        return self.context.get_entry(label, key)

    def set_context_entry(
        self, label: str, key: str, content: str, description: str | None = None
    ) -> ContextBlock:
        """Write one entry of a skill or search block."""
        return self.context.set_entry(label, key, content, description)

    def add_context(self, label: str, **options: Any) -> ContextBlock:
        """Add a block now; the frozen prompt shows it after refresh_system_prompt()."""
        return self.context.add_context(label, **options)

    def remove_context(self, label: str) -> None:
        self.context.remove_context(label)

    def freeze_system_prompt(self) -> str:
        """The frozen prompt, byte-identical until refresh_system_prompt()."""
        return self.context.freeze_system_prompt()

    def refresh_system_prompt(self: SessionHost) -> str:
        # Announced and counted as the session's own write: it needs the whole Session
        # (storage, emit, the compaction estimate), hence the SessionHost self-type.
        with self.storage.transaction():
            prompt = self.context.refresh_system_prompt()
            _, frozen_at = self.context.frozen_prompt()
            self.emit("prompt.refreshed", {
                "frozen_at": frozen_at.isoformat() if frozen_at is not None else None})
        auto.forget_estimate(self)
        return prompt

    def system_prompt_status(self) -> PromptStatus:
        """Whether the frozen prompt matches a fresh render, and which blocks changed."""
        return self.context.system_prompt_status()

    def preview_system_prompt(self) -> str:
        """The prompt a refresh would freeze now, rendered without freezing it (for a
        diff against the frozen one before deciding to refresh)."""
        text, _ = self.context._render()
        return text

    def load_skill(self, label: str, key: str) -> str:
        return self.context.load_skill(label, key)

    def unload_skill(self, label: str, key: str) -> None:
        self.context.unload_skill(label, key)

    def get_loaded_skills(self) -> list[dict[str, Any]]:
        """Skills loaded now, to put into the working context: [{label, key, loaded_at}]."""
        return self.context.loaded_skills()

    def tools(self, format: str | None = None) -> list[Any]:
        """The memory tools the session's blocks enable; format openai|anthropic|mcp."""
        return export([*session_tools(self.context), *self._extra_tools], format)

    # ------------------------------------------------------- async twins
    aget_context_block = sync_to_async(get_context_block)
    aget_context_blocks = sync_to_async(get_context_blocks)
    areplace_context_block = sync_to_async(replace_context_block)
    aappend_context_block = sync_to_async(append_context_block)
    aget_context_entry = sync_to_async(get_context_entry)
    aset_context_entry = sync_to_async(set_context_entry)
    aadd_context = sync_to_async(add_context)
    aremove_context = sync_to_async(remove_context)
    afreeze_system_prompt = sync_to_async(freeze_system_prompt)
    arefresh_system_prompt = sync_to_async(refresh_system_prompt)
    asystem_prompt_status = sync_to_async(system_prompt_status)
    apreview_system_prompt = sync_to_async(preview_system_prompt)
    aload_skill = sync_to_async(load_skill)
    aunload_skill = sync_to_async(unload_skill)
    aget_loaded_skills = sync_to_async(get_loaded_skills)
    atools = sync_to_async(tools)
