"""SQLite: a row's repeat counts packed in one row, not one row a term (issue 27).

0009 filed a term's count in an index row where it occurs more than once as a row of
`arbor_search_repeat` (term, id): text that repeats its words (an export's long answers)
made twenty of them a message, and writing them was a third of an import's time (each
row ~2 µs, however sorted). `arbor_search_tf` holds one row per index row with repeats,
its counts as one JSON object {term: count} (what the pending rows already carry), read
by the ranking with each matched row. Postgres keeps its own (0005): nothing to do there.
"""

from importlib import import_module
from typing import Any

from django.db import migrations

_0009 = import_module("sessions_app.migrations.0009_sqlite_search_counts")
_PENDING_AI = next(s for s in _0009.FORWARD if "TRIGGER arbor_search_pending_ai" in s)
_PENDING_BULK = next(s for s in _0009.FORWARD if "TRIGGER arbor_search_pending_bulk" in s)
_REPEAT_TABLE = next(s for s in _0009.FORWARD if "TABLE arbor_search_repeat" in s)

FORWARD = [
    "CREATE TABLE arbor_search_tf (id integer NOT NULL PRIMARY KEY, tf text NOT NULL)",
    "INSERT INTO arbor_search_tf(id, tf) SELECT id, json_group_object(term, tf) "
    "FROM arbor_search_repeat GROUP BY id",
    "DROP TRIGGER arbor_search_pending_ai",
    "DROP TRIGGER arbor_search_pending_bulk",
    "DROP TABLE arbor_search_repeat",
    # A row's repeat counts come and go with its pending row: one statement a write.
    """CREATE TRIGGER arbor_search_pending_ai AFTER INSERT ON arbor_search_pending
       WHEN new.repeats IS NOT NULL AND new.sign <> 0 BEGIN
         INSERT INTO arbor_search_tf(id, tf) SELECT new.row, new.repeats WHERE new.sign > 0;
         DELETE FROM arbor_search_tf WHERE new.sign < 0 AND id = new.row;
       END""",
    # A bulk write's documents per term, summed over its rows, go straight in (sign 0:
    # terms holds {term: documents}); its repeat counts are written beside (sqlite_counts).
    """CREATE TRIGGER arbor_search_pending_bulk AFTER INSERT ON arbor_search_pending
       WHEN new.sign = 0 BEGIN
         INSERT INTO arbor_search_df(term, df) SELECT key, value FROM json_each(new.terms)
         WHERE true ON CONFLICT(term) DO UPDATE SET df = df + excluded.df;
         DELETE FROM arbor_search_pending WHERE id = new.id;
       END""",
]
BACKWARD = [
    _REPEAT_TABLE,
    "INSERT INTO arbor_search_repeat(term, id, tf) "
    "SELECT j.key, t.id, j.value FROM arbor_search_tf t, json_each(t.tf) j",
    "DROP TRIGGER arbor_search_pending_ai",
    "DROP TRIGGER arbor_search_pending_bulk",
    "DROP TABLE arbor_search_tf",
    _PENDING_AI,
    _PENDING_BULK,
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0009_sqlite_search_counts")]
    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
