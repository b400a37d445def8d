"""Full-text index, by vendor: FTS5 on SQLite, a tsvector + GIN on Postgres.

Both index the same stemmed tokens made in Python (memory_core.search), so both
databases match the same words. The FTS5 row is deleted by a trigger, so any delete
(engine, admin, cascades) keeps the index in step.
"""

from django.db import migrations

from sessions_app.migrations._vendor import per_vendor

SQLITE_FORWARD = [
    # ascii tokenizer: our tokens are already normalised and space-separated; it
    # splits on ASCII punctuation and spaces only, so each token stays one token.
    "CREATE VIRTUAL TABLE arbor_message_fts USING fts5(body, scope, tokenize='ascii')",
    """CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
         DELETE FROM arbor_message_fts WHERE rowid = old.seq;
       END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS arbor_message_fts_ad",
    "DROP TABLE IF EXISTS arbor_message_fts",
]
POSTGRES_FORWARD = [
    "ALTER TABLE arbor_message ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector",
    "CREATE INDEX arbor_message_search ON arbor_message USING GIN (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS arbor_message_search",
    "ALTER TABLE arbor_message DROP COLUMN IF EXISTS search_vector",
]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RunPython(
            per_vendor({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            per_vendor({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
