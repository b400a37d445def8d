"""OrmStorage: memory_core's SessionStorage on Django's database.

One class, composed of parts that each hold one kind of row and receive the parts they
need when built (no mixins calling each other through `self`):

- paths.py     message reads: one message, leaf, children, the path CTE, tree, search
- branches.py  branch navigation: the newest leaf under a message, path pages
- messages.py  message writes: append, update, delete, clear, and `copy_path` (fork, import)
- overlays.py  compaction overlays
- registry.py  session rows: create, list, update, delete, usage, fork, continue
- imported.py  sessions imported from other tools, each recorded once per agent
- context.py   blocks, values, entries, frozen prompts, skill states
- versions.py  block versions: head, insert and prune, pages, as-of reads, copies
- sql.py       statement text, shared with the benchmarks' baselines
- dense.py     search by meaning: the messages nearest a question (vectors.py, vector_index.py)
- rows.py      the message row to write and the search scope tokens (vendor-neutral)

Where the SQL differs by vendor, a dialect in storage/vendors/ owns the whole operation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from memory_core.busy import BUSY
from memory_core.errors import NotFound
from memory_core.messages import now

from .. import models
from . import sql
from .branches import Branches
from .context import ContextRows
from .dense import Dense
from .imported import Imported
from .messages import Messages, engine_transaction
from .overlays import Overlays
from .paths import Paths
from .registry import Registry
from .vendors.chosen import current
from .versions import VersionRows


class _On:
    """`name = _On("part")` on OrmStorage: the attribute is `self.part.name`."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, storage: Any, owner: type | None = None) -> Any:
        if storage is None:
            return self
        return getattr(getattr(storage, self.part), self.name)


class OrmStorage:
    """The one SessionStorage implementation; each method lives in the part named."""

    def __init__(self) -> None:
        self.paths = Paths()
        self.branches = Branches()
        self.overlays = Overlays(self.paths)
        self.versions = VersionRows()
        self.context = ContextRows(self.versions)
        self.messages = Messages(self.versions)
        self.dense = Dense()
        self.registry = Registry(self.paths, self.messages, self.context)
        self.imported = Imported(self.registry, self.context)

    def release(self) -> None:
        """Close this thread's connection: async callers run turns in worker threads."""
        connection.close()

    def transaction(self) -> Any:
        """The engine's write and the events it emits commit together (events.py)."""
        return engine_transaction()

    def set_status(self, session_id: str, status: str) -> None:
        # A busy status is fresh news of the work: reads show it (busy.shown_status).
        seen = ", turn_seen_at = %s" if status in BUSY else ""
        params = [status, current().db_datetime(now())] if seen else [status]
        with connection.cursor() as cur:
            cur.execute(f"UPDATE arbor_session SET status = %s{seen} WHERE id = %s",
                        [*params, session_id])

    def set_stop(self, session_id: str, *, requested: bool) -> bool:
        with connection.cursor() as cur:
            if requested:  # only a running turn can be stopped
                cur.execute("UPDATE arbor_session SET stop_requested_at = %s "
                            "WHERE id = %s AND status = 'thinking'",
                            [current().db_datetime(now()), session_id])
            else:
                cur.execute("UPDATE arbor_session SET stop_requested_at = NULL "
                            "WHERE id = %s AND stop_requested_at IS NOT NULL", [session_id])
            return bool(cur.rowcount)

    def stop_requested(self, session_id: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT 1 FROM arbor_session WHERE id = %s "
                        "AND stop_requested_at IS NOT NULL", [session_id])
            return cur.fetchone() is not None

    def claim_turn(self, session_id: str, turn_id: str, *, status: str,
                   stale_before: datetime | None = None, replacing: str | None = None) -> bool:
        # One conditional UPDATE: Postgres re-checks the WHERE on the row it locked, and
        # SQLite runs one writer at a time, so of two claims at once exactly one wins.
        db = current().db_datetime
        if replacing is not None:
            held, params = "turn_id = %s", [replacing]
        else:
            held = "(turn_id IS NULL OR turn_seen_at IS NULL OR turn_seen_at < %s)"
            params = [db(stale_before or now())]
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET status = %s, turn_id = %s, turn_seen_at = %s, "
                        f"stop_requested_at = NULL WHERE id = %s AND {held}",
                        [status, turn_id, db(now()), session_id, *params])
            return bool(cur.rowcount)

    def turn_holder(self, session_id: str) -> tuple[str | None, datetime | None]:
        row = (models.Session.objects.filter(id=session_id)
               .values_list("turn_id", "turn_seen_at").first())
        if row is None:
            raise NotFound(f"session {session_id} not found")
        return row[0], row[1]

    def touch_turn(self, session_id: str, turn_id: str) -> None:
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET turn_seen_at = %s WHERE id = %s AND turn_id = %s",
                        [current().db_datetime(now()), session_id, turn_id])

    def release_turn(self, session_id: str, turn_id: str, *, status: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET status = %s, turn_id = NULL "
                        "WHERE id = %s AND turn_id = %s", [status, session_id, turn_id])
            return bool(cur.rowcount)

    def is_branch(self, session_id: str, message: Any) -> bool:
        """Whether a stored message has a sibling besides itself (it started a branch);
        roots are siblings of each other."""
        with connection.cursor() as cur:
            if message.parent_id is None:
                cur.execute(f"SELECT 1 FROM arbor_message WHERE session_key = {sql.SESSION_KEY} "
                            "AND parent_seq IS NULL AND message_id <> %s LIMIT 1",
                            [session_id, message.id])
                return cur.fetchone() is not None
            cur.execute(
                "SELECT 1 FROM arbor_message p JOIN arbor_message c ON c.parent_seq = p.seq "
                f"WHERE p.session_key = {sql.SESSION_KEY} AND p.message_id = %s "
                "AND c.message_id <> %s LIMIT 1",
                [session_id, message.parent_id, message.id])
            return cur.fetchone() is not None

    # registry.py
    create_session = _On("registry")
    get_session = _On("registry")
    list_sessions = _On("registry")
    update_session = _On("registry")
    delete_session = _On("registry")
    restore_session = _On("registry")
    add_usage = _On("registry")
    continue_session = _On("registry")
    fork = _On("registry")
    compaction_state = _On("registry")
    set_compaction_state = _On("registry")
    check_state = _On("registry")
    set_estimate = _On("registry")

    # imported.py
    imported_session = _On("imported")
    store_imported = _On("imported")

    # messages.py
    append = _On("messages")
    append_chain = _On("messages")
    update = _On("messages")
    delete_messages = _On("messages")
    clear = _On("messages")

    # paths.py
    get_message = _On("paths")
    latest_leaf = _On("paths")
    children = _On("paths")
    path = _On("paths")
    path_length = _On("paths")
    tree = _On("paths")
    all_messages = _On("paths")
    message_count = _On("paths")
    search = _On("paths")

    # dense.py (search by meaning)
    nearest = _On("dense")

    # branches.py
    newest_leaf_under = _On("branches")
    path_page = _On("branches")
    views = _On("branches")

    # overlays.py
    add_compaction = _On("overlays")
    get_compactions = _On("overlays")
    remove_compaction = _On("overlays")

    # context.py
    session_blocks = _On("context")
    save_session_block = _On("context")
    get_value = _On("context")
    set_value = _On("context")
    put_entry = _On("context")
    get_entry = _On("context")
    list_entries = _On("context")
    entries = _On("context")
    count_entries = _On("context")
    search_entries = _On("context")
    get_prompt = _On("context")
    save_prompt = _On("context")
    set_skill_state = _On("context")
    skill_states = _On("context")
    delete_entry = _On("context")

    # versions.py
    version_head = _On("versions")
    add_version = _On("versions")
    block_versions = _On("versions")
    get_version = _On("versions")
    versions_at = _On("versions")
    restore_versions = _On("versions")
