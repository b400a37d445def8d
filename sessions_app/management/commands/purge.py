"""Clear deleted content out of the database files (SQLite) or vacuum (Postgres)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.storage import jobs, purge


class Command(BaseCommand):
    help = ("Make deleted messages unrecoverable: SQLite merges the full-text index and "
            "truncates the WAL (deleted rows are zeroed by secure_delete); Postgres vacuums.")

    def handle(self, *args: Any, **options: Any) -> None:
        with jobs.exclusive("purge", wait=jobs.COMMAND_WAIT) as mine:
            if not mine:
                raise CommandError("another process is purging; try again when it is done")
            done = purge.purge()
        self.stdout.write(", ".join(f"{k}: {v}" for k, v in done.items()))
