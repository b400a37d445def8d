"""Messages name their session by a small number (`arbor_session.key`) instead of its
36-character id: the id sat in every message row and in two of its indexes, a third of
a short message's bytes. Sessions get their number when they are made (a sequence on
Postgres; the next one under SQLite's write lock), and keep it.

SQLite cannot change a column in place: arbor_message is rebuilt with the same rows,
seqs, indexes and (0014's) triggers, which now find the session by its number.
Postgres adds the column, fills it and drops the old one.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

# 0014's triggers, finding the session (for its id and agent) by number.
_SCOPE = "'§s' || replace(s.id, '-', '') || ' §a' || replace(s.agent_id, '-', '')"
_REMOVE = f"""INSERT INTO arbor_message_fts(arbor_message_fts, rowid, body, scope)
              SELECT 'delete', d.id, arbor_search_body(old.parts, old.search_extra), {_SCOPE}
              FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
              JOIN arbor_message_fts_docsize d ON d.id = (k.key << 36) | old.seq
              WHERE s.key = old.session_key"""
SQLITE_TRIGGERS = [
    # A flush may delete the session first: its rows are then left to the flush's
    # reset of the whole index (sessions_app.sqlite_index).
    f"""CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
          {_REMOVE};
        END""",
    f"""CREATE TRIGGER arbor_message_fts_au AFTER UPDATE OF parts, search_extra ON arbor_message
        BEGIN
          {_REMOVE};
          INSERT INTO arbor_message_fts(rowid, body, scope)
          SELECT (k.key << 36) | new.seq, arbor_search_body(new.parts, new.search_extra), {_SCOPE}
          FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
          WHERE s.key = new.session_key;
        END""",
]

_COLUMNS = ("seq, message_id, parent_seq, parent_message_id, role, parts, metadata, "
            "search_len, created_at, search_extra")


def _sqlite_table(name: str, session_column: str) -> str:
    return f"""CREATE TABLE "{name}" (
        "seq" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
        "message_id" varchar(255) NOT NULL, "parent_seq" bigint NULL,
        "parent_message_id" varchar(255) NULL, "role" varchar(16) NOT NULL,
        "parts" text NOT NULL, "metadata" text NOT NULL, "search_len" integer NOT NULL,
        "created_at" datetime NOT NULL, "search_extra" text NULL,
        {session_column},
        CONSTRAINT "arbor_message_session_mid" UNIQUE ("{session_column.split('"')[1]}", "message_id"))"""


def _sqlite_rebuild(cur, session_column: str, fill: str, triggers: list[str]) -> None:
    column = session_column.split('"')[1]
    cur.execute("SELECT seq FROM sqlite_sequence WHERE name = 'arbor_message'")
    row = cur.fetchone()
    high = row[0] if row else 0
    for statement in (
        _sqlite_table("arbor_message_next", session_column),
        fill,
        "DROP TABLE arbor_message",  # (with its indexes and triggers)
        "ALTER TABLE arbor_message_next RENAME TO arbor_message",
        f'CREATE INDEX "arbor_message_session_seq" ON "arbor_message" ("{column}", "seq")',
        'CREATE INDEX "arbor_message_parent_seq" ON "arbor_message" ("parent_seq")',
        f'CREATE INDEX "arbor_message_roots" ON "arbor_message" ("{column}", "seq") '
        'WHERE "parent_seq" IS NULL',
        *triggers,
    ):
        cur.execute(statement)
    # seq is never reused (index rowids are made of it): keep the high-water mark.
    cur.execute("UPDATE sqlite_sequence SET seq = max(seq, %s) WHERE name = 'arbor_message'",
                [high])


def _forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            cur.execute('ALTER TABLE arbor_session ADD COLUMN "key" bigint NULL')
            cur.execute("UPDATE arbor_session SET key = rowid")
            cur.execute('CREATE UNIQUE INDEX "arbor_session_key_uniq" ON arbor_session ("key")')
            _sqlite_rebuild(
                cur,
                '"session_key" bigint NOT NULL REFERENCES "arbor_session" ("key") '
                "DEFERRABLE INITIALLY DEFERRED",
                f"""INSERT INTO arbor_message_next ({_COLUMNS}, session_key)
                    SELECT {', '.join('m.' + c for c in _COLUMNS.split(', '))}, s.key
                    FROM arbor_message m JOIN arbor_session s ON s.id = m.session_id""",
                SQLITE_TRIGGERS,
            )
        elif vendor == "postgresql":
            for statement in (
                "CREATE SEQUENCE arbor_session_key_seq AS bigint",
                "ALTER TABLE arbor_session ADD COLUMN key bigint",
                """UPDATE arbor_session SET key = k.n FROM (
                     SELECT id, nextval('arbor_session_key_seq') AS n FROM (
                       SELECT id FROM arbor_session ORDER BY created_at, id) o) k
                   WHERE k.id = arbor_session.id""",
                "ALTER TABLE arbor_session ALTER COLUMN key SET NOT NULL",
                "ALTER TABLE arbor_session ADD CONSTRAINT arbor_session_key_uniq UNIQUE (key)",
                "ALTER TABLE arbor_message ADD COLUMN session_key bigint",
                """UPDATE arbor_message m SET session_key = s.key FROM arbor_session s
                   WHERE s.id = m.session_id""",
                "ALTER TABLE arbor_message ALTER COLUMN session_key SET NOT NULL",
                # (with its foreign key, the unique pair and the indexes that name it)
                "ALTER TABLE arbor_message DROP COLUMN session_id",
                """ALTER TABLE arbor_message ADD CONSTRAINT arbor_message_session_key_fk
                   FOREIGN KEY (session_key) REFERENCES arbor_session (key)
                   DEFERRABLE INITIALLY DEFERRED""",
                """ALTER TABLE arbor_message ADD CONSTRAINT arbor_message_session_mid
                   UNIQUE (session_key, message_id)""",
                "CREATE INDEX arbor_message_session_seq ON arbor_message (session_key, seq)",
                """CREATE INDEX arbor_message_roots ON arbor_message (session_key, seq)
                   WHERE parent_seq IS NULL""",
            ):
                cur.execute(statement)


def _backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            previous = importlib.import_module(
                "sessions_app.migrations.0014_contentless_search_index")

            _sqlite_rebuild(
                cur,
                '"session_id" varchar(36) NOT NULL REFERENCES "arbor_session" ("id") '
                "DEFERRABLE INITIALLY DEFERRED",
                f"""INSERT INTO arbor_message_next ({_COLUMNS}, session_id)
                    SELECT {', '.join('m.' + c for c in _COLUMNS.split(', '))}, s.id
                    FROM arbor_message m JOIN arbor_session s ON s.key = m.session_key""",
                previous.TRIGGERS,
            )
            cur.execute("DROP INDEX arbor_session_key_uniq")
            cur.execute("ALTER TABLE arbor_session DROP COLUMN key")
        elif vendor == "postgresql":
            for statement in (
                "ALTER TABLE arbor_message ADD COLUMN session_id varchar(36)",
                """UPDATE arbor_message m SET session_id = s.id FROM arbor_session s
                   WHERE s.key = m.session_key""",
                "ALTER TABLE arbor_message ALTER COLUMN session_id SET NOT NULL",
                "ALTER TABLE arbor_message DROP COLUMN session_key",
                """ALTER TABLE arbor_message ADD CONSTRAINT arbor_message_session_id_fk
                   FOREIGN KEY (session_id) REFERENCES arbor_session (id)
                   DEFERRABLE INITIALLY DEFERRED""",
                """ALTER TABLE arbor_message ADD CONSTRAINT arbor_message_session_mid
                   UNIQUE (session_id, message_id)""",
                "CREATE INDEX arbor_message_session_seq ON arbor_message (session_id, seq)",
                """CREATE INDEX arbor_message_roots ON arbor_message (session_id, seq)
                   WHERE parent_seq IS NULL""",
                "ALTER TABLE arbor_session DROP COLUMN key",
                "DROP SEQUENCE arbor_session_key_seq",
            ):
                cur.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0014_contentless_search_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_forward, _backward)],
            state_operations=[
                migrations.AddField(
                    model_name="session", name="key",
                    field=models.BigIntegerField(editable=False, unique=True),
                ),
                migrations.AlterField(
                    model_name="message", name="session",
                    field=models.ForeignKey(
                        db_column="session_key", db_index=False,
                        on_delete=django.db.models.deletion.CASCADE, related_name="messages",
                        to="sessions_app.session", to_field="key",
                    ),
                ),
            ],
        ),
    ]
