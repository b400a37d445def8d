"""One benchmark run on the current Django database: every case, in a fixed order."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from memory_core import SessionManager
from sessions_app.models import Agent

from . import bulk, cases, drift, extras, live, ui
from .baseline import Baseline
from .cases import Bench, Sizes
from .memory import memory
from .report import Result
from .size import size

FULL = Sizes()
QUICK = Sizes(
    appends=1_000, sessions=20, per_session=500, branch_path=300, branches=30,
    memory_lengths=(500, 1_000, 2_000, 4_000), queries=10, rounds=5, budget=15.0,
    live_appends=150, semantic_messages=5_000,
)


def open_baseline(connection: Any) -> Baseline:
    """A raw connection to a new, empty database with the schema of Django's `connection`."""
    if connection.vendor == "sqlite":
        from .baseline_sqlite import RawSqlite

        return RawSqlite.beside(connection)
    if connection.vendor == "postgresql":
        from .baseline_postgres import RawPostgres

        return RawPostgres.beside(connection)
    raise RuntimeError(f"no raw baseline for {connection.vendor}")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(
    sizes: Sizes, *, progress: Callable[[str], None] = _stderr
) -> tuple[list[Result], list[str]]:
    """Results, and problems (Arbor and the baseline disagreeing on what they read)."""
    user, _ = get_user_model().objects.get_or_create(username="arbor-bench")
    agent = Agent.objects.create(owner=user, name="bench")
    corpus_agent = Agent.objects.create(owner=user, name="bench corpus")
    raw = open_baseline(connection)
    bench = Bench(sizes, SessionManager.for_agent(agent), raw)
    results: list[Result] = []
    started = time.perf_counter()

    def step(name: str) -> None:
        progress(f"[{time.perf_counter() - started:6.1f}s] {name}")

    try:
        step("checking that the baseline runs Arbor's statements")
        drift.check(bench)
        step(f"append: {sizes.appends:,} messages")
        found, (session, sid) = cases.append(bench)
        results += found
        step("get_history")
        results += cases.history(bench, session, sid)
        step(f"branches: {sizes.branches} off a {sizes.branch_path:,}-message path")
        results += cases.branches(bench)
        step(f"memory: paths of {', '.join(f'{n:,}' for n in sizes.memory_lengths)}")
        results += memory(bench)
        step(f"search: loading {sizes.sessions * sizes.per_session:,} messages")
        results += cases.search(bench, SessionManager.for_agent(corpus_agent))
        step("context blocks: prompt render and set_context")
        results += extras.blocks(bench)
        step("compaction: checked appends and overlays")
        results += extras.compaction(bench)
        step("JSON API: append and history over HTTP")
        results += extras.http(bench)
        step(f"bulk loads: {sizes.appends:,} messages each way")
        results += bulk.run(SessionManager.for_agent(corpus_agent), bench.corpus.conversation,
                            sizes.appends, progress, rounds=min(3, sizes.rounds))
        step("chat page: a long session beside a short one")
        results += ui.chat_page(bench)
        step("live events: WebSocket subscribers and fan-out")
        results += live.live(bench)
        if connection.vendor == "sqlite":
            step(f"database size: {sizes.appends:,} messages, Arbor and SQLiteSession")
            results += size(sizes.appends)
        step("done")
    finally:
        raw.close()
        if bench.peer is not None:
            bench.peer.close()
    return results, bench.problems
