"""The storage boundary: what the engine needs from a database.

Implemented once, with the Django ORM and raw SQL where the ORM cannot express the
work, by `sessions_app.storage.OrmStorage`. The engine names it by dotted path, as
Django names its session engine, so memory_core never imports the web app.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from .embedding import Vector
from .messages import Message, NewMessage, SessionInfo
from .search import SearchHit
from .snapshot import SessionSnapshot
from .tree import Compaction, PathPage, TreeRow
from .versions import BlockVersion

DEFAULT_STORAGE = "sessions_app.storage.OrmStorage"


class Appended(NamedTuple):
    """What `SessionStorage.append` stored, and what the write learnt doing it."""

    message: Message
    existed: bool  # the id was stored already (an unchanged replay, or rewritten: upsert)
    branch: bool  # it has a sibling: its parent had a child (roots: the session a message)


class EncodedPath(list[Message]):
    """An encoded path (`path(..., encoded=True)`) as stored, with `json`: the JSON array
    of its messages in Message.to_dict's shape, when the storage keeps one (else None).
    It describes the list as returned: a caller that changes the list drops it."""

    __slots__ = ("json",)

    def __init__(self, messages: Any = (), json: bytes | None = None) -> None:
        super().__init__(messages)
        self.json = json


class StoredPrompt(Protocol):
    """Read-only: the engine reads a stored prompt, never changes it."""

    @property
    def text(self) -> str: ...

    @property
    def sections(self) -> dict[str, str]: ...

    @property
    def frozen_at(self) -> Any: ...


class ContextStorage(Protocol):
    """What context blocks need from a database. Keys and namespaces are already scoped
    (session or agent) by the engine."""

    def session_blocks(self, session_id: str) -> list[tuple[str, dict[str, Any], bool]]:
        """(label, spec, removed) in declaration order."""

    def save_session_block(
        self, session_id: str, label: str, spec: dict[str, Any], *, removed: bool = False
    ) -> None: ...

    def get_value(self, key: str) -> str | None: ...

    def set_value(self, key: str, content: str) -> None: ...

    def put_entry(self, namespace: str, key: str, content: str, description: str) -> None: ...

    def get_entry(self, namespace: str, key: str) -> tuple[str, str] | None:
        """(content, description)."""

    def list_entries(self, namespace: str) -> list[tuple[str, str]]:
        """(key, description), by key."""

    def entries(self, namespace: str) -> list[tuple[str, str, str]]:
        """(key, content, description), by key."""

    def count_entries(self, namespace: str) -> int: ...

    def search_entries(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, str, str, Any, float]]:
        """(key, description, content, updated_at, score), best first."""

    def get_prompt(self, session_id: str) -> StoredPrompt | None: ...

    def save_prompt(self, session_id: str, text: str, sections: dict[str, str]) -> Any:
        """Store the frozen prompt; returns its frozen_at."""

    def set_skill_state(self, session_id: str, label: str, key: str, *, loaded: bool) -> None: ...

    def skill_states(self, session_id: str) -> list[tuple[str, str, bool, Any, Any]]:
        """(label, key, loaded, loaded_at, unloaded_at)."""

    def delete_entry(self, namespace: str, key: str) -> None: ...

    # --- block versions (versions.py) ------------------------------------------
    def version_head(
        self, namespace: str, session_id: str
    ) -> tuple[BlockVersion | None, str | None]:
        """(the block's newest version or None, the session's latest leaf id) in one
        read, holding the block for this transaction's write (a row lock where the
        database has them), so version numbers never collide."""

    def add_version(
        self, namespace: str, version: BlockVersion, *, agent_id: str, keep: int
    ) -> BlockVersion:
        """Store the version (created_at: now) and prune the block's oldest beyond
        `keep`; returns it as stored."""

    def block_versions(
        self, namespace: str, *, limit: int, before: int | None
    ) -> list[BlockVersion]:
        """Newest first, numbers below `before` when given."""

    def get_version(self, namespace: str, number: int) -> BlockVersion | None: ...

    def versions_at(
        self, namespaces: Sequence[str], at: Any
    ) -> dict[str, tuple[BlockVersion | None, bool]]:
        """Per namespace: (its newest version created at or before `at`, whether it has
        any version at all), in one query."""

    def restore_versions(
        self, namespace: str, versions: Sequence[BlockVersion], *, agent_id: str
    ) -> None:
        """Store versions as given (numbers, sources, times), in one bulk write."""


class SessionStorage(ContextStorage, Protocol):
    """Registry calls take the agent id; message calls take a session id that the
    engine has already checked belongs to that agent."""

    def release(self) -> None:
        """Free what this thread holds (e.g. its database connection): async callers run
        turns in worker threads that end afterwards."""

    def transaction(self, *, bulk_writes: bool = False) -> AbstractContextManager[Any]:
        """One transaction around a write and the events it emits (nested: a savepoint).
        bulk_writes: many bulk writes follow (an import of many conversations), so the
        storage may do once, at the end, what each would do (still inside it)."""

    def set_status(self, session_id: str, status: str) -> None:
        """What the session is doing now (idle, thinking, compacting, error)."""

    def is_branch(self, session_id: str, message: Message) -> bool:
        """Whether a stored message has a sibling besides itself (it made a branch); the
        session's roots are siblings of each other."""

    def set_stop(self, session_id: str, *, requested: bool) -> bool:
        """requested=True: record a stop request for the running turn, only while the
        session's status is "thinking" (else store nothing and return False).
        requested=False: forget any request (a turn starting). Returns whether stored."""

    def stop_requested(self, session_id: str) -> bool:
        """Whether a stop was requested since the running turn started."""

    def claim_turn(
        self, session_id: str, turn_id: str, *, status: str,
        stale_before: datetime | None = None, replacing: str | None = None,
    ) -> bool:
        """Take the session's turn claim for turn_id in one statement (memory_core/busy.py):
        when no turn holds it or its holder was last seen before stale_before, or (with
        replacing) from that holder only. Sets the status, forgets any stop request.
        Returns whether taken."""

    def turn_holder(self, session_id: str) -> tuple[str | None, datetime | None]:
        """(the claim's turn id or None, when it was last refreshed). Raises NotFound."""

    def touch_turn(self, session_id: str, turn_id: str) -> None:
        """The claim's holder is alive: refresh it (nothing when turn_id lost it)."""

    def release_turn(self, session_id: str, turn_id: str, *, status: str) -> bool:
        """Free the claim and set the status, only while turn_id holds it."""

    # --- registry -------------------------------------------------------------
    def create_session(
        self, agent_id: str, *, name: str, parent_session_id: str | None,
        model: str | None, source: str | None,
    ) -> SessionInfo:
        """Raises NotFound when parent_session_id is not one of the agent's sessions."""

    def get_session(self, agent_id: str, session_id: str) -> SessionInfo | None: ...

    def list_sessions(self, agent_id: str) -> list[SessionInfo]:
        """Newest `updated_at` first."""

    def update_session(self, agent_id: str, session_id: str, **fields: Any) -> SessionInfo:
        """Set registry fields (name, model, source, end_reason). Raises NotFound."""

    def delete_session(self, agent_id: str, session_id: str) -> bool:
        """Remove the session and everything of it; False when it did not exist."""

    def restore_session(self, agent_id: str, snapshot: SessionSnapshot) -> SessionInfo:
        """Store a whole session in one transaction (block contents aside): registry
        fields, counters and times as given; blocks; messages in one bulk copy; overlays;
        skill states; the frozen prompt. Keeps the snapshot's ids unless the session id or
        an overlay id is taken; drops a parent_session_id that is not the agent's."""

    def imported_session(self, agent_id: str, source_format: str,
                         conversation_id: str) -> str | None:
        """The session a conversation of another tool was imported into for this agent
        (memory_core.imports), while that session exists; else None."""

    def store_imported(self, agent_id: str, snapshot: SessionSnapshot, *, source_format: str,
                       conversation_id: str) -> SessionInfo:
        """restore_session for a conversation of another tool, recorded as the import of
        (source_format, conversation_id): the session starts with the agent's block
        templates (the snapshot's blocks are not used). Raises Conflict when that
        conversation was recorded meanwhile."""

    def add_usage(
        self, agent_id: str, session_id: str, *, input_tokens: int, output_tokens: int, cost: float
    ) -> SessionInfo:
        """Accumulate usage counters. Raises NotFound."""

    # --- messages -------------------------------------------------------------
    def append(
        self, session_id: str, new: NewMessage, *, parent_id: str | None,
        if_latest: str | None = None, upsert: bool = False, root: bool = False,
    ) -> Appended:
        """Store under parent_id, else (root: with no parent) under the latest leaf,
        serialised per session.

        Raises NotFound (session or parent), Conflict (same id with other content
        unless upsert; if_latest that is no longer the leaf). The write tells whether
        the message started a branch (`Appended.branch`): nobody asks again.
        """

    def append_chain(
        self, session_id: str, messages: Sequence[NewMessage], *, parent_id: str | None,
        root: bool = False,
    ) -> list[Message]:
        """Append each under the previous one, atomically: all or nothing. The first goes
        under parent_id, else (root: with no parent) under the latest leaf."""

    def update(self, session_id: str, new: NewMessage) -> Message:
        """Replace the content of a stored message. Raises NotFound."""

    def delete_messages(self, session_id: str, ids: Sequence[str]) -> int:
        """Delete, re-attaching children to the nearest kept ancestor; drops touched overlays."""

    def clear(self, session_id: str) -> None: ...

    def get_message(self, session_id: str, message_id: str) -> Message | None: ...

    def latest_leaf(self, session_id: str) -> Message | None: ...

    def children(self, session_id: str, message_id: str | None) -> list[Message]:
        """Oldest first; message_id None: the session's roots. Raises NotFound for an
        unknown message."""

    def newest_leaf_under(self, session_id: str, message_id: str) -> Message:
        """The last-inserted message of the subtree rooted at message_id (a leaf: children
        come after their parents), in one query. Raises NotFound."""

    def path_page(
        self, session_id: str, leaf_id: str | None, *, limit: int, before_id: str | None,
        on_path: bool = False,
    ) -> PathPage:
        """The last `limit` messages of the path to leaf_id (default: the latest leaf), or
        the `limit` ancestors of before_id, oldest first, with their siblings' positions;
        a fixed number of queries whatever the path's length. on_path: before_id must be
        the leaf or one of its ancestors (else InvalidInput). Raises NotFound."""

    def views(self, session_id: str) -> tuple[list[Compaction], dict[tuple[str, str], Any]]:
        """What changes how the session's paths read, in one query: its overlays (oldest
        first) and unloaded skills ((label, key) -> unloaded_at), as path() gives them."""

    def path(
        self, session_id: str, leaf_id: str | None, *, with_overlays: bool,
        encoded: bool = False,
    ) -> tuple[list[Message], list[Compaction], dict[tuple[str, str], Any]]:
        """Root-to-leaf path (default leaf: the latest) in one query; with_overlays adds,
        in one more, the session's overlays (oldest first) and its unloaded skills
        ((label, key) -> unloaded_at). encoded: parts and metadata stay the stored JSON,
        as orjson.Fragment, for a response that splices them in, and created_at may be
        its ISO 8601 text; the path may come as an EncodedPath carrying its whole JSON.
        Raises NotFound for an unknown leaf."""

    def path_length(self, session_id: str, leaf_id: str | None) -> int: ...

    def tree(self, session_id: str) -> list[TreeRow]: ...

    def all_messages(self, session_id: str) -> list[Message]:
        """Every message of the session in insertion order (parents before children)."""

    def message_count(self, session_id: str) -> int: ...

    def continue_session(self, agent_id: str, session_id: str, *, name: str) -> SessionInfo:
        """A new session with parent_session_id set and the same blocks and contents."""

    def fork(
        self, agent_id: str, session_id: str, at_message_id: str, *, name: str
    ) -> SessionInfo:
        """Copy the path to at_message_id into a new session. Raises NotFound."""

    # --- compactions ----------------------------------------------------------
    def add_compaction(
        self, session_id: str, *, summary: str, from_id: str, to_id: str
    ) -> Compaction:
        """Raises NotFound for unknown endpoints, InvalidInput when `from` is not on `to`'s path."""

    def get_compactions(self, session_id: str) -> list[Compaction]: ...

    def remove_compaction(self, session_id: str, compaction_id: str) -> bool: ...

    def compaction_state(self, session_id: str) -> tuple[str, Any, Any]:
        """(last error, failed_at, retry_at) of auto-compaction."""

    def set_compaction_state(
        self, session_id: str, *, error: str, failed_at: Any, retry_at: Any
    ) -> None: ...

    def check_state(self, session_id: str) -> tuple[Any, str | None, int]:
        """(retry_at, estimate_leaf_id, estimate_tokens) for the check after an append."""

    def set_estimate(self, session_id: str, leaf_id: str | None, tokens: int) -> None:
        """Remember the token estimate of the path to leaf_id (None forgets it)."""

    # --- search ---------------------------------------------------------------
    def search(
        self, *, agent_id: str, session_id: str | None, terms: Sequence[str], limit: int,
        exclude_session_id: str | None = None,
    ) -> list[SearchHit]:
        """Messages holding any of `terms`, in one session or (session_id None) all the
        agent's sessions but exclude_session_id; all-terms matches first, then BM25, then
        newest first."""

    def dense_scan(
        self, *, agent_id: str, model: str, session_id: str | None = None,
        exclude_session_id: str | None = None,
    ) -> DenseScan:
        """Search by meaning, first half: the agent's vectors by `model` as stored now
        (scoped as search()), read on this thread; DenseScan.scan then ranks them against
        the question on any thread (no database) while the words are ranked here, and
        dense_hits reads the messages it found (this thread)."""

    def dense_hits(self, best: Sequence[tuple[int, float]]) -> list[SearchHit]:
        """The messages of DenseScan.scan's (key, cosine) pairs as hits, in that order
        (those deleted since left out), score the cosine."""


class DenseScan(Protocol):
    """An agent's vectors as read for one search: `size` vectors in scope (0: nothing to
    compare a question with), `pending` of the agent's messages still waiting for one."""

    size: int
    pending: int

    def scan(self, query: Vector, *, limit: int) -> list[tuple[int, float]]:
        """(message key, cosine) of the `limit` nearest, best first. Touches no database,
        so any thread may call it. Raises WrongDimension."""


def load_storage(dotted: str = DEFAULT_STORAGE) -> SessionStorage:
    module, _, name = dotted.rpartition(".")
    factory = getattr(importlib.import_module(module), name)
    storage: SessionStorage = factory()
    return storage
