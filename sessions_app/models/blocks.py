"""The context blocks' tables: each session's declared blocks, their values and keyed
entries, the prompt it froze, its loaded skills, and every block write kept as a version."""

from __future__ import annotations

from django.db import models

from memory_core.limits import MAX_ID_LENGTH, MAX_LABEL, MAX_ROW_ID_LENGTH

from .fields import JSONText

# Their owners, by label (models/__init__.py imports this module).
AGENT, SESSION = "sessions_app.Agent", "sessions_app.Session"


class SessionBlock(models.Model):
    """A block declared on one session: copied from the agent's templates at creation,
    or added at runtime. `removed` hides a block declared in code (with_context)."""

    session = models.ForeignKey(SESSION, on_delete=models.CASCADE, related_name="blocks")
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
    agent = models.ForeignKey(AGENT, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(SESSION, null=True, blank=True, on_delete=models.CASCADE,
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
    agent = models.ForeignKey(AGENT, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(SESSION, null=True, blank=True, on_delete=models.CASCADE,
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

    session = models.OneToOneField(SESSION, on_delete=models.CASCADE, primary_key=True,
                                   related_name="prompt")
    text = models.TextField(default="", blank=True)
    sections = models.JSONField(default=dict)  # label -> digest of its rendered section
    frozen_at = models.DateTimeField()

    class Meta:
        db_table = "arbor_session_prompt"


class SkillState(models.Model):
    """Which skills a session has loaded; unloaded_at hides earlier load results on read."""

    session = models.ForeignKey(SESSION, on_delete=models.CASCADE, related_name="skills")
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
    agent = models.ForeignKey(AGENT, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(SESSION, null=True, blank=True, on_delete=models.CASCADE,
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
