"""Arbor's tables. Hot paths use raw SQL (storage/, its vendors/); the ORM serves the rest.
The context blocks' tables (declarations, values, entries, versions) are in blocks.py."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from django.conf import settings
from django.db import connections, models, router, transaction

from memory_core import busy
from memory_core.limits import MAX_ID_LENGTH, MAX_NAME, MAX_REASON, MAX_ROW_ID_LENGTH
from memory_core.messages import project_text

from .fields import JSONText, MessageTime


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
        # No index holds updated_at: every write moves it (migration 0005).

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
    # with the parts they rebuild the row's search body (sessions_app.storage.vendors.sqlite_index).
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

    The table is created by migration 0004: its message reference cascades in the
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


class Erasure(models.Model):
    """One deletion or policy run (sessions_app/storage/erasure.py): when, who, what
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


class LastLeaf(models.Model):
    """The leaf a person last had on screen in a session: the chat reopens there, in any
    tab or device (`?leaf=` still wins). Goes with the session and with the person."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    leaf_id = models.CharField(max_length=MAX_ID_LENGTH)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "arbor_last_leaf"
        constraints = [models.UniqueConstraint(fields=["user", "session"],
                                               name="arbor_last_leaf_once")]


# The context blocks' tables (blocks.py names Agent and Session by their labels).
from .blocks import (  # noqa: E402, F401 (re-exported: models.SessionBlock etc.)
    BlockValue,
    BlockVersion,
    Entry,
    SessionBlock,
    SessionPrompt,
    SkillState,
)
