"""Raw DDL in migrations: by database vendor (full-text structures differ), and the two
table moves migrations 0015, 0017 and 0018 share."""

from collections.abc import Callable, Sequence
from typing import Any


def per_vendor(statements: dict[str, list[str]]) -> Callable[[Any, Any], None]:
    def run(apps: Any, schema_editor: Any) -> None:
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


# How a table names its session, by the column's name: its type and the arbor_session
# column it names (the id until 0015, the number after).
SESSION_COLUMNS = {"session_id": ("varchar(36)", "id"), "session_key": ("bigint", "key")}


def session_reference(column: str) -> str:
    """The definition of a column naming a session (session_id or session_key)."""
    kind, target = SESSION_COLUMNS[column]
    return (f'"{column}" {kind} NOT NULL REFERENCES "arbor_session" ("{target}") '
            "DEFERRABLE INITIALLY DEFERRED")


def sqlite_rebuild(cur: Any, table: str, create: str, fill: str,
                   attached: Sequence[str]) -> None:
    """SQLite cannot change a column in place: `create` makes `<table>_next`, `fill` copies
    the rows into it, the old table goes (with its indexes and triggers), the new one
    takes its name and `attached` makes its indexes and triggers. The AUTOINCREMENT
    high-water mark is kept: ids are never reused (index rowids are made of message seqs).
    Statements run without parameters: a literal % is written as it is."""
    cur.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
    row = cur.fetchone()
    for statement in (create, fill, f'DROP TABLE "{table}"',
                      f'ALTER TABLE "{table}_next" RENAME TO "{table}"', *attached):
        cur.execute(statement)
    if row is not None:
        cur.execute("UPDATE sqlite_sequence SET seq = max(seq, %s) WHERE name = %s",
                    [row[0], table])


def pg_move_session(table: str, old: str, new: str, after: Sequence[str]) -> list[str]:
    """Postgres: `table` names its session by `new` instead of `old`, filled from
    arbor_session. Dropping `old` drops its foreign key and the unique pairs and indexes
    naming it; `after` makes those again on `new`."""
    kind, target = SESSION_COLUMNS[new]
    source = SESSION_COLUMNS[old][1]
    return [
        f"ALTER TABLE {table} ADD COLUMN {new} {kind}",
        f"UPDATE {table} t SET {new} = s.{target} FROM arbor_session s WHERE s.{source} = t.{old}",
        f"ALTER TABLE {table} ALTER COLUMN {new} SET NOT NULL",
        f"ALTER TABLE {table} DROP COLUMN {old}",
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_{new}_fk FOREIGN KEY ({new}) "
        f"REFERENCES arbor_session ({target}) DEFERRABLE INITIALLY DEFERRED",
        *after,
    ]
