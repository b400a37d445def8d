"""`python -m benchmarks.semantic [--messages N]`: search by words and meaning over one
large agent, the question embedded by the configured model (the offline one by default).

The agent's messages are appended through the engine; their vectors are random unit
vectors stored as the background worker stores them (int8), since embedding 100,000
messages takes the offline model far longer than the search being measured, and the
scan's cost does not depend on what the vectors say. Also reported: the offline
model's embedding throughput (messages per second) on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from . import database

BATCH = 2_000
SESSIONS = 20
TARGET_MS = {"sqlite": 30.0, "postgresql": 40.0}  # agent-wide p50 at 100,000 messages


def _fill(manager, count: int) -> None:  # type: ignore[no-untyped-def]
    from .corpus import Corpus

    corpus = Corpus()
    per = count // SESSIONS
    for s in range(SESSIONS):
        session = manager.get_session(manager.create(f"s{s}").id)
        for start in range(0, per, BATCH):
            session.append_messages(corpus.conversation(min(BATCH, per - start)))


def _vectors(agent_id: str, model: str, dim: int) -> None:
    from django.db import connection, transaction

    from sessions_app.storage import vectors

    rng = np.random.default_rng(7)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT m.seq, m.parts FROM arbor_message m JOIN arbor_session s "
                    "ON s.key = m.session_key WHERE s.agent_id = %s", [agent_id])
        rows = cur.fetchall()
        for start in range(0, len(rows), BATCH):
            chunk = rows[start:start + BATCH]
            made = rng.standard_normal((len(chunk), dim)).astype(np.float32)
            made /= np.linalg.norm(made, axis=1, keepdims=True)
            vectors.store(cur, model=model, rows=[
                (seq, agent_id, parts if isinstance(parts, str) else bytes(parts).decode(), v)
                for (seq, parts), v in zip(chunk, made, strict=True)])


def settle() -> None:
    """Postgres: what autovacuum does after a load like this one (the planner's statistics
    of the new rows), done now, since a server may run with autovacuum off."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("ANALYZE")


def run(messages: int, progress=print, repeat: int = 1) -> list[str]:  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from memory_core import SessionManager, hybrid
    from sessions_app.models import Agent
    from sessions_app.semantic import config

    from .corpus import Corpus

    embedder = config.embedder()
    if embedder is None:
        return ["search by meaning is off (ARBOR_EMBEDDINGS=off): nothing to measure"]
    user, _ = get_user_model().objects.get_or_create(username="arbor-semantic-bench")
    manager = SessionManager.for_agent(Agent.objects.create(owner=user, name="semantic"))
    progress(f"semantic: appending {messages:,} messages")
    _fill(manager, messages)
    dim = embedder.dim or len(embedder.embed_query("size"))
    progress("semantic: storing their vectors")
    _vectors(manager.agent_id, embedder.model, dim)
    settle()
    # The messages' own vocabulary (the corpus' default seed makes its words), other picks
    # than the fill's: a Corpus(seed=11) has other made-up words, none of which the
    # messages hold, so each word search matched common words only and scored all their rows.
    asking = Corpus()
    asking.rng.seed(11)
    questions = asking.questions(30)
    manager.search(questions[0], 20)  # the first search reads the agent's vectors
    hybrid_ms, words_ms, embed_ms, scan_ms, again_ms, cpu_ms = [], [], [], [], [], []
    lexical = SessionManager(manager.agent_id, manager.storage)
    lexical.config.embedder = None
    forget = getattr(hybrid, "forget_queries", lambda: None)
    for q in questions * max(1, repeat):  # rounds: a shared machine's noise evens out
        forget()  # a question not asked before: its embedding is paid
        t, cpu = time.perf_counter(), time.process_time()
        hits = manager.search(q, 20, full=False)
        hybrid_ms.append((time.perf_counter() - t) * 1e3)
        cpu_ms.append((time.process_time() - cpu) * 1e3)
        assert hits.semantic == "on", hits.semantic
        t = time.perf_counter()
        manager.search(q, 20, full=False)  # asked again (its vector cached, if kept)
        again_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        lexical.search(q, 20, full=False)
        words_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        vector = embedder.embed_query(q)
        embed_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        manager.storage.nearest(agent_id=manager.agent_id, model=embedder.model,
                                query_vector=lambda v=vector: v, limit=20)
        scan_ms.append((time.perf_counter() - t) * 1e3)
    texts = [m["parts"][0]["text"] for m in Corpus(seed=5).conversation(64)]
    t = time.perf_counter()
    embedder.embed_passages(texts)
    rate = len(texts) / (time.perf_counter() - t)
    from django.db import connection

    from sessions_app.storage import vector_index

    target = TARGET_MS.get(connection.vendor, 40.0)
    scan = ("exact scan" if messages < vector_index.PREFILTER_FROM else
            f"signs, then the nearest {vector_index.RESCORE_SHARE:.0%} scored exactly")
    p50 = statistics.median(hybrid_ms)
    verdict = "met" if p50 <= target else "MISSED"
    return [
        f"Search by meaning on {connection.vendor}, one agent of {messages:,} messages "
        f"({embedder.model}, {dim} dimensions, int8 stored, {scan}; {len(hybrid_ms)} "
        f"searches, load {os.getloadavg()[0]:.1f}):",
        f"  agent-wide hybrid search p50 {statistics.median(hybrid_ms):.1f} ms "
        f"(p90 {sorted(hybrid_ms)[int(len(hybrid_ms) * 0.9)]:.1f}), query embedding "
        f"included (CPU time, all threads: p50 {statistics.median(cpu_ms):.1f} ms, what it "
        f"costs on an idle machine, less any overlap); words alone p50 {statistics.median(words_ms):.1f} ms; the query "
        f"embedding alone p50 {statistics.median(embed_ms):.1f} ms; the same question again "
        f"p50 {statistics.median(again_ms):.1f} ms; the nearest by meaning "
        f"alone (scan and rows, the question embedded) p50 {statistics.median(scan_ms):.1f} ms",
        f"  embedding throughput: {rate:.1f} messages per second (batches of 64)",
        f"  target: p50 <= {target:.0f} ms: {verdict}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.semantic", description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="ask the 30 questions this many rounds (a p50 over more searches)")
    args = parser.parse_args(argv)
    database.BENCH_DB = f"arbor_semantic_{os.getpid()}"
    with database.throwaway():
        lines = run(args.messages, lambda m: print(m, file=sys.stderr), args.repeat)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
