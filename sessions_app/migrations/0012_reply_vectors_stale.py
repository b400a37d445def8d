"""A message's rewrite also drops the vectors of its replies (issue 28); vectors made from
a text the new embedding rules change are dropped once.

A reply to a message that asks is embedded after that message's text
(memory_core.embedding.in_context), so when an upsert rewrites the parts of a message, its
children's vectors were made from a text that is no longer there: they wait for the
embedder again, as the rewritten message does (0004's trigger). The children are found by
the parent_seq index.

The vectors made before these rules are dropped here where the rules change the text
embedded: replies to a message that asks, and tool calls and results, now embedded with
their inputs' and outputs' keys (memory_core.messages.labelled). The background worker
embeds them again (`manage.py embed --wait` at once).
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
_VECTORS = """SELECT v.id, v.message_seq, m.parts, p.parts FROM arbor_message_vector v
    JOIN arbor_message m ON m.seq = v.message_seq
    LEFT JOIN arbor_message p ON p.seq = m.parent_seq
    WHERE v.id > %s ORDER BY v.id LIMIT 2000"""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else bytes(value).decode()


def _changed(parts: Any, parent: Any) -> bool:
    """Whether the text embedded for a message changed with these rules."""
    own = orjson.loads(_text(parts))
    if project_text(own, keys=True) != project_text(own):
        return True
    return parent is not None and in_context(
        "x", project_text(orjson.loads(_text(parent)))) != "x"


def drop_changed_vectors(apps: Any, schema_editor: Any) -> None:
    """Drop the vectors made from a text these rules change."""
    after = 0
    with schema_editor.connection.cursor() as cur:
        while True:
            cur.execute(_VECTORS, [after])
            rows = cur.fetchall()
            if not rows:
                return
            after = rows[-1][0]
            stale = [seq for _, seq, parts, parent in rows if _changed(parts, parent)]
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
        migrations.RunPython(drop_changed_vectors, migrations.RunPython.noop),
    ]
