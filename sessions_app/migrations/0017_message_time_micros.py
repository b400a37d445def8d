"""SQLite: a message's created_at is stored as integer microseconds since 1970 (8 bytes,
where its ISO text took 26; sessions_app.models.fields), in a column declared bigint
(sqlite3 hands a column declared datetime to Django's text parser). SQLite cannot change
a column's type in place: the table is rebuilt with the same rows, seqs, indexes and
triggers. Postgres keeps timestamptz: nothing to do there.
"""

from django.db import migrations

import sessions_app.models
from sessions_app.models.fields import iso_text
from sessions_app.migrations._vendor import sqlite_rebuild

# The stored text is isoformat(" ") of a UTC instant: 'YYYY-MM-DD HH:MM:SS[.ffffff]'.
TEXT_TO_MICROS = """(CAST(strftime('%s', substr(created_at, 1, 19)) AS INTEGER) * 1000000
                     + CASE WHEN length(created_at) > 20
                            THEN CAST(substr(substr(created_at, 21) || '000000', 1, 6) AS INTEGER)
                            ELSE 0 END)"""
MICROS_TO_TEXT = iso_text("created_at", sep=" ", offset="", params=False)


def _rebuild(cur, declared: tuple[str, str], value: str) -> None:
    """arbor_message again with created_at declared as declared[1] and set to `value`;
    its indexes and triggers as they are."""
    cur.execute("SELECT sql FROM sqlite_master WHERE name = 'arbor_message'")
    table = cur.fetchone()[0]
    old, new = (f'"created_at" {t} NOT NULL' for t in declared)
    assert old in table, table
    cur.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'arbor_message' "
                "AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid")
    attached = [r[0] for r in cur.fetchall()]
    cur.execute("PRAGMA table_info(arbor_message)")
    columns = [r[1] for r in cur.fetchall()]
    values = [value if c == "created_at" else f'"{c}"' for c in columns]
    names = ", ".join(f'"{c}"' for c in columns)
    sqlite_rebuild(
        cur, "arbor_message",
        table.replace(old, new).replace('"arbor_message"', '"arbor_message_next"', 1),
        f"INSERT INTO arbor_message_next ({names}) SELECT {', '.join(values)} FROM arbor_message",
        attached)


def _forward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cur:
            _rebuild(cur, ("datetime", "bigint"), TEXT_TO_MICROS)


def _backward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cur:
            _rebuild(cur, ("bigint", "datetime"), MICROS_TO_TEXT)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0016_drop_parent_message_id")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_forward, _backward)],
            state_operations=[migrations.AlterField(
                model_name="message", name="created_at",
                field=sessions_app.models.MessageTime(),
            )],
        ),
    ]
