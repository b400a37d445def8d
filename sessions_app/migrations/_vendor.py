"""Run raw DDL by database vendor from a migration (full-text structures differ)."""

from collections.abc import Callable
from typing import Any


def per_vendor(statements: dict[str, list[str]]) -> Callable[[Any, Any], None]:
    def run(apps: Any, schema_editor: Any) -> None:
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run
