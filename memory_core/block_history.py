"""A session's block versions (versions.py): recording each write, reading the history,
restoring a version, and every block as it was at a moment.

SessionContext (context.py) holds one History; its writes call `head()` before the
provider writes (it holds the block, so numbers never collide) and `record()` after.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from . import events
from .blocks import Block, BlockSpec, ContextBlock
from .errors import InvalidInput, NotFound, ReadOnly
from .events import Payload
from .storage import ContextStorage
from .versions import MAX_PAGE, BlockVersion, VersionPage, Writer, same_value, shown


class SessionContext(Protocol):
    """What a block's history needs of the session's context (context.SessionContext),
    named here so the two modules do not import each other."""

    store: ContextStorage
    agent_id: str
    session_id: str
    writer: Writer
    keep: int
    recording: bool

    def writing(self, payload: Payload) -> AbstractContextManager[Any]: ...
    def namespace(self, spec: BlockSpec) -> str: ...
    def blocks(self) -> list[Block]: ...
    def block(self, label: str) -> Block: ...
    def _report(self, block: Block, content: str) -> ContextBlock: ...
    def _check_budget(self, block: Block, content: str) -> int: ...

Head = tuple[BlockVersion | None, str | None]  # (newest version, the session's latest leaf)


def _stored_entries(block: Block) -> tuple[Any, str] | None:
    """(store, namespace) of a keyed block kept in the database, else None."""
    store, namespace = (getattr(block.provider, "store", None),
                        getattr(block.provider, "namespace", None))
    return (store, namespace) if store is not None and namespace is not None else None


class History:
    def __init__(self, ctx: SessionContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------- recording
    def head(self, block: Block) -> Head:
        return self.ctx.store.version_head(self.ctx.namespace(block.spec), self.ctx.session_id)

    def _base(self, block: Block) -> BlockVersion:
        """The value of a block no write has touched."""
        if block.kind in ("skill", "search"):
            return BlockVersion(block.label, 0, "",
                                entries=[] if _stored_entries(block) else None,
                                loaded=[] if block.kind == "skill" else None)
        return BlockVersion(block.label, 0, "", content=block.spec.content or "")

    def _entries(self, block: Block, head: BlockVersion | None,
                 written: dict[str, dict[str, Any] | None]) -> list[dict[str, Any]] | None:
        """The block's entries now, each with the source of its last write: `written`
        (key -> source) for the entries this write made, the head's for the others."""
        stored = _stored_entries(block)
        if stored is None:
            return None
        store, namespace = stored
        before = {e["key"]: e.get("source") for e in (head.entries or [])} if head else {}
        return [{"key": key, "content": content, "description": description,
                 "source": written[key] if key in written else before.get(key)}
                for key, content, description in store.entries(namespace)]

    def _loaded(self, block: Block) -> list[str] | None:
        if block.kind != "skill":
            return None
        return sorted(key for label, key, loaded, _, _ in
                      self.ctx.store.skill_states(self.ctx.session_id)
                      if label == block.label and loaded)

    def record(
        self, block: Block, head: Head, *, action: str, content: str | None = None,
        key: str | None = None, restored: BlockVersion | None = None,
    ) -> BlockVersion | None:
        """Keep the block's value after this write as its next version; None when the
        write changed nothing (or the context records none now)."""
        if not self.ctx.recording:
            return None
        newest, latest_leaf = head
        writer = self.ctx.writer
        leaf = writer.leaf_id or latest_leaf
        if block.kind in ("skill", "search"):
            written: dict[str, dict[str, Any] | None] = {}
            if restored is not None:
                written = {e["key"]: e.get("source") for e in restored.entries or []}
            elif key is not None and action == "set_entry":
                written = {key: {"message_id": writer.message_id, "leaf_id": leaf}}
            value = BlockVersion(block.label, 0, action, entries=self._entries(
                block, newest, written), loaded=self._loaded(block))
        else:
            value = BlockVersion(block.label, 0, action, content=content)
        if same_value(newest or self._base(block), value):
            return None
        version = replace(
            value, number=(newest.number if newest else 0) + 1, key=key, actor=writer.actor,
            actor_id=writer.actor_id, message_id=writer.message_id, leaf_id=leaf,
            session_id=self.ctx.session_id,
            restored_from=restored.number if restored is not None else None)
        return self.ctx.store.add_version(self.ctx.namespace(block.spec), version,
                                          agent_id=self.ctx.agent_id, keep=self.ctx.keep)

    # ----------------------------------------------------------------- reads
    def versions(self, label: str, *, limit: int = 20, before: int | None = None
                 ) -> VersionPage:
        """Newest first; `before`: the next_cursor of the previous page."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
        if before is not None and (isinstance(before, bool) or not isinstance(before, int)):
            raise InvalidInput("before must be a version number")
        namespace = self.ctx.namespace(self.ctx.block(label).spec)
        rows = self.ctx.store.block_versions(namespace, limit=limit + 1, before=before)
        more = len(rows) > limit
        rows = rows[:limit]
        return VersionPage(rows, rows[-1].number if more and rows else None)

    def version(self, label: str, number: int) -> BlockVersion:
        """Raises NotFound for an unknown block or number."""
        namespace = self.ctx.namespace(self.ctx.block(label).spec)
        found = None
        if isinstance(number, int) and not isinstance(number, bool) and 0 < number < 2**31:
            found = self.ctx.store.get_version(namespace, number)
        if found is None:
            raise NotFound(f"block {label!r} has no version {number}")
        return found

    def entry_source(self, block: Block, key: str) -> dict[str, Any] | None:
        newest = self.ctx.store.block_versions(self.ctx.namespace(block.spec), limit=1,
                                               before=None)
        for e in (newest[0].entries or []) if newest else []:
            if e["key"] == key:
                source: dict[str, Any] | None = e.get("source")
                return source
        return None

    def as_of(self, at: datetime) -> list[ContextBlock]:
        """Every block as it was at `at`: its newest version then; a block written only
        later, as declared; a block never written (or not kept in versions), as now."""
        blocks = self.ctx.blocks()
        namespaces = [self.ctx.namespace(b.spec) for b in blocks]
        found = self.ctx.store.versions_at(namespaces, at)
        out = []
        for block, namespace in zip(blocks, namespaces, strict=True):
            version, known = found[namespace]
            if version is None and known:
                version = self._base(block)
            content = shown(block.kind, version) if version is not None and (
                block.kind != "readonly") else block.provider.get()
            out.append(self.ctx._report(block, content))
        return out

    # --------------------------------------------------------------- restore
    def restore(self, label: str, number: int) -> BlockVersion:
        """Write version `number`'s value back as a new version (the newest one when
        that value is already the block's). Raises NotFound, ReadOnly, OverBudget."""
        block = self.ctx.block(label)
        if block.kind == "readonly" or not block.settable:
            raise ReadOnly(f"block {label!r} is read-only")
        old = self.version(label, number)
        if block.kind == "writable":
            self.ctx._check_budget(block, old.content or "")
        else:
            for e in old.entries or []:
                self.ctx._check_budget(block, str(e.get("content") or ""))
        with self.ctx.writing(events.context_updated(label, "restore", number=number)):
            head = self.head(block)
            if block.kind == "writable":
                block.provider.set(old.content or "")
            else:
                self._put_entries(block, old)
            made = self.record(block, head, action="restore", content=old.content,
                               restored=old)
        return made or head[0] or old

    def _put_entries(self, block: Block, old: BlockVersion) -> None:
        stored = _stored_entries(block)
        if stored is not None and old.entries is not None:
            store, namespace = stored
            now = {key: (content, description)
                   for key, content, description in store.entries(namespace)}
            wanted = {e["key"]: (str(e.get("content") or ""), str(e.get("description") or ""))
                      for e in old.entries}
            for key in now.keys() - wanted.keys():
                store.delete_entry(namespace, key)
            for key, (content, description) in wanted.items():
                if now.get(key) != (content, description):
                    store.put_entry(namespace, key, content, description)
        if block.kind == "skill" and old.loaded is not None:
            self._put_loaded(block, old.loaded)

    def _put_loaded(self, block: Block, keys: Sequence[str]) -> None:
        current = set(self._loaded(block) or [])
        for key in current - set(keys):
            self.ctx.store.set_skill_state(self.ctx.session_id, block.label, key, loaded=False)
        for key in set(keys) - current:
            self.ctx.store.set_skill_state(self.ctx.session_id, block.label, key, loaded=True)
