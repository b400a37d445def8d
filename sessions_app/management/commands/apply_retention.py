"""Apply every agent's retention policy (or one agent's); --dry-run lists what would go."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app import models
from sessions_app.lifecycle import retention
from sessions_app.storage import jobs, purge


class Command(BaseCommand):
    help = "Delete the sessions retention policies no longer keep, then purge."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="Only this agent's policy (by id).")
        parser.add_argument("--dry-run", action="store_true",
                            help="List the sessions that would go; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        agent_id = options["agent"]
        if agent_id is not None and not models.Agent.objects.filter(id=agent_id).exists():
            raise CommandError(f"agent {agent_id} not found")
        dry = options["dry_run"]
        if dry:
            outcomes = retention.apply_all(agent_id=agent_id, dry_run=True)
        else:  # not while a worker applies them (it may be deleting the same sessions)
            with jobs.exclusive("retention", wait=jobs.COMMAND_WAIT) as mine:
                if not mine:
                    raise CommandError("another process is applying the retention "
                                       "policies; try again when it is done")
                outcomes = retention.apply_all(agent_id=agent_id)
        verb = "would delete" if dry else "deleted"
        for o in outcomes:
            for session_id in o.sessions:
                self.stdout.write(f"{o.agent_id}\t{session_id}")
            self.stdout.write(f"agent {o.agent_id}: {verb} {len(o.sessions)} sessions "
                              f"({o.messages} messages)")
        if not dry and any(o.sessions for o in outcomes):
            purge.purge_after_commit()
