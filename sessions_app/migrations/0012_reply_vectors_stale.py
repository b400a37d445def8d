"""A message's rewrite also drops the vectors of its replies (issue 28).

A reply to a message that asks is embedded after that message's text
(memory_core.embedding.in_context), so when an upsert rewrites the parts of a message, its
children's vectors were made from a text that is no longer there: they wait for the
embedder again, as the rewritten message does (0004's trigger). The children are found by
the parent_seq index.

The vectors of replies to a message that asks, made before this rule, are dropped here,
so the background worker embeds them again in context (`manage.py embed --wait` at once).
"""

from typing import Any

import orjson
from django.db import migrations

from memory_core.embedding import in_context
from memory_core.messages import project_text

from ._vendor import per_vendor

_STALE = ("DELETE FROM arbor_message_vector WHERE message_seq = NEW.seq OR message_seq IN "
          "(SELECT seq FROM arbor_message WHERE parent_seq = NEW.seq)")
_OLD = "DELETE FROM arbor_message_vector WHERE message_seq = NEW.seq"
_SQLITE = ("CREATE TRIGGER arbor_message_vector_stale AFTER UPDATE OF parts ON arbor_message "
           "WHEN OLD.parts IS NOT NEW.parts BEGIN {delete}; END")
_POSTGRES = ("CREATE OR REPLACE FUNCTION arbor_message_vector_stale() RETURNS trigger "
             "LANGUAGE plpgsql AS $$ BEGIN {delete}; RETURN NULL; END $$")
_DROP = "DROP TRIGGER arbor_message_vector_stale"
_REPLIES = """SELECT v.id, v.message_seq, p.parts FROM arbor_message_vector v
    JOIN arbor_message m ON m.seq = v.message_seq
    JOIN arbor_message p ON p.seq = m.parent_seq
    WHERE v.id > %s ORDER BY v.id LIMIT 2000"""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else bytes(value).decode()


def drop_replies_vectors(apps: Any, schema_editor: Any) -> None:
    """Drop the vectors of replies to a message that asks: they were made without it."""
    after = 0
    with schema_editor.connection.cursor() as cur:
        while True:
            cur.execute(_REPLIES, [after])
            rows = cur.fetchall()
            if not rows:
                return
            after = rows[-1][0]
            stale = [seq for _, seq, parts in rows
                     if in_context("x", project_text(orjson.loads(_text(parts)))) != "x"]
            if stale:
                marks = ", ".join(["%s"] * len(stale))
                cur.execute(f"DELETE FROM arbor_message_vector WHERE message_seq IN ({marks})",
                            stale)


class Migration(migrations.Migration):

    dependencies = [("sessions_app", "0011_sqlite_event_numbering")]

    operations = [
        migrations.RunPython(
            per_vendor({"sqlite": [_DROP, _SQLITE.format(delete=_STALE)],
                        "postgresql": [_POSTGRES.format(delete=_STALE)]}),
            per_vendor({"sqlite": [_DROP, _SQLITE.format(delete=_OLD)],
                        "postgresql": [_POSTGRES.format(delete=_OLD)]})),
        migrations.RunPython(drop_replies_vectors, migrations.RunPython.noop),
    ]
