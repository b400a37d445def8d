"""Raw DDL in migrations: by database vendor (full-text structures differ), and SQLite's
table rebuild for a column it cannot change in place."""

from collections.abc import Callable, Sequence
from typing import Any


def per_vendor(statements: dict[str, list[str]]) -> Callable[[Any, Any], None]:
    def run(apps: Any, schema_editor: Any) -> None:
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


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
