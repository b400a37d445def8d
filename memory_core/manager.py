"""SessionManager: the registry of one agent's sessions, and the door to each session."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any

from asgiref.sync import sync_to_async

from . import autocompact as auto
from . import events
from .blocks import BlockSpec
from .compaction import CompactFunction
from .config import CompactionListener, ErrorHandler, SessionConfig, default_config
from .errors import InvalidInput, NotFound
from .events import UPDATED_FIELDS, USAGE_FIELDS, EventSink, UpdatedField
from .hybrid import SearchResults, search_messages
from .inputs import (
    agent_id_of,
    check_id,
    check_usage,
    end_reason,
    optional_id,
    optional_text,
    session_name,
)
from .limits import MAX_NAME
from .messages import Message, SessionInfo
from .providers.history import HistorySearch
from .search import SearchHit, clamp_limit
from .session import MessageInput, Session
from .storage import DEFAULT_STORAGE, SessionStorage, load_storage
from .tokens import TokenCounter
from .tools import Tool, export, session_search_tool
from .tree import SUMMARY_PREFIX, Compaction


class SessionManager:
    """All sessions of one agent. Build it with `SessionManager.for_agent(agent)`."""

    def __init__(self, agent_id: str, storage: SessionStorage) -> None:
        self.agent_id = agent_id
        self.storage = storage
        self.config = default_config()

    # ------------------------------------------------------------ builder
    def with_context(self, label: str, **options: Any) -> SessionManager:
        """Declare a block for every session of this manager (provider=... for your own)."""
        spec = BlockSpec.build(label, **options)
        self.config.declared[spec.label] = spec
        return self

    def with_events(self, sink: EventSink) -> SessionManager:
        """Where every write of this manager's sessions announces itself (default: the
        sink the host installed, e.g. Arbor's Channels sink; else none)."""
        self.config.events = sink
        return self

    def with_cached_prompt(self) -> SessionManager:
        """Frozen prompts are always stored in the database, so every process and worker
        reads the same bytes; kept for parity with the reference builder."""
        return self

    def with_token_counter(self, counter: TokenCounter) -> SessionManager:
        """Count tokens with `counter(text) -> int` for budgets, prompts and compaction."""
        self.config.token_counter = counter
        return self

    def with_llm(self, client: Any) -> SessionManager:
        """The model for chat() and the LLM summariser (default: `llm.default_llm()`)."""
        self.config.llm = client
        return self

    def on_compaction(self, fn: CompactFunction) -> SessionManager:
        """The compact function, e.g. create_compact_function(summarize, ...)."""
        if not callable(fn):
            raise InvalidInput("on_compaction takes a compact function")
        self.config.compact_function = fn
        return self

    def compact_after(
        self, threshold: int, token_counter: TokenCounter | None = None,
        cooldown_seconds: float | None = None,
    ) -> SessionManager:
        """After each append, compact when history + frozen prompt exceed `threshold` tokens."""
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
            raise InvalidInput("threshold must be a positive number of tokens")
        self.config.compact_threshold = threshold
        self.config.threshold_counter = token_counter
        if cooldown_seconds is not None:
            self.config.cooldown_seconds = float(cooldown_seconds)
        return self

    def on_compaction_error(self, handler: ErrorHandler) -> SessionManager:
        """Called with the exception when an automatic compaction fails."""
        self.config.error_handlers.append(handler)
        return self

    def on_compacted(self, listener: CompactionListener) -> SessionManager:
        """Called with each new overlay after a successful compaction."""
        self.config.compaction_listeners.append(listener)
        return self

    def with_searchable_history(self, label: str = "history") -> SessionManager:
        """A search block over all of the agent's sessions."""
        return self.with_context(
            label, description="Cross-session conversation history",
            provider=HistorySearch(self),
        )

    @classmethod
    def for_agent(
        cls, agent: Any, *, storage: SessionStorage | None = None,
        storage_path: str = DEFAULT_STORAGE, config: SessionConfig | None = None,
    ) -> SessionManager:
        """A manager for an Agent (model instance or id), on the ORM storage by default,
        starting from `config` (default: `default_config()`, which the host installs)."""
        manager = cls(agent_id_of(agent), storage if storage is not None else load_storage(storage_path))
        if config is not None:
            manager.config = config
        return manager

    # ----------------------------------------------------------------- registry
    def create(
        self, name: str | None = None, parent_session_id: str | None = None,
        model: str | None = None, source: str | None = None,
    ) -> SessionInfo:
        """A new session; it starts with the agent's block templates."""
        parent = optional_id(parent_session_id, "parent_session_id")
        model, source = optional_text(model, "model"), optional_text(source, "source")
        with self.storage.transaction():
            info = self.storage.create_session(self.agent_id, name=session_name(name),
                                               parent_session_id=parent, model=model,
                                               source=source)
            self.announce_new(info.id)
        return info

    def announce_new(self, session_id: str) -> None:
        """A new session (created, forked, continued, imported) announces itself with its
        status, inside the transaction that stored it: its first event, seq 1."""
        self.bind(session_id).emit(events.session_status("idle"))

    def _changed(self, session_id: str, info: SessionInfo,
                 fields: Iterable[UpdatedField]) -> None:
        self.bind(session_id).emit(events.session_updated(info, fields))

    def get(self, session_id: str) -> SessionInfo | None:
        if not isinstance(session_id, str) or not session_id:
            return None
        return self.storage.get_session(self.agent_id, session_id)

    def list(self) -> builtins.list[SessionInfo]:
        """The agent's sessions, most recently updated first."""
        return self.storage.list_sessions(self.agent_id)

    def rename(self, session_id: str, name: str) -> SessionInfo:
        session_id = check_id(session_id, "session_id")
        with self.storage.transaction():
            info = self.storage.update_session(self.agent_id, session_id, name=session_name(name))
            self.bind(session_id).emit(events.session_renamed(info.name))
        return info

    def delete(self, session_id: str) -> bool:
        """Delete a session with its messages, overlays and search rows."""
        session_id = check_id(session_id, "session_id")
        with self.storage.transaction():
            if self.storage.get_session(self.agent_id, session_id) is None:
                return False
            # Announced before the rows go: the sink numbers it from the session's row
            # (its outbox row goes with the session; the frame is still published).
            self.bind(session_id).emit(events.session_deleted())
            return self.storage.delete_session(self.agent_id, session_id)

    def delete_agent_sessions(self) -> int:
        """Delete every session of the agent, each as delete() does; how many were deleted.

        The caller deletes the agent itself, in the same transaction (admin and API do)."""
        return sum(self.delete(info.id) for info in self.list())

    def end(self, session_id: str, reason: str) -> SessionInfo:
        """Mark a session ended (end_reason, at most 100 characters)."""
        return self._update(check_id(session_id, "session_id"), end_reason=end_reason(reason))

    def _update(self, session_id: str, **fields: Any) -> SessionInfo:
        with self.storage.transaction():
            info = self.storage.update_session(self.agent_id, session_id, **fields)
            self._changed(session_id, info, [f for f in UPDATED_FIELDS if f in fields])
        return info

    def update(self, session_id: str, *, model: str | None = None,
               source: str | None = None) -> SessionInfo:
        """Set a session's model and/or source."""
        fields = {k: optional_text(v, k) for k, v in (("model", model), ("source", source))
                  if v is not None}
        if not fields:
            raise InvalidInput("give model or source")
        return self._update(check_id(session_id, "session_id"), **fields)

    def get_session(self, session_id: str) -> Session:
        """The Session object for an id of this agent. Raises NotFound."""
        if self.get(session_id) is None:
            raise NotFound(f"session {session_id} not found")
        return self.bind(session_id)

    def bind(self, session_id: str) -> Session:
        """A Session for an id the caller has already checked belongs to this agent, without
        checking again. Message calls trust that id: never bind an id you have not checked."""
        session = Session(self.storage, agent_id=self.agent_id, session_id=session_id,
                          config=self.config)
        session._extra_tools.append(self._session_search_tool(session=session))
        return session

    def _session_search_tool(self, *, session: Session | None = None) -> Tool:
        def search(query: str, limit: int, scope: str) -> Sequence[SearchHit]:
            if scope == "agent" or session is None:
                # "Past sessions" from inside a session means the others: its own messages
                # include the very question being asked and this tool call.
                return self.search(query, limit, full=False,
                                   exclude_session_id=session.id if session else None)
            # "path": the branch the running turn stands on (else the latest leaf's).
            return session.search(query, limit, full=False, scope=scope,
                                  leaf_id=session.turn_leaf if scope == "path" else None)

        return session_search_tool(search, in_session=session is not None)

    def tools(self, session_id: str | None = None, format: str | None = None) -> builtins.list[Any]:
        """session_search, plus the tools of a session when one is named."""
        if session_id is None:
            return export([self._session_search_tool()], format)
        return self.get_session(session_id).tools(format)

    def add_usage(
        self, session_id: str, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0
    ) -> SessionInfo:
        """Add to the session's token and cost totals.

        Raises InvalidInput, changing nothing, when a total would pass its limit
        (MAX_TOKEN_TOTAL tokens, MAX_COST cost).
        """
        check_usage(input_tokens=input_tokens, output_tokens=output_tokens, cost=cost)
        session_id = check_id(session_id, "session_id")
        with self.storage.transaction():
            info = self.storage.add_usage(self.agent_id, session_id, input_tokens=input_tokens,
                                          output_tokens=output_tokens, cost=float(cost))
            self._changed(session_id, info, USAGE_FIELDS)
        return info

    # ----------------------------------------------------------------- messages
    def append(
        self, session_id: str, message: MessageInput, parent_id: str | None = None,
        *, if_latest: str | None = None, root: bool = False,
    ) -> Message:
        """Session.append_message (root=True: a new root)."""
        return self.get_session(session_id).append_message(message, parent_id,
                                                           if_latest=if_latest, root=root)

    def upsert(self, session_id: str, message: MessageInput, parent_id: str | None = None,
               *, root: bool = False) -> Message:
        return self.get_session(session_id).upsert_message(message, parent_id, root=root)

    def append_all(
        self, session_id: str, messages: Iterable[MessageInput], parent_id: str | None = None,
        *, root: bool = False,
    ) -> builtins.list[Message]:
        """Append messages in order, each the parent of the next; all or nothing. The
        first goes under parent_id, else the latest leaf (root=True: a new root)."""
        return self.get_session(session_id).append_messages(messages, parent_id, root=root)

    def get_history(
        self, session_id: str, leaf_id: str | None = None, raw: bool = False
    ) -> builtins.list[Message]:
        return self.get_session(session_id).get_history(leaf_id, raw)

    def get_message_count(self, session_id: str) -> int:
        return self.get_session(session_id).get_message_count()

    def clear_messages(self, session_id: str) -> None:
        self.get_session(session_id).clear_messages()

    def delete_messages(self, session_id: str, ids: Iterable[str]) -> int:
        return self.get_session(session_id).delete_messages(ids)

    def fork(self, session_id: str, at_message_id: str, name: str | None = None) -> SessionInfo:
        """Copy the path up to at_message_id into a new session (parent_session_id set).

        Copies keep their ids and record `metadata.forked_from`. Raises NotFound.
        """
        source, at = check_id(session_id, "session_id"), check_id(at_message_id, "at_message_id")
        with self.storage.transaction():
            info = self.storage.fork(self.agent_id, source, at, name=session_name(name))
            self.announce_new(info.id)
        return info

    def add_compaction(
        self, session_id: str, summary: str, from_id: str, to_id: str
    ) -> Compaction:
        return self.get_session(session_id).add_compaction(summary, from_id, to_id)

    def get_compactions(self, session_id: str) -> builtins.list[Compaction]:
        return self.get_session(session_id).get_compactions()

    def compact_and_split(
        self, session_id: str, summary: str | None = None, name: str | None = None
    ) -> SessionInfo:
        """End a session (end_reason "compaction") and continue in a new one.

        The continuation has parent_session_id set, the same blocks, and the summary as its
        first message (written by the configured summariser when not given).
        """
        session = self.get_session(session_id)
        info = self.get(session_id)
        assert info is not None
        if summary is None:
            history = session.get_history()
            summary = auto.summarize_all(session, history) if history else ""
        if not isinstance(summary, str):
            raise InvalidInput("summary must be a string")
        new_name = session_name(name) if name is not None else f"{info.name or 'session'} (continued)"[:MAX_NAME]
        with self.storage.transaction():
            continuation = self.storage.continue_session(self.agent_id, session_id, name=new_name)
            self.announce_new(continuation.id)
        if summary.strip():
            self.get_session(continuation.id).append_message({
                "role": "system",
                "parts": [{"type": "text", "text": SUMMARY_PREFIX + summary.strip()}],
                "metadata": {"compaction": {"from_session_id": session_id}},
            })
        self._update(session_id, end_reason="compaction")
        result = self.get(continuation.id)
        assert result is not None
        return result

    def search(
        self, query: str, limit: int = 20, *, full: bool = True,
        exclude_session_id: str | None = None,
    ) -> SearchResults:
        """Messages of all the agent's sessions (but exclude_session_id) matching `query`
        by its words or meaning, best first, each with a snippet; fused, re-ranked and
        full=False as in Session.search."""
        exclude = optional_id(exclude_session_id, "exclude_session_id")
        factory = self.config.embedder
        return search_messages(
            self.storage, factory() if factory is not None else None, agent_id=self.agent_id,
            query=query, limit=clamp_limit(limit, 20), full=full, session_id=None,
            exclude_session_id=exclude)

    # ------------------------------------------------------- async twins
    acreate = sync_to_async(create)
    aget = sync_to_async(get)
    alist = sync_to_async(list)
    arename = sync_to_async(rename)
    adelete = sync_to_async(delete)
    adelete_agent_sessions = sync_to_async(delete_agent_sessions)
    aend = sync_to_async(end)
    aupdate = sync_to_async(update)
    aget_session = sync_to_async(get_session)
    aadd_usage = sync_to_async(add_usage)
    aappend = sync_to_async(append)
    aupsert = sync_to_async(upsert)
    aappend_all = sync_to_async(append_all)
    aget_history = sync_to_async(get_history)
    aget_message_count = sync_to_async(get_message_count)
    aclear_messages = sync_to_async(clear_messages)
    adelete_messages = sync_to_async(delete_messages)
    afork = sync_to_async(fork)
    aadd_compaction = sync_to_async(add_compaction)
    aget_compactions = sync_to_async(get_compactions)
    asearch = sync_to_async(search)
    atools = sync_to_async(tools)
    acompact_and_split = sync_to_async(compact_and_split)
