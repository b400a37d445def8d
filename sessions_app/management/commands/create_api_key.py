"""create_api_key <username> [--agent <agent_id>] [--name NAME]: print a new API key.

Creates the user when missing (without a usable password: the key is how it signs in).
The raw key is the last line printed, so scripts can take it with `tail -n 1`; only its
hash is stored.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from sessions_app.auth import create_key
from sessions_app.models import Agent


class Command(BaseCommand):
    help = "Create an API key for a user (made if missing), optionally limited to one agent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--agent", help="Limit the key to this agent id (the user's own).")
        parser.add_argument("--name", default="", help="A note to tell keys apart.")

    def handle(self, *args: Any, username: str, agent: str | None, name: str,
               **options: Any) -> None:
        users = get_user_model()
        with transaction.atomic():
            user = users.objects.filter(username=username).first()
            # Check the agent before creating anything, so a failure changes nothing
            # and prints nothing but the error.
            limited = self._agent(user, username, agent) if agent is not None else None
            if user is None:
                user = users.objects.create_user(username)  # no usable password
                self.stdout.write(f"Created user {username!r}.")
            key, raw = create_key(user, agent=limited, name=name[:100])
        scope = f"limited to agent {limited.name!r} ({limited.id})" if limited else "all agents"
        self.stdout.write(f"API key {key.prefix}… for {username!r}, {scope}. "
                          "Store it now: it is not shown again.")
        self.stdout.write(raw)

    @staticmethod
    def _agent(user: Any, username: str, agent_id: str) -> Agent:
        if user is None:
            raise CommandError(f"no user {username!r}, so no agent {agent_id!r} to limit the "
                               "key to; create the user's agent first, or leave out --agent")
        limited = Agent.objects.filter(id=agent_id, owner=user).first()
        if limited is None:
            raise CommandError(f"user {username!r} has no agent {agent_id!r}")
        return limited
