"""Bulk loads (issue 27): `append_all`, the batch endpoint, fork, an Arbor document's
import and another tool's export (ChatGPT) through `import_conversations`, each in
messages per second beside a same-run baseline: the same rows written by the raw
driver with executemany into a plain table (no index, no tree, no events).

Targets: 10,000 messages/s on SQLite, 5,000 on Postgres (as µs per message: 100 and
200). On SQLite every figure is this process's CPU time (all the work happens in it, and a
machine shared with other jobs stretches the wall clock, not that); on Postgres, where
the server does part of the work, the wall clock. `python -m benchmarks.bulk [--quick]` runs only these rows on a throwaway database;
`make bench` runs them with the rest.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson
from django.db import connection, transaction
from django.test import Client

from memory_core import SessionManager
from memory_core.imports import import_conversations
from memory_core.imports.reading import stream
from memory_core.messages import prepare
from memory_core.transfer import export_session, import_session

from .chat_import import write_chatgpt
from .report import Result, Target


def clock() -> float:
    return time.process_time() if connection.vendor == "sqlite" else time.perf_counter()


CHAIN = 1_000  # messages per append_all call and per batch request (the API's limit)
RAW_TABLE = "bench_bulk_raw"


def target_rate() -> int:
    return 10_000 if connection.vendor == "sqlite" else 5_000


def _raw_rows(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    rows = []
    for i, m in enumerate(messages):
        new = prepare(m)
        rows.append((i + 1, new.id, i or None, new.role, new.parts_json, new.metadata_json,
                     len(new.text.split())))
    return rows


def _raw_seconds(messages: list[dict[str, Any]]) -> float:
    """Preparing the rows and executemany-inserting them, in chains of CHAIN, each in its
    own transaction: the floor any bulk load of these messages stands on."""
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {RAW_TABLE}")
        cur.execute(f"CREATE TABLE {RAW_TABLE} (seq bigint PRIMARY KEY, message_id text, "
                    "parent_seq bigint, role text, parts text, metadata text, length int)")
    started = clock()
    for start in range(0, len(messages), CHAIN):
        rows = _raw_rows(messages[start:start + CHAIN])
        offset = start
        with transaction.atomic(), connection.cursor() as cur:
            cur.executemany(f"INSERT INTO {RAW_TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s)",
                            [(r[0] + offset, *r[1:]) for r in rows])
    seconds = clock() - started
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE {RAW_TABLE}")
    return seconds


def _row(key: str, what: str, n: int, seconds: float, raw: float) -> Result:
    rate, goal = n / seconds, target_rate()
    return Result(f"bulk_{key}", f"{what}: {rate:,.0f} msg/s"
                  f"{' of CPU' if connection.vendor == 'sqlite' else ''}, target ≥ {goal:,} "
                  f"(raw executemany {n / raw:,.0f} msg/s)",
                  seconds / n * 1e6, raw / n * 1e6, "µs/msg", Target(1e6 / goal, of_ratio=False))


def _best(fn: Callable[[], float], rounds: int) -> float:
    return statistics.median(fn() for _ in range(rounds))


def run(manager: SessionManager, conversation: Callable[[int], list[dict[str, Any]]], n: int,
        progress: Callable[[str], None], rounds: int = 3) -> list[Result]:
    """Every bulk row on `n` messages (the import of another tool's: n rounded to
    conversations of 100, with a regenerated answer every 10th)."""
    messages = conversation(n)
    raw = _best(lambda: _raw_seconds(messages), rounds)
    results: list[Result] = []

    def chains() -> float:
        session = manager.get_session(manager.create("bulk").id)
        started = clock()
        for start in range(0, n, CHAIN):
            session.append_messages(messages[start:start + CHAIN])
        return clock() - started

    progress(f"bulk: append_all, {n:,} messages in chains of {CHAIN:,}")
    results.append(_row("append_all", f"append_all, {n:,} msgs in chains of {CHAIN:,}", n,
                        _best(chains, rounds), raw))

    progress("bulk: the batch endpoint")
    from sessions_app.auth import create_key
    from sessions_app.models import Agent

    _, key = create_key(Agent.objects.get(id=manager.agent_id).owner)
    client = Client(headers={"Authorization": f"Bearer {key}"})
    bodies = [orjson.dumps({"messages": [{"role": m["role"], "parts": m["parts"]}
                                         for m in messages[s:s + CHAIN]]})
              for s in range(0, n, CHAIN)]

    def batches() -> float:
        url = f"/api/v1/sessions/{manager.create('batch').id}/messages/batch"
        started = clock()
        for body in bodies:
            answer = client.post(url, body, content_type="application/json")
            assert answer.status_code == 201, answer.content[:300]
        return clock() - started

    results.append(_row("batch_api", f"POST …/messages/batch, {n:,} msgs, {CHAIN:,} a request",
                        n, _best(batches, rounds), raw))

    source = manager.create("fork source").id
    source_session = manager.get_session(source)
    for start in range(0, n, CHAIN):
        source_session.append_messages(messages[start:start + CHAIN])
    leaf = source_session.get_latest_leaf()
    assert leaf is not None

    def fork() -> float:
        started = clock()
        manager.fork(source, leaf.id)
        return clock() - started

    progress("bulk: fork")
    results.append(_row("fork", f"fork at the leaf of a {n:,}-msg session", n,
                        _best(fork, rounds), raw))

    document = orjson.loads(orjson.dumps(export_session(manager, source)))

    def restore() -> float:
        started = clock()
        import_session(manager, document)
        return clock() - started

    progress("bulk: import of an Arbor session document")
    results.append(_row("import_arbor", f"import an Arbor document of {n:,} msgs", n,
                        _best(restore, rounds), raw))

    per = 100
    out = io.StringIO()
    write_chatgpt(out, conversations=max(1, n // per), messages=per, text=640)
    export = out.getvalue().encode()
    stored = max(1, n // per) * (per + per // 10)
    rounds_done = [0]

    def chatgpt() -> float:
        rounds_done[0] += 1
        # Each round a new agent: a second import of the same file would skip everything.
        again = SessionManager.for_agent(Agent.objects.create(
            owner=Agent.objects.get(id=manager.agent_id).owner, name=f"import {rounds_done}"))
        started = clock()
        found, conversations = stream(io.BytesIO(export), "auto")
        summary = import_conversations(again, found, conversations)
        seconds = clock() - started
        assert sum(s["messages"] for s in summary.sessions) == stored
        return seconds

    progress(f"bulk: import of a ChatGPT export, {stored:,} msgs in {n // per} conversations")
    results.append(_row("import_chatgpt", f"import a ChatGPT export ({stored:,} msgs in "
                        f"{n // per} conversations, parse included)", stored,
                        _best(chatgpt, rounds), raw * stored / n))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bulk", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 messages, not 10,000")
    parser.add_argument("--messages", type=int, default=None)
    args = parser.parse_args(argv)
    from . import database

    with database.throwaway() as vendor:
        from django.contrib.auth import get_user_model

        from sessions_app.models import Agent

        from .corpus import Corpus
        from .report import table

        user, _ = get_user_model().objects.get_or_create(username="arbor-bench")
        manager = SessionManager.for_agent(Agent.objects.create(owner=user, name="bulk"))
        n = args.messages or (2_000 if args.quick else 10_000)
        results = run(manager, Corpus().conversation, n,
                      lambda s: print(s, file=sys.stderr, flush=True))
        print(table(results, title=f"Bulk loads on {vendor}"))
        return 1 if any(r.ok is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
