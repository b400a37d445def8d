"""embed [--agent ID] [--wait]: embed the messages that wait for a vector, now.

How an import or an upgrade catches up without waiting for the server's background
worker. Without --wait, one pass over the messages waiting when it starts; with --wait,
passes until none is left (messages written meanwhile included), retrying a failing
embedder a few times with backoff. A progress bar on a terminal, a summary otherwise.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_core.embedding import EmbedderUnavailable, WrongDimension
from memory_core.limits import is_id
from sessions_app.models import Agent
from sessions_app.semantic import config
from sessions_app.semantic.embed import embed_batch, pending_count

RETRIES = 5
BAR = 30


class Command(BaseCommand):
    help = "Embed messages that have no vector yet (search by meaning)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="Only this agent's messages.")
        parser.add_argument("--wait", action="store_true",
                            help="Return only when no message is left waiting.")

    def handle(self, *args: Any, agent: str | None, wait: bool, **options: Any) -> None:
        embedder = config.embedder()
        if embedder is None:
            raise CommandError("search by meaning is off (ARBOR_EMBEDDINGS=off)")
        if agent is not None and not (is_id(agent) and Agent.objects.filter(id=agent).exists()):
            raise CommandError(f"agent {agent} not found")
        total = pending_count(embedder, agent_id=agent)
        tty = sys.stdout.isatty()
        done, after, failures, started = 0, 0, 0, time.monotonic()
        while True:
            try:
                read, last = embed_batch(embedder, after=after, agent_id=agent)
            except (EmbedderUnavailable, WrongDimension) as exc:
                failures += 1
                if not wait or failures > RETRIES or isinstance(exc, WrongDimension):
                    raise CommandError(f"embedding failed: {exc.detail}") from None
                time.sleep(min(30.0, 2.0 ** (failures - 1)))
                continue
            failures = 0
            if read:
                done, after = done + read, last
                total = max(total, done)
                if tty:
                    self._bar(done, total)
                continue
            if not wait or after == 0:
                break
            after = 0  # one more pass from the start: anything written or edited meanwhile
        if tty:
            self.stdout.write("")
        seconds = time.monotonic() - started
        rate = f", {done / seconds:.1f} per second" if done and seconds > 0 else ""
        left = pending_count(embedder, agent_id=agent)
        self.stdout.write(f"embedded {done} messages with {embedder.model} in {seconds:.1f} s"
                          f"{rate}; {left} waiting")

    def _bar(self, done: int, total: int) -> None:
        filled = BAR * done // max(total, 1)
        self.stdout.write(f"\r[{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}", ending="")
        self.stdout.flush()
