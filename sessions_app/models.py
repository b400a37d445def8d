"""Arbor's tables. Hot paths use raw SQL (storage.py, dialects.py); the ORM serves the rest."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from django.conf import settings
from django.db import connections, models, router, transaction

from memory_core import busy
from memory_core.limits import MAX_ID_LENGTH, MAX_LABEL, MAX_NAME, MAX_REASON, MAX_ROW_ID_LENGTH
from memory_core.messages import project_text

from . import message_time


def uuid_str() -> str:
    return str(uuid.uuid4())


class Agent(models.Model):
    """One assistant's memory, owned by a user."""

    id = models.CharField(primary_key=True, max_length=MAX_ROW_ID_LENGTH, default=uuid_str,
                          editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=MAX_NAME)
    # Block templates every new session starts with (SPEC §9 block template shape).
    context = models.JSONField(default=list, blank=True)
    # Retention (sessions_app/lifecycle/retention.py): null keeps sessions forever.
    retention_max_age_days = models.IntegerField(
        null=True, blank=True, help_text="Delete sessions not updated for this many days "
        "(pinned sessions stay). Empty: keep forever.")
    retention_max_sessions = models.IntegerField(
        null=True, blank=True, help_text="Keep only this many most recently updated "
        "sessions (pinned sessions stay and do not count). Empty: no limit.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "arbor_agent"
        ordering = ["name"]
        indexes = [models.Index(fields=["owner", "name"], name="arbor_agent_owner_name")]

    def __str__(self) -> str:
        return self.name


class Session(models.Model):
    """One conversation's registry row (SPEC §1)."""

    id = models.CharField(primary_key=True, max_length=MAX_ROW_ID_LENGTH, default=uuid_str,
                          editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    name = models.CharField(max_length=MAX_NAME, blank=True, default="")
    parent_session = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="continuations"
    )
    model = models.CharField(max_length=MAX_NAME, null=True, blank=True)
    source = models.CharField(max_length=MAX_NAME, null=True, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    estimated_cost = models.FloatField(default=0.0)
    end_reason = models.CharField(max_length=MAX_REASON, null=True, blank=True)
    # Kept by every message write, so lists and search statistics need no COUNT(*).
    message_count = models.IntegerField(default=0)
    search_tokens = models.BigIntegerField(default=0)
    # Auto-compaction state, stored so a cooldown survives restarts (SPEC §7).
    compaction_error = models.TextField(default="", blank=True)
    compaction_failed_at = models.DateTimeField(null=True, blank=True)
    compaction_retry_at = models.DateTimeField(null=True, blank=True)
    # The token estimate of the path to estimate_leaf_id, so the check after an append
    # to that leaf adds one message instead of re-reading the whole path.
    estimate_leaf_id = models.CharField(max_length=MAX_ID_LENGTH, null=True, blank=True)
    estimate_tokens = models.BigIntegerField(default=0)
    # Live events (SPEC §10): the last event's seq (numbered in the write's transaction)
    # and what the session is doing now (idle, thinking, compacting, error).
    event_seq = models.BigIntegerField(default=0, db_default=0)
    status = models.CharField(max_length=20, default="idle", db_default="idle")
    # Session.request_stop(): the running chat turn (in any thread or worker process)
    # checks for it while it streams; cleared when a turn starts.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # The running turn's claim (memory_core/busy.py): who holds it, and when it last
    # said it was alive. One turn at a time per session, whichever door started it.
    turn_id = models.CharField(max_length=200, null=True, blank=True)
    turn_seen_at = models.DateTimeField(null=True, blank=True)
    # Set once any message gets a sibling (a branch or a second root). While unset, the
    # path to a leaf is every message up to it in order: history reads one index range
    # instead of walking parent pointers. Only a hint: the read checks the chain anyway.
    branched = models.BooleanField(default=False, db_default=False)
    # A pinned session is never removed by a retention policy.
    pinned = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # A small number for the session, given when the row is made and never changed: its
    # messages name it instead of the 36-character id (every message row and two of its
    # indexes hold it).
    key = models.BigIntegerField(unique=True, editable=False)

    class Meta:
        db_table = "arbor_session"
        indexes = [models.Index(fields=["agent", "-updated_at"], name="arbor_session_agent_upd")]

    def __str__(self) -> str:
        return self.name or self.id

    @property
    def shown_status(self) -> str:
        """The status to show: a turn that died mid-way shows as "error" (busy.py)."""
        return busy.shown_status(self.status, self.turn_seen_at)

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.key is not None:
            super().save(*args, **kwargs)
            return
        using = kwargs.get("using") or router.db_for_write(Session, instance=self)
        # One transaction takes the number and writes the row (SQLite's is IMMEDIATE:
        # it holds the write lock from its start, so two writers cannot take the same).
        with transaction.atomic(using=using), connections[using].cursor() as cur:
            cur.execute(NEXT_SESSION_KEY[connections[using].vendor])
            self.key = int(cur.fetchone()[0])
            super().save(*args, **kwargs)


NEXT_SESSION_KEY = {
    "postgresql": "SELECT nextval('arbor_session_key_seq')",
    "sqlite": "SELECT coalesce(max(key), 0) + 1 FROM arbor_session",
}


class ImportSource(models.Model):
    """A conversation of another tool imported into a session (memory_core.imports), so
    importing the same file again adds nothing. Goes with its session."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    source_format = models.CharField(max_length=20)
    conversation_id = models.CharField(max_length=MAX_ID_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "arbor_import_source"
        constraints = [models.UniqueConstraint(
            fields=["agent", "source_format", "conversation_id"], name="arbor_import_once")]


class JSONText(models.TextField):  # type: ignore[type-arg]
    """JSON kept as text: Postgres jsonb refuses \u0000, which message text may hold.
    The ORM reads and writes Python values; raw SQL writes the JSON text."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else orjson.loads(value)

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> Any:
        return orjson.dumps(value).decode()


class SessionEvent(models.Model):
    """The outbox: a session's recent events, numbered by `seq`, kept for `resume`
    (ARBOR_EVENT_RETENTION per session; older rows are pruned)."""

    # No index of its own: the unique (session, seq) serves every lookup.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events",
                                db_index=False, to_field="key", db_column="session_key")
    seq = models.BigIntegerField()
    type = models.CharField(max_length=40)
    data = JSONText(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "arbor_session_event"
        constraints = [models.UniqueConstraint(fields=["session", "seq"],
                                               name="arbor_session_event_seq")]

    def __str__(self) -> str:
        return f"session {self.session_id}#{self.seq} {self.type}"  # (its number)


class MessageTime(models.DateTimeField):  # type: ignore[type-arg]
    """A message's created_at: integer microseconds on SQLite (sessions_app.message_time),
    timestamptz on Postgres. The ORM reads it as ISO text turned back in SQL."""

    def db_type(self, connection: Any) -> str | None:
        # (bigint, not datetime: sqlite3 would hand a "datetime" column to Django's text parser)
        return "bigint" if connection.vendor == "sqlite" else super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor == "sqlite" and value is not None:
            return message_time.to_micros(self.get_prep_value(value))
        return super().get_db_prep_value(value, connection, prepared)

    def select_format(self, compiler: Any, sql: str, params: Any) -> tuple[str, Any]:
        if compiler.connection.vendor == "sqlite":
            return message_time.iso_text(sql), params
        return super().select_format(compiler, sql, params)


class Message(models.Model):
    """A message in a session's tree.

    `seq` is the insertion order and the parent pointer (`parent_seq`) walked by the
    path CTE; a parent always has a lower seq than its children, so no cycle can form.
    The parent's public id is not stored again: a path read takes it from the row
    before, other reads from the parent's row.
    """

    seq = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages",
                                db_index=False, to_field="key", db_column="session_key")
    message_id = models.CharField(max_length=MAX_ID_LENGTH)
    parent_seq = models.BigIntegerField(null=True, blank=True)
    role = models.CharField(max_length=16)
    parts = models.TextField(default="[]")  # JSON text, returned as stored
    metadata = models.TextField(default="{}")  # JSON text
    search_len = models.IntegerField(default=0)  # indexed tokens, for BM25 on Postgres
    # Index tokens beyond the text's (a tool result's call name and input), space-joined;
    # with the parts they rebuild the row's search body (sessions_app.sqlite_index).
    search_extra = models.TextField(null=True, blank=True)
    created_at = MessageTime()

    class Meta:
        db_table = "arbor_message"
        constraints = [
            models.UniqueConstraint(fields=["session", "message_id"], name="arbor_message_session_mid")
        ]
        indexes = [
            models.Index(fields=["session", "seq"], name="arbor_message_session_seq"),
            models.Index(fields=["parent_seq"], name="arbor_message_parent_seq"),
            # The session's roots (siblings of each other), without scanning its messages.
            models.Index(fields=["session", "seq"], condition=models.Q(parent_seq__isnull=True),
                         name="arbor_message_roots"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.message_id}"

    @property
    def text(self) -> str:
        """The plain-text projection of the parts (not stored: it would double the row)."""
        return project_text(orjson.loads(self.parts))


class MessageVector(models.Model):
    """A message's embedding, for search by meaning (sessions_app/semantic), made in the
    background by the model named in `model`. int8 components times `scale` give the unit
    vector (a quarter of float32's size); `dim` 0: the message has no text to embed.

    The table is created by migration 0020: its message reference cascades in the
    database (messages are deleted by raw SQL), and a trigger drops the vector of a
    message whose parts change, so an edit is embedded again."""

    id = models.BigAutoField(primary_key=True)  # grows only: a cache reads rows past it
    message = models.OneToOneField(Message, on_delete=models.DO_NOTHING, db_constraint=False,
                                   db_column="message_seq",
                                   related_name="vector")
    agent_id = models.CharField(max_length=MAX_ROW_ID_LENGTH)
    session_key = models.BigIntegerField()
    model = models.CharField(max_length=MAX_NAME)
    dim = models.IntegerField()
    scale = models.FloatField()
    vector = models.BinaryField()

    class Meta:
        db_table = "arbor_message_vector"
        indexes = [models.Index(fields=["agent_id", "model", "id"],
                                name="arbor_message_vector_agent")]


class Compaction(models.Model):
    """An overlay that reads a path range as a summary; stored messages stay untouched."""

    seq = models.BigAutoField(primary_key=True)
    overlay_id = models.CharField(max_length=MAX_ROW_ID_LENGTH, unique=True, default=uuid_str, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="compactions")
    summary = models.TextField()
    from_message_id = models.CharField(max_length=MAX_ID_LENGTH)
    to_message_id = models.CharField(max_length=MAX_ID_LENGTH)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_compaction"
        indexes = [models.Index(fields=["session", "created_at", "seq"], name="arbor_compaction_order")]

    def __str__(self) -> str:
        return f"compaction {self.overlay_id}"


# --- context blocks (SPEC §4) ----------------------------------------------


class SessionBlock(models.Model):
    """A block declared on one session: copied from the agent's templates at creation,
    or added at runtime. `removed` hides a block declared in code (with_context)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="blocks")
    label = models.CharField(max_length=MAX_LABEL)
    position = models.IntegerField(default=0)
    spec = models.JSONField(default=dict)  # description, max_tokens, kind, scope, content, files
    removed = models.BooleanField(default=False)

    class Meta:
        db_table = "arbor_session_block"
        constraints = [
            models.UniqueConstraint(fields=["session", "label"], name="arbor_block_session_label")
        ]
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.label


class BlockValue(models.Model):
    """Content of a database-backed writable block; `key` is namespaced by scope."""

    key = models.CharField(max_length=400, primary_key=True)
    # Owners, so deleting a session or an agent takes its block contents along.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    content = models.TextField(default="", blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "arbor_block_value"

    def __str__(self) -> str:
        return self.key


class Entry(models.Model):
    """A keyed document behind a search or skill block, indexed for full-text search."""

    seq = models.BigAutoField(primary_key=True)
    namespace = models.CharField(max_length=400)
    key = models.CharField(max_length=MAX_ID_LENGTH)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    description = models.TextField(default="", blank=True)
    content = models.TextField(default="", blank=True)
    search_len = models.IntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_entry"
        constraints = [
            models.UniqueConstraint(fields=["namespace", "key"], name="arbor_entry_ns_key")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.key}"


class SessionPrompt(models.Model):
    """The frozen system prompt of a session: the exact bytes sent to the model."""

    session = models.OneToOneField(Session, on_delete=models.CASCADE, primary_key=True,
                                   related_name="prompt")
    text = models.TextField(default="", blank=True)
    sections = models.JSONField(default=dict)  # label -> digest of its rendered section
    frozen_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_session_prompt"


class SkillState(models.Model):
    """Which skills a session has loaded; unloaded_at hides earlier load results on read."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="skills")
    label = models.CharField(max_length=MAX_LABEL)
    key = models.CharField(max_length=MAX_ID_LENGTH)
    loaded = models.BooleanField(default=True)
    loaded_at = models.DateTimeField()
    unloaded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "arbor_skill_state"
        constraints = [
            models.UniqueConstraint(fields=["session", "label", "key"], name="arbor_skill_unique")
        ]


class BlockVersion(models.Model):
    """One kept state of a block (memory_core/versions.py): the value after a write, who
    made it and from which message and leaf. `key` is the block's namespace, as in
    BlockValue and Entry; versions are numbered 1, 2, ... per key."""

    seq = models.BigAutoField(primary_key=True)
    key = models.CharField(max_length=400)
    number = models.IntegerField()
    # Owners, so deleting a session or an agent takes its versions along.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    action = models.CharField(max_length=20)
    entry_key = models.CharField(max_length=MAX_ID_LENGTH, null=True, blank=True)
    content = models.TextField(null=True, blank=True)
    entries = JSONText(null=True, blank=True)
    loaded = JSONText(null=True, blank=True)
    actor = models.CharField(max_length=10)
    actor_id = models.CharField(max_length=64, null=True, blank=True)
    # The source: the message that carried the write and the leaf the session stood on,
    # in source_session (plain ids: a deleted message leaves the version, marked).
    message_id = models.CharField(max_length=MAX_ID_LENGTH, null=True, blank=True)
    leaf_id = models.CharField(max_length=MAX_ID_LENGTH, null=True, blank=True)
    source_session_id = models.CharField(max_length=MAX_ROW_ID_LENGTH, null=True, blank=True)
    source_deleted = models.BooleanField(default=False)
    restored_from = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_block_version"
        constraints = [
            models.UniqueConstraint(fields=["key", "number"], name="arbor_block_version_num")
        ]
        indexes = [models.Index(fields=["source_session_id", "message_id"],
                                name="arbor_block_version_src")]

    def __str__(self) -> str:
        return f"{self.key} v{self.number}"


class Erasure(models.Model):
    """One deletion or policy run (sessions_app/lifecycle/erasure.py): when, who, what
    scope and how much; never any content. Plain ids, so the log outlives what it names.
    `purged_at`: when `purge` last cleared the database files after it."""

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(db_index=True)
    owner_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    agent_id = models.CharField(max_length=MAX_ROW_ID_LENGTH, db_index=True)
    session_id = models.CharField(max_length=MAX_ROW_ID_LENGTH, null=True, blank=True)
    # messages (some of a session's), clear (all of them), session, agent, policy (a run)
    scope = models.CharField(max_length=10)
    sessions = models.IntegerField(default=0)
    messages = models.IntegerField(default=0)
    by = models.CharField(max_length=10)  # user, key, policy or system
    by_id = models.CharField(max_length=64, null=True, blank=True)
    door = models.CharField(max_length=10)  # api, ui, mcp, admin, policy, command
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "arbor_erasure"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.scope} of {self.session_id or self.agent_id} by {self.by}"


class LifecycleLease(models.Model):
    """When a worker may next run a piece of background upkeep (a policy run, a purge):
    the worker that moves `next_at` on runs it, the others skip (lifecycle/worker.py)."""

    name = models.CharField(max_length=20, primary_key=True)
    next_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_lifecycle_lease"


# --- API keys (SPEC §9) -------------------------------------------------------


class ApiKey(models.Model):
    """A bearer key for the JSON API. Only a SHA-256 of the key is stored; `prefix` (the
    key's first characters) lets people tell their keys apart. A key limited to an agent
    sees nothing else; a revoked key stops working at once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="api_keys",
                              help_text="Limit the key to this agent (optional).")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Kept to the minute: refreshed at most once a minute per key, not on every request.
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "arbor_api_key"
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})" if self.name else f"{self.prefix}…"
