"""The live-event outbox names its session by number (arbor_session.key, as messages do
since 0015) instead of its 36-character id, in each row and in its unique (session, seq)
index. SQLite rebuilds the table (with its numbering trigger); Postgres adds the column,
fills it and drops the old one.
"""

import django.db.models.deletion
from django.db import migrations, models

from sessions_app.migrations._vendor import (
    SESSION_COLUMNS,
    pg_move_session,
    session_reference,
    sqlite_rebuild,
)


def _sqlite_move(cur, old: str, new: str) -> None:
    """arbor_session_event again, naming its session by `new` instead of `old`, with the
    trigger that moves the session's counter (migration 0008) finding it by `new`."""
    target = SESSION_COLUMNS[new][1]
    create = f"""CREATE TABLE "arbor_session_event_next" (
        "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "seq" bigint NOT NULL,
        "type" varchar(40) NOT NULL, "data" text NOT NULL, "created_at" datetime NOT NULL,
        {session_reference(new)},
        CONSTRAINT "arbor_session_event_seq" UNIQUE ("{new}", "seq"))"""
    fill = f"""INSERT INTO arbor_session_event_next (id, seq, type, data, created_at, {new})
               SELECT e.id, e.seq, e.type, e.data, e.created_at, s.{target}
               FROM arbor_session_event e
               JOIN arbor_session s ON s.{SESSION_COLUMNS[old][1]} = e.{old}"""
    numbering = ("CREATE TRIGGER arbor_session_event_numbering AFTER INSERT ON "
                 "arbor_session_event BEGIN UPDATE arbor_session SET event_seq = NEW.seq "
                 f"WHERE {target} = NEW.{new}; END")
    sqlite_rebuild(cur, "arbor_session_event", create, fill, [numbering])


def _pg_move(old: str, new: str) -> list[str]:
    return pg_move_session("arbor_session_event", old, new, [
        f"ALTER TABLE arbor_session_event ADD CONSTRAINT arbor_session_event_seq UNIQUE ({new}, seq)"])


def _forward(apps, schema_editor):
    _move(schema_editor, "session_id", "session_key")


def _backward(apps, schema_editor):
    _move(schema_editor, "session_key", "session_id")


def _move(schema_editor, old: str, new: str) -> None:
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            _sqlite_move(cur, old, new)
        elif vendor == "postgresql":
            for statement in _pg_move(old, new):
                cur.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0017_message_time_micros")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_forward, _backward)],
            state_operations=[
                migrations.AlterField(
                    model_name="sessionevent", name="session",
                    field=models.ForeignKey(
                        db_column="session_key", db_index=False,
                        on_delete=django.db.models.deletion.CASCADE, related_name="events",
                        to="sessions_app.session", to_field="key",
                    ),
                ),
            ],
        ),
    ]
