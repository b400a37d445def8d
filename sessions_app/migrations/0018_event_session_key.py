"""The live-event outbox names its session by number (arbor_session.key, as messages do
since 0015) instead of its 36-character id, in each row and in its unique (session, seq)
index. SQLite rebuilds the table (with its numbering trigger); Postgres adds the column,
fills it and drops the old one.
"""

import django.db.models.deletion
from django.db import migrations, models


def _sqlite_table(column: str) -> str:
    target = '"arbor_session" ("key")' if column == "session_key" else '"arbor_session" ("id")'
    kind = "bigint" if column == "session_key" else "varchar(36)"
    return f"""CREATE TABLE "arbor_session_event_next" (
        "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "seq" bigint NOT NULL,
        "type" varchar(40) NOT NULL, "data" text NOT NULL, "created_at" datetime NOT NULL,
        "{column}" {kind} NOT NULL REFERENCES {target} DEFERRABLE INITIALLY DEFERRED,
        CONSTRAINT "arbor_session_event_seq" UNIQUE ("{column}", "seq"))"""


def _numbering(match: str) -> str:
    return ("CREATE TRIGGER arbor_session_event_numbering AFTER INSERT ON arbor_session_event "
            f"BEGIN UPDATE arbor_session SET event_seq = NEW.seq WHERE {match}; END")


def _sqlite(cur, column: str, value: str, join: str, match: str) -> None:
    """The table again with `column` (set to `value`, the session `join`ed by the old
    column) and the trigger numbering the session that `match`es the new row."""
    cur.execute("SELECT seq FROM sqlite_sequence WHERE name = 'arbor_session_event'")
    row = cur.fetchone()
    for statement in (
        _sqlite_table(column),
        f"""INSERT INTO arbor_session_event_next (id, seq, type, data, created_at, {column})
            SELECT e.id, e.seq, e.type, e.data, e.created_at, {value}
            FROM arbor_session_event e JOIN arbor_session s ON {join}""",
        "DROP TABLE arbor_session_event",
        "ALTER TABLE arbor_session_event_next RENAME TO arbor_session_event",
        _numbering(match),
    ):
        cur.execute(statement)
    if row is not None:
        cur.execute(f"UPDATE sqlite_sequence SET seq = max(seq, {int(row[0])}) "
                    "WHERE name = 'arbor_session_event'")


POSTGRES_FORWARD = [
    "ALTER TABLE arbor_session_event ADD COLUMN session_key bigint",
    """UPDATE arbor_session_event e SET session_key = s.key FROM arbor_session s
       WHERE s.id = e.session_id""",
    "ALTER TABLE arbor_session_event ALTER COLUMN session_key SET NOT NULL",
    "ALTER TABLE arbor_session_event DROP COLUMN session_id",  # (its key and unique pair)
    """ALTER TABLE arbor_session_event ADD CONSTRAINT arbor_session_event_session_key_fk
       FOREIGN KEY (session_key) REFERENCES arbor_session (key) DEFERRABLE INITIALLY DEFERRED""",
    """ALTER TABLE arbor_session_event ADD CONSTRAINT arbor_session_event_seq
       UNIQUE (session_key, seq)""",
]
POSTGRES_BACKWARD = [
    "ALTER TABLE arbor_session_event ADD COLUMN session_id varchar(36)",
    """UPDATE arbor_session_event e SET session_id = s.id FROM arbor_session s
       WHERE s.key = e.session_key""",
    "ALTER TABLE arbor_session_event ALTER COLUMN session_id SET NOT NULL",
    "ALTER TABLE arbor_session_event DROP COLUMN session_key",
    """ALTER TABLE arbor_session_event ADD CONSTRAINT arbor_session_event_session_id_fk
       FOREIGN KEY (session_id) REFERENCES arbor_session (id) DEFERRABLE INITIALLY DEFERRED""",
    """ALTER TABLE arbor_session_event ADD CONSTRAINT arbor_session_event_seq
       UNIQUE (session_id, seq)""",
]


def _forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            _sqlite(cur, "session_key", "s.key", "s.id = e.session_id", "key = NEW.session_key")
        elif vendor == "postgresql":
            for statement in POSTGRES_FORWARD:
                cur.execute(statement)


def _backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cur:
        if vendor == "sqlite":
            _sqlite(cur, "session_id", "s.id", "s.key = e.session_key", "id = NEW.session_id")
        elif vendor == "postgresql":
            for statement in POSTGRES_BACKWARD:
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
