"""Data for `python -m benchmarks.scale`: a probe agent of fixed size and other agents
that grow, all with Zipf-distributed chat text (benchmarks/corpus.py, a larger
vocabulary: a few words in every message, a long tail of rare ones).

Other agents' sessions go in through the storage's bulk path (`copy_path`, what import
and fork use: one statement per session on Postgres, index rows and term statistics
kept exactly as for any write), so a step of 100,000 messages takes a minute or two,
not the half hour appends one by one would.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core import SessionManager
from memory_core.messages import Message, new_id

from .corpus import Corpus

VOCABULARY = 30_000
OTHER_AGENTS = 4
SESSION_LEN = 500


def make_agent(username: str, name: str) -> Any:
    from django.contrib.auth.models import User

    from sessions_app.models import Agent

    user, _ = User.objects.get_or_create(username=username)
    return Agent.objects.create(owner=user, name=name)


class Loader:
    """Writes conversations of SESSION_LEN messages into agents' new sessions."""

    def __init__(self, seed: int) -> None:
        self.corpus = Corpus(vocabulary=VOCABULARY, seed=seed)
        self.clock = datetime(2026, 1, 1, tzinfo=UTC)

    def chain(self, count: int) -> list[Message]:
        out: list[Message] = []
        parent: str | None = None
        for i in range(count):
            body = self.corpus.message("user" if i % 2 == 0 else "assistant")
            self.clock += timedelta(seconds=1)
            m = Message(new_id(), parent, body["role"], body["parts"], {}, self.clock)
            out.append(m)
            parent = m.id
        return out

    def session(self, manager: SessionManager, name: str, count: int = SESSION_LEN) -> str:
        info = manager.create(name)
        storage: Any = manager.storage
        storage.copy_path(info.id, manager.agent_id, self.chain(count))
        return info.id


class Others:
    """The agents that grow: sessions spread over OTHER_AGENTS agents in turn."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.managers = [SessionManager.for_agent(make_agent(f"scale-other-{i}", f"other {i}"))
                         for i in range(OTHER_AGENTS)]
        self.turn = itertools.cycle(self.managers)
        self.count = 0

    def grow(self, messages: int, progress: Callable[[str], None],
             upkeep: Callable[[], None] = lambda: None) -> float:
        """Add about `messages` messages (whole sessions), calling `upkeep` after each;
        returns messages per second."""
        started = time.perf_counter()
        added = 0
        sessions = 0
        while added < messages:
            n = min(SESSION_LEN, messages - added)
            self.loader.session(next(self.turn), f"other {self.count + added}", n)
            added += n
            sessions += 1
            upkeep()
            if sessions % 40 == 0:
                rate = added / (time.perf_counter() - started)
                progress(f"  loaded {added:,} of {messages:,} ({rate:,.0f} msg/s)")
        self.count += added
        return added / max(time.perf_counter() - started, 1e-9)
