"""Full-text index for search/skill entries, like the message index (0002)."""

from django.db import migrations

from sessions_app.migrations._vendor import per_vendor

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE arbor_entry_fts USING fts5(body, scope, tokenize='ascii')",
    """CREATE TRIGGER arbor_entry_fts_ad AFTER DELETE ON arbor_entry BEGIN
         DELETE FROM arbor_entry_fts WHERE rowid = old.seq;
       END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS arbor_entry_fts_ad",
    "DROP TABLE IF EXISTS arbor_entry_fts",
]
POSTGRES_FORWARD = [
    "ALTER TABLE arbor_entry ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector",
    "CREATE INDEX arbor_entry_search ON arbor_entry USING GIN (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS arbor_entry_search",
    "ALTER TABLE arbor_entry DROP COLUMN IF EXISTS search_vector",
]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0003_context_blocks")]

    operations = [
        migrations.RunPython(
            per_vendor({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            per_vendor({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
