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

from sessions_app.migrations._vendor import (
    SESSION_COLUMNS,
    pg_move_session,
    session_reference,
    sqlite_rebuild,
)

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


def _sqlite_move(cur, old: str, new: str, triggers: list[str]) -> None:
    """arbor_message again, naming its session by `new` instead of `old`."""
    create = f"""CREATE TABLE "arbor_message_next" (
        "seq" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
        "message_id" varchar(255) NOT NULL, "parent_seq" bigint NULL,
        "parent_message_id" varchar(255) NULL, "role" varchar(16) NOT NULL,
        "parts" text NOT NULL, "metadata" text NOT NULL, "search_len" integer NOT NULL,
        "created_at" datetime NOT NULL, "search_extra" text NULL,
        {session_reference(new)},
        CONSTRAINT "arbor_message_session_mid" UNIQUE ("{new}", "message_id"))"""
    fill = f"""INSERT INTO arbor_message_next ({_COLUMNS}, {new})
               SELECT {', '.join('m.' + c for c in _COLUMNS.split(', '))}, s.{SESSION_COLUMNS[new][1]}
               FROM arbor_message m JOIN arbor_session s ON s.{SESSION_COLUMNS[old][1]} = m.{old}"""
    sqlite_rebuild(cur, "arbor_message", create, fill, [
        *_indexes(new), 'CREATE INDEX "arbor_message_parent_seq" ON "arbor_message" ("parent_seq")',
        *triggers])


def _indexes(column: str) -> list[str]:
    """The indexes naming the session (arbor_message_parent_seq does not)."""
    return [f'CREATE INDEX "arbor_message_session_seq" ON "arbor_message" ("{column}", "seq")',
            f'CREATE INDEX "arbor_message_roots" ON "arbor_message" ("{column}", "seq") '
            'WHERE "parent_seq" IS NULL']


def _pg_move(old: str, new: str) -> list[str]:
    return pg_move_session("arbor_message", old, new, [
        f"ALTER TABLE arbor_message ADD CONSTRAINT arbor_message_session_mid "
        f"UNIQUE ({new}, message_id)", *_indexes(new)])


def _forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            cur.execute('ALTER TABLE arbor_session ADD COLUMN "key" bigint NULL')
            cur.execute("UPDATE arbor_session SET key = rowid")
            cur.execute('CREATE UNIQUE INDEX "arbor_session_key_uniq" ON arbor_session ("key")')
            _sqlite_move(cur, "session_id", "session_key", SQLITE_TRIGGERS)
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
                *_pg_move("session_id", "session_key"),
            ):
                cur.execute(statement)


def _backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            previous = importlib.import_module(
                "sessions_app.migrations.0014_contentless_search_index")
            _sqlite_move(cur, "session_key", "session_id", previous.TRIGGERS)
            cur.execute("DROP INDEX arbor_session_key_uniq")
            cur.execute("ALTER TABLE arbor_session DROP COLUMN key")
        elif vendor == "postgresql":
            for statement in (
                *_pg_move("session_key", "session_id"),
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
