"""Session's methods for its context blocks, entries, frozen prompt, skills and tools
(SPEC §4). Each hands over to the session's SessionContext (context.py); they are a mixin
of Session so session.py holds the message tree, and their async twins sit beside them."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from . import autocompact as auto
from . import events
from .blocks import ContextBlock, ContextEntry, PromptStatus
from .errors import InvalidInput, NotFound
from .inputs import check_id
from .tools import Tool, export, session_tools
from .versions import Actor, BlockVersion, VersionPage, Writer, unified_diff

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
            self.emit(events.prompt_refreshed(
                frozen_at.isoformat() if frozen_at is not None else None))
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

    # ------------------------------------------------------- block versions
    def acting(
        self, actor: Actor, actor_id: Any = None, *, message_id: str | None = None,
        leaf_id: str | None = None,
    ) -> AbstractContextManager[Writer]:
        """`with session.acting("api", key_id):` block writes inside are that actor's."""
        return self.context.acting(Writer(actor, None if actor_id is None else str(actor_id),
                                          message_id, leaf_id))

    def block_versions(
        self, label: str, *, limit: int = 20, before: int | None = None
    ) -> VersionPage:
        """A block's versions, newest first: `limit` of them, numbered below `before`
        (the previous page's next_cursor). Raises NotFound for an unknown label."""
        return self.context.history.versions(label, limit=limit, before=before)

    def block_version(self, label: str, number: int) -> BlockVersion:
        """Raises NotFound for an unknown label or number."""
        return self.context.history.version(label, number)

    def block_diff(self, label: str, number: int, from_number: int | None = None) -> str:
        """A unified diff of the block's text from version `from_number` (default: the
        one before) to `number`; empty when they hold the same. Raises NotFound,
        InvalidInput when from_number is newer than number."""
        new = self.block_version(label, number)
        if from_number is None:
            from_number = number - 1
            if from_number < 1:
                return unified_diff(None, new)
            try:
                old = self.block_version(label, from_number)
            except NotFound:  # pruned: diff against nothing
                return unified_diff(None, new)
            return unified_diff(old, new)
        if isinstance(from_number, int) and from_number > number:
            raise InvalidInput(f"from ({from_number}) must not be newer than {number}")
        return unified_diff(self.block_version(label, from_number), new)

    def restore_block(self, label: str, number: int) -> BlockVersion:
        """Write version `number` back as the block's newest version (emits
        context.updated). Raises NotFound, ReadOnly, OverBudget."""
        return self.context.history.restore(label, number)

    def context_as_of(self: SessionHost, message_id: str) -> list[ContextBlock]:
        """Every block as it was when that message was written: what the model saw on
        that turn, on any branch. Raises NotFound for a message not in this session."""
        message = self.storage.get_message(self.id, check_id(message_id, "message_id"))
        if message is None:
            raise NotFound(f"message {message_id} not found")
        return self.context.history.as_of(message.created_at)

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
    ablock_versions = sync_to_async(block_versions)
    ablock_version = sync_to_async(block_version)
    ablock_diff = sync_to_async(block_diff)
    arestore_block = sync_to_async(restore_block)
    acontext_as_of = sync_to_async(context_as_of)
