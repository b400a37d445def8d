"""Context blocks of one session and its frozen system prompt (SPEC §4).

The values it works on (BlockSpec, Block, ContextBlock, ContextEntry, PromptStatus,
specs_from_templates) live in blocks.py and are re-exported here, the path the API,
views and admin import them from."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

from . import events
from .block_history import History
from .blocks import (
    SPEC_FIELDS,
    Block,
    BlockSpec,
    ContextBlock,
    ContextEntry,
    PromptStatus,
    specs_from_templates,
)
from .errors import Conflict, InvalidInput, NotFound, OverBudget, ReadOnly
from .events import Payload
from .limits import MAX_ID_LENGTH, Kind, is_id, strip_nul
from .prompt import Section, render
from .providers.base import kind_of, read_entry
from .providers.static import StaticProvider
from .providers.stored import StoredSearch, StoredSkills, StoredText
from .storage import ContextStorage
from .tokens import TokenCounter, estimate_tokens
from .versions import DEFAULT_KEEP, Writer

__all__ = [
    "SPEC_FIELDS", "Block", "BlockSpec", "ContextBlock", "ContextEntry", "PromptStatus",
    "SessionContext", "Writing", "specs_from_templates",
]

Writing = Callable[[Payload], AbstractContextManager[Any]]  # (its context.updated event)


def _silently(payload: Payload) -> AbstractContextManager[Any]:
    return nullcontext()


class SessionContext:
    """Blocks, prompt and skills of one session."""

    def __init__(
        self, store: ContextStorage, *, agent_id: str, session_id: str,
        declared: Sequence[BlockSpec] = (), counter: TokenCounter | None = None,
        file_skills: Callable[[str], Any] | None = None,
        writing: Writing | None = None, keep: int = DEFAULT_KEEP,
    ) -> None:
        self.store = store
        # Opens the write's transaction and emits context.updated when the body succeeds
        # (Session hands in its own; alone, a context announces nothing).
        self.writing: Writing = writing or _silently
        self.file_skills = file_skills  # folder -> skill provider, from the engine config
        self.agent_id = agent_id
        self.session_id = session_id
        self.declared = {spec.label: spec for spec in declared}
        self.runtime: dict[str, Any] = {}  # providers passed to add_context
        self.count = counter or estimate_tokens
        # Who writes (versions.py): the door sets it; a memory tool call is the model's.
        self.writer = Writer()
        self.keep = max(1, keep)  # versions kept per block
        self.history = History(self)
        self.recording = True  # False: writes make no version (an import bringing its own)

    @contextmanager
    def recorded(self, on: bool) -> Iterator[None]:
        """Writes inside make versions only when `on`."""
        before, self.recording = self.recording, on
        try:
            yield
        finally:
            self.recording = before

    @contextmanager
    def acting(self, writer: Writer) -> Iterator[Writer]:
        """Writes inside the block are `writer`'s."""
        before, self.writer = self.writer, writer
        try:
            yield writer
        finally:
            self.writer = before

    # ------------------------------------------------------------- resolving
    def namespace(self, spec: BlockSpec) -> str:
        if spec.scope == "agent":
            return f"agent:{self.agent_id}:{spec.label}"
        return f"session:{self.session_id}:{spec.label}"

    def _provider(self, spec: BlockSpec) -> tuple[Kind, Any]:
        provider = self.runtime.get(spec.label) or spec.provider
        if provider is None and spec.label in self.declared:
            provider = self.declared[spec.label].provider
        if provider is not None:
            return kind_of(provider), provider
        kind: Kind = spec.kind or "writable"
        key = self.namespace(spec)
        if kind == "readonly":
            return kind, StaticProvider(spec.content or "")
        if kind == "skill":
            if spec.files is not None:
                if self.file_skills is None:
                    raise InvalidInput("skill files are not configured for this engine")
                return kind, self.file_skills(spec.files)
            return kind, StoredSkills(self.store, key)
        if kind == "search":
            return kind, StoredSearch(self.store, key)
        return kind, StoredText(self.store, key, spec.content or "")

    def blocks(self) -> list[Block]:
        """Blocks in declaration order: the session's rows, then code-declared ones."""
        rows = self.store.session_blocks(self.session_id)
        removed = {label for label, _, gone in rows if gone}
        # Code-declared blocks first (with_context), then the session's own rows.
        specs = [spec for label, spec in self.declared.items() if label not in removed]
        specs += [BlockSpec.build(label, **spec) for label, spec, gone in rows
                  if not gone and label not in self.declared]
        out = []
        for spec in specs:
            kind, provider = self._provider(spec)
            out.append(Block(spec, kind, provider))
        return out

    def block(self, label: str) -> Block:
        for block in self.blocks():
            if block.label == label:
                return block
        raise NotFound(f"no context block labelled {label!r}")

    def _report(self, block: Block, content: str) -> ContextBlock:
        return ContextBlock(
            label=block.label, description=block.spec.description, content=content,
            tokens=self.count(content), max_tokens=block.spec.max_tokens,
            writable=block.settable, is_skill=block.kind == "skill",
            is_searchable=block.kind == "search",
        )

    # ----------------------------------------------------------------- reads
    def get_context_block(self, label: str) -> ContextBlock:
        block = self.block(label)
        return self._report(block, block.provider.get())

    def get_context_blocks(self) -> list[ContextBlock]:
        return [self._report(b, b.provider.get()) for b in self.blocks()]

    def get_entry(self, label: str, key: str) -> ContextEntry:
        """One entry of a skill or search block, read without loading it (loading is the
        model's act, recorded by the load_context tool). Raises NotFound, InvalidInput."""
        block = self.block(label)
        if block.kind not in ("skill", "search"):
            raise InvalidInput(f"block {label!r} has no entries; read it without a key")
        found = read_entry(block.provider, key) if is_id(key) else None
        if found is None:
            raise NotFound(f"no entry {key!r} in block {label!r}")
        return ContextEntry(label, key, found[0], found[1] or None,
                            self.history.entry_source(block, key))

    # ---------------------------------------------------------------- writes
    def _check_budget(self, block: Block, content: str) -> int:
        tokens = self.count(content)
        limit = block.spec.max_tokens
        if limit is not None and tokens > limit:
            raise OverBudget(
                f"block {block.label!r} is limited to {limit} tokens; "
                f"the new content is {tokens} tokens"
            )
        return tokens

    def _writable(self, label: str) -> Block:
        block = self.block(label)
        if block.kind == "readonly" or not block.settable:
            raise ReadOnly(f"block {label!r} is read-only")
        if block.kind != "writable":
            raise InvalidInput(f"block {label!r} holds entries: write one with a key")
        return block

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's text. Raises ReadOnly, OverBudget, NotFound."""
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        content = strip_nul(content)  # what storage can hold is what we report
        block = self._writable(label)
        self._check_budget(block, content)
        with self.writing(events.context_updated(label, "replace")):
            head = self.history.head(block)
            block.provider.set(content)
            self.history.record(block, head, action="replace", content=content)
        return self._report(block, content)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Append a line to a writable block. Raises ReadOnly, OverBudget, NotFound."""
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        content = strip_nul(content)
        block = self._writable(label)
        current = block.provider.get()
        joined = current + ("\n" if current and not current.endswith("\n") else "") + content
        self._check_budget(block, joined)
        with self.writing(events.context_updated(label, "append")):
            head = self.history.head(block)
            block.provider.set(joined)
            self.history.record(block, head, action="append", content=joined)
        return self._report(block, joined)

    def set_entry(
        self, label: str, key: str, content: str, description: str | None = None
    ) -> ContextBlock:
        """Write one entry of a skill or search block."""
        block = self.block(label)
        if block.kind not in ("skill", "search"):
            raise InvalidInput(f"block {label!r} has no entries; write it without a key")
        if not block.settable:
            raise ReadOnly(f"block {label!r} is read-only")
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_ID_LENGTH:
            raise InvalidInput(
                f"key must be a non-empty string of at most {MAX_ID_LENGTH} characters")
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        self._check_budget(block, content)
        with self.writing(events.context_updated(label, "set_entry", key=key)):
            head = self.history.head(block)
            if block.kind == "skill":
                block.provider.set(key, content, description or "")
            else:
                block.provider.set(key, content)
            self.history.record(block, head, action="set_entry", key=key)
        return self._report(block, block.provider.get())

    def add_context(self, label: str, **options: Any) -> ContextBlock:
        """Add a block to this session. The frozen prompt changes only on refresh."""
        spec = BlockSpec.build(label, **options)
        if any(b.label == label for b in self.blocks()):
            raise Conflict(f"block {label!r} already exists")
        if spec.provider is not None and spec.kind is None:
            # The provider object lives in this process only; record its kind so a session
            # loaded elsewhere shows the block as what it is, not as a writable default.
            spec = replace(spec, kind=kind_of(spec.provider))
        with self.writing(events.context_updated(label, "add")):
            self.store.save_session_block(self.session_id, label, spec.stored())
        if spec.provider is not None:
            self.runtime[label] = spec.provider
        return self.get_context_block(label)

    def remove_context(self, label: str) -> None:
        block = self.block(label)
        with self.writing(events.context_updated(label, "remove")):
            self.store.save_session_block(self.session_id, label, block.spec.stored(),
                                          removed=True)
        self.runtime.pop(label, None)

    # ---------------------------------------------------------------- prompt
    def _render(self) -> tuple[str, dict[str, str]]:
        sections = []
        for block in self.blocks():
            content = block.provider.get()
            sections.append(Section(block.label, block.kind, block.spec.description, content,
                                    self.count(content), block.spec.max_tokens))
        return render(sections)

    def freeze_system_prompt(self) -> str:
        """The stored prompt; rendered and stored on the first call."""
        stored = self.store.get_prompt(self.session_id)
        if stored is not None:
            return stored.text
        return self.refresh_system_prompt()

    def refresh_system_prompt(self) -> str:
        text, digests = self._render()
        self.store.save_prompt(self.session_id, text, digests)
        return text

    def frozen_prompt(self) -> tuple[str, datetime | None]:
        stored = self.store.get_prompt(self.session_id)
        return (stored.text, stored.frozen_at) if stored else ("", None)

    def system_prompt_status(self) -> PromptStatus:
        stored = self.store.get_prompt(self.session_id)
        text, digests = self._render()
        if stored is None:
            return PromptStatus(False, None, False, list(digests))
        labels = list(dict.fromkeys([*stored.sections, *digests]))
        changed = [name for name in labels if stored.sections.get(name) != digests.get(name)]
        return PromptStatus(True, stored.frozen_at, stored.text == text and not changed, changed)

    # ---------------------------------------------------------------- skills
    def load_skill(self, label: str, key: str) -> str:
        block = self.block(label)
        if block.kind != "skill":
            raise InvalidInput(f"block {label!r} is not a skill block")
        content = block.provider.load(key) if isinstance(key, str) and key else None
        if content is None:
            raise NotFound(f"no skill {key!r} in block {label!r}")
        with self.writing(events.context_updated(label, "load", key=key)):
            head = self.history.head(block)
            self.store.set_skill_state(self.session_id, label, key, loaded=True)
            self.history.record(block, head, action="load", key=key)
        return str(content)

    def unload_skill(self, label: str, key: str) -> None:
        block = self.block(label)
        if block.kind != "skill":
            raise InvalidInput(f"block {label!r} is not a skill block")
        states = {(lab, k): on for lab, k, on, _, _ in self.store.skill_states(self.session_id)}
        if not states.get((label, key)):
            raise NotFound(f"skill {key!r} of block {label!r} is not loaded")
        with self.writing(events.context_updated(label, "unload", key=key)):
            head = self.history.head(block)
            self.store.set_skill_state(self.session_id, label, key, loaded=False)
            self.history.record(block, head, action="unload", key=key)

    def loaded_skills(self) -> list[dict[str, Any]]:
        return [
            {"label": label, "key": key, "loaded_at": loaded_at}
            for label, key, loaded, loaded_at, _ in self.store.skill_states(self.session_id)
            if loaded
        ]
