"""Session: one conversation's tree, read and written through a SessionStorage."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from asgiref.sync import sync_to_async

from . import autocompact as auto
from . import events
from .config import SessionConfig, default_config
from .context import SessionContext
from .context_methods import ContextMethods
from .errors import InvalidInput, NotFound
from .events import Event, Payload, Status
from .history_page import history_page
from .hybrid import SCOPES, SearchResults, search_messages
from .inputs import Placement, as_list, check_id, optional_id, page_limit, parent_choice, placement
from .message_rules import CheckedMessage
from .messages import Message, NewMessage, prepare
from .search import clamp_limit
from .storage import SessionStorage
from .tools import Tool
from .tree import (
    Compaction,
    PathPage,
    TreeRow,
    apply_overlays,
    hide_unloaded_skills,
    leaf_paths,
)
from .turn_methods import TurnMethods

MessageInput = Message | Mapping[str, Any] | CheckedMessage


class Session(ContextMethods, TurnMethods):
    """A conversation tree. Get one from `SessionManager.get_session()`.

    Its context blocks, prompt and skills methods come from ContextMethods
    (context_methods.py), its turns' and compaction's from TurnMethods (turn_methods.py);
    the message tree's are here."""

    def __init__(
        self, storage: SessionStorage, *, agent_id: str, session_id: str,
        config: SessionConfig | None = None, extra_tools: Sequence[Tool] = (),
    ) -> None:
        self.storage = storage
        self.agent_id = agent_id
        self.id = session_id
        self.config = config or default_config()
        self.context = SessionContext(
            storage, agent_id=agent_id, session_id=session_id,
            declared=list(self.config.declared.values()), counter=self.config.token_counter,
            file_skills=self.config.file_skills, writing=self.writing,
            keep=self.config.block_versions,
        )
        self._extra_tools = list(extra_tools)
        self.in_turn = False
        self.turn_leaf: str | None = None  # set by a chat turn while its tools run

    def __repr__(self) -> str:
        return f"<Session {self.id}>"

    # ------------------------------------------------------------------ events
    def emit(self, payload: Payload) -> None:
        """Announce through the configured sink: the one place the engine emits. Call it
        inside the write's `storage.transaction()` (ephemeral message.delta: anywhere).
        `payload` comes from one of events.py's constructors."""
        self.config.events.emit(Event(payload.type, self.id, payload.data))

    @contextmanager
    def writing(self, payload: Payload) -> Iterator[None]:
        """The body's writes and then this event, in one transaction."""
        with self.storage.transaction():
            yield
            self.emit(payload)

    def set_status(self, status: Status) -> None:
        """Store and announce what the session is doing (idle, thinking, compacting, error)."""
        with self.writing(events.session_status(status)):
            self.storage.set_status(self.id, status)

    def _appended(self, stored: Message, *, under: str | None, root: bool = False,
                  branch: bool | None = None, into: list[Event] | None = None) -> None:
        """message.appended, and branch.created when it is not its parent's first child or
        the first root (only possible under an explicit parent or as a new root: the
        latest leaf has no children). `branch`: the answer of the write that stored it,
        when it gave one. into: collected there (as Events), not emitted."""
        payloads = [events.message_appended(stored)]
        if branch is None:
            branch = (under is not None or root) and self.storage.is_branch(self.id, stored)
        if branch:
            payloads.append(events.branch_created(stored))
        for payload in payloads:
            if into is None:
                self.emit(payload)
            else:
                into.append(Event(payload.type, self.id, payload.data))

    # ------------------------------------------------------------------ writes
    def _prepare(self, message: MessageInput) -> NewMessage:
        return prepare(message, max_tool_output=self.config.max_tool_output_chars)

    def append_message(
        self, message: MessageInput, parent_id: str | None = None, *,
        if_latest: str | None = None, root: bool = False, at: Placement | None = None,
    ) -> Message:
        """Append under parent_id, else under the latest leaf; root=True: as a new root
        (no parent), even when the session has messages.

        Appending under a message that has children makes a branch. With `if_latest`,
        refuses (Conflict) unless that message is still the latest leaf. Appending an
        existing id is idempotent for the same content and a Conflict otherwise.
        Raises NotFound for an unknown parent, InvalidInput for parent_id with root.
        `at`: the three already checked (inputs.placement), instead of them.
        """
        new = self._prepare(message)
        at = at or placement(parent_id, root, if_latest)
        with self.storage.transaction():
            stored, _, branch = self.storage.append(self.id, new, parent_id=at.parent_id,
                                                    if_latest=at.if_latest, root=at.root)
            self._appended(stored, under=at.parent_id, branch=branch)
        self._after_append(stored)
        return stored

    def upsert_message(
        self, message: MessageInput, parent_id: str | None = None, *, root: bool = False
    ) -> Message:
        """Insert (as append_message would), or replace the content of an existing
        message in place (parent kept)."""
        new = self._prepare(message)
        parent = parent_choice(parent_id, root)
        with self.storage.transaction():
            stored, existed, branch = self.storage.append(self.id, new, parent_id=parent,
                                                          upsert=True, root=root)
            if existed:
                self.emit(events.message_updated(stored))
            else:
                self._appended(stored, under=parent, branch=branch)
        self._after_append(stored)
        return stored

    def update_message(self, message: MessageInput) -> Message:
        """Replace the content of an existing message. Raises NotFound."""
        new = self._prepare(message)
        if not new.id_given:
            raise InvalidInput("update_message needs the id of the message to update")
        with self.storage.transaction():
            updated = self.storage.update(self.id, new)
            self.emit(events.message_updated(updated))
        auto.forget_estimate(self)
        return updated

    def append_messages(
        self, messages: Iterable[MessageInput], parent_id: str | None = None, *,
        root: bool = False, at: Placement | None = None,
    ) -> list[Message]:
        """Append each under the previous one, atomically; the first as append_message
        places it (root=True: a new root; `at`: both already checked)."""
        prepared = [self._prepare(m) for m in as_list(messages)]
        at = at or placement(parent_id, root)
        parent, root = at.parent_id, at.root
        with self.storage.transaction():
            stored = self.storage.append_chain(self.id, prepared, parent_id=parent, root=root)
            collected: list[Event] = []  # stored at once by a sink that can (Django's)
            for i, message in enumerate(stored):
                self._appended(message, under=parent if i == 0 else None, root=root and i == 0,
                               into=collected)
            many = getattr(self.config.events, "emit_many", None)
            if many is not None:
                many(collected)
            else:
                for event in collected:
                    self.config.events.emit(event)
        self._after_append(stored[-1] if stored else None)
        return stored

    def delete_messages(self, ids: Iterable[str]) -> int:
        """Delete messages; their children move up to the nearest kept ancestor.

        Overlays touching a deleted message are removed. Returns how many were deleted.
        """
        wanted = [check_id(i, "id") for i in as_list(ids)]
        with self.storage.transaction():
            deleted = self.storage.delete_messages(self.id, wanted)
            if deleted:
                self.emit(events.messages_deleted(list(dict.fromkeys(wanted)), deleted))
        auto.forget_estimate(self)
        return deleted

    def clear_messages(self) -> None:
        """Remove every message, overlay and search row of this session."""
        with self.writing(events.messages_cleared()):
            self.storage.clear(self.id)
        auto.forget_estimate(self)

    # ------------------------------------------------------------------- reads
    def get_message(self, message_id: str) -> Message | None:
        return self.storage.get_message(self.id, check_id(message_id, "message_id"))

    def get_history(
        self, leaf_id: str | None = None, raw: bool = False, *, encoded: bool = False
    ) -> list[Message]:
        """Root-to-leaf path (default: latest leaf), oldest first, overlays applied unless raw.

        encoded=True is for serving the path as JSON with orjson: stored messages keep
        their parts and metadata as the stored JSON text (orjson.Fragment) and created_at
        may stay ISO 8601 text, not decoded only to be encoded again; when no overlay
        applies, the result may be an EncodedPath whose `json` is the whole path, encoded.
        Raises NotFound for an unknown leaf.
        """
        leaf = optional_id(leaf_id, "leaf_id")
        path, overlays, unloaded = self.storage.path(
            self.id, leaf, with_overlays=not raw, encoded=encoded
        )
        if raw:
            return path
        if unloaded and encoded:  # hiding unloaded skills reads the parts
            path, overlays, unloaded = self.storage.path(self.id, leaf, with_overlays=True)
        shown = apply_overlays(hide_unloaded_skills(path, unloaded), overlays)
        if encoded and len(shown) == len(path) and all(map(operator.is_, shown, path)):
            return path  # no overlay applies: the path as read, with any JSON it carries
        return shown

    def get_latest_leaf(self) -> Message | None:
        return self.storage.latest_leaf(self.id)

    def get_branches(self, message_id: str | None) -> list[Message]:
        """The children of a message, oldest first (None: the session's roots, which are
        siblings of each other). Raises NotFound."""
        return self.storage.children(self.id, optional_id(message_id, "message_id"))

    def get_newest_leaf_under(self, message_id: str) -> Message:
        """The newest leaf (last created) of the subtree rooted at message_id: the message
        itself when it has no children. One query whatever the tree. Raises NotFound."""
        return self.storage.newest_leaf_under(self.id, check_id(message_id, "message_id"))

    def get_path_page(
        self, leaf_id: str | None = None, *, limit: int = 50, before_id: str | None = None
    ) -> PathPage:
        """A page of the path to leaf_id (default: the latest leaf): raw messages, oldest
        first, the last `limit` of the path or, with before_id (a message on that path),
        the `limit` just before it, with each one's SiblingInfo. Its cost does not grow
        with the path's length. before_id is not checked to be on leaf_id's path (that
        would walk it): the messages before it are its ancestors, whichever leaf.
        Raises NotFound, InvalidInput."""
        return self.storage.path_page(
            self.id, optional_id(leaf_id, "leaf_id"), limit=page_limit(limit),
            before_id=optional_id(before_id, "before_id"))

    def get_history_page(
        self, leaf_id: str | None = None, *, limit: int = 50, before_id: str | None = None,
        raw: bool = False,
    ) -> PathPage:
        """A page of what get_history(leaf_id, raw) returns: its last `limit` messages or,
        with before_id (a message on that path), the `limit` just before it; `has_more`
        when older ones exist, each stored message's SiblingInfo. A fixed number of
        queries (history_page.py). Raises NotFound (leaf_id, before_id), InvalidInput
        (limit out of range, before_id not on the path)."""
        return history_page(
            self.storage, self.id, optional_id(leaf_id, "leaf_id"), limit=page_limit(limit),
            before_id=optional_id(before_id, "before_id"), raw=bool(raw))

    def get_leaf_paths(self) -> list[tuple[str, list[Message]]]:
        """(leaf id, its path as get_history reads it) for every leaf, oldest leaf first
        (the last is the latest leaf): every branch at once, in two queries."""
        overlays, unloaded = self.storage.views(self.id)
        return [(path[-1].id, apply_overlays(hide_unloaded_skills(path, unloaded), overlays))
                for path in leaf_paths(self.storage.all_messages(self.id))]

    def get_path_length(self, leaf_id: str | None = None) -> int:
        """Messages on the path to leaf_id (default: latest leaf), before overlays."""
        return self.storage.path_length(self.id, optional_id(leaf_id, "leaf_id"))

    def get_tree(self) -> list[TreeRow]:
        return self.storage.tree(self.id)

    def get_message_count(self) -> int:
        return self.storage.message_count(self.id)

    def search(self, query: str, limit: int = 10, *, full: bool = True,
               scope: str = "session", leaf_id: str | None = None) -> SearchResults:
        """Messages of this session matching `query` by its words or, with an embedder,
        its meaning, best first, each with a snippet. Query text of any length is words:
        its first MAX_QUERY_TERMS terms count. The best candidates are fused and re-ranked
        (hybrid.py, rerank.py: corrections above what they correct, identical texts
        collapsed). full=False cuts each hit's content to MAX_HIT_CHARS (`truncated`).
        scope: "session" (default), "path" (the branch to leaf_id, default the latest
        leaf: what was said on it) or "agent" (every session of the agent).
        Raises InvalidInput (scope), NotFound (leaf_id)."""
        if scope not in SCOPES:
            raise InvalidInput(f"scope must be one of {', '.join(SCOPES)}", field="scope")
        leaf = optional_id(leaf_id, "leaf_id")
        if leaf is not None and scope != "path":
            raise InvalidInput("leaf_id needs scope=path", field="leaf_id")
        only = None
        if scope == "path":
            path = self.storage.path(self.id, leaf, with_overlays=False)[0]
            only = frozenset(m.id for m in path)
        factory = self.config.embedder
        return search_messages(
            self.storage, factory() if factory is not None else None, agent_id=self.agent_id,
            query=query, limit=clamp_limit(limit, 10), full=full,
            session_id=None if scope == "agent" else self.id, only=only)

    # ------------------------------------------------------------- compactions
    def add_compaction(self, summary: str, from_id: str, to_id: str) -> Compaction:
        """Read the path range from_id..to_id as one summary message. Nothing is deleted."""
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("summary must be a non-empty string")
        start, end = check_id(from_id, "from_id"), check_id(to_id, "to_id")
        with self.storage.transaction():
            overlay = self.storage.add_compaction(self.id, summary=summary, from_id=start,
                                                  to_id=end)
            self.emit(events.compaction_completed(overlay))
        auto.forget_estimate(self)
        return overlay

    def get_compactions(self) -> list[Compaction]:
        return self.storage.get_compactions(self.id)

    def remove_compaction(self, compaction_id: str) -> None:
        """Remove an overlay; reads show the original messages again. Raises NotFound."""
        wanted = check_id(compaction_id, "compaction_id")
        with self.storage.transaction():
            if not self.storage.remove_compaction(self.id, wanted):
                raise NotFound(f"compaction {compaction_id} not found")
            self.emit(events.compaction_removed(wanted))
        auto.forget_estimate(self)

    def _after_append(self, appended: Message | None = None) -> None:
        if self.config.compact_threshold is not None:
            auto.maybe_compact(self, appended)

    # ------------------------------------------------------- async twins
    aappend_message = sync_to_async(append_message)
    aupsert_message = sync_to_async(upsert_message)
    aupdate_message = sync_to_async(update_message)
    aappend_messages = sync_to_async(append_messages)
    adelete_messages = sync_to_async(delete_messages)
    aclear_messages = sync_to_async(clear_messages)
    aget_message = sync_to_async(get_message)
    aget_history = sync_to_async(get_history)
    aget_latest_leaf = sync_to_async(get_latest_leaf)
    aget_branches = sync_to_async(get_branches)
    aget_newest_leaf_under = sync_to_async(get_newest_leaf_under)
    aget_path_page = sync_to_async(get_path_page)
    aget_history_page = sync_to_async(get_history_page)
    aget_leaf_paths = sync_to_async(get_leaf_paths)
    aget_path_length = sync_to_async(get_path_length)
    aget_tree = sync_to_async(get_tree)
    aget_message_count = sync_to_async(get_message_count)
    asearch = sync_to_async(search)
    aadd_compaction = sync_to_async(add_compaction)
    aget_compactions = sync_to_async(get_compactions)
    aremove_compaction = sync_to_async(remove_compaction)
    aset_status = sync_to_async(set_status)
