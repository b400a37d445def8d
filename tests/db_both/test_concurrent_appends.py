"""Appends that race on one session are serialised (SPEC §2), on SQLite and Postgres.

Real threads, real connections: each thread opens its own connection and closes it when
done, so these tests commit (transaction=True) instead of running inside one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memory_core import Conflict, SessionManager
from tests.conftest import assistant_msg, user_msg

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 8
PER_THREAD = 25


def run_threads(count: int, work: Callable[[int, threading.Barrier], Any]) -> tuple[list, list]:
    """Run work(i, barrier) in `count` threads started together; (results, errors)."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            results[i] = work(i, barrier)
        except BaseException as exc:  # collected and asserted on by the caller
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    return results, errors


def assert_one_chain(session, expected: int) -> list:
    history = session.get_history()
    tree = session.get_tree()
    assert session.get_message_count() == expected
    assert len(tree) == expected
    assert session.get_path_length() == expected
    assert len(history) == expected
    assert history[0].parent_id is None
    for prev, msg in zip(history, history[1:], strict=False):
        assert msg.parent_id == prev.id
    assert max(row.child_count for row in tree) == 1  # no branches
    return history


def test_concurrent_auto_parented_appends_form_one_chain(manager):
    session_id = manager.create("race").id
    agent_id = manager.agent_id

    def work(i: int, barrier: threading.Barrier) -> list[str]:
        session = SessionManager.for_agent(agent_id).get_session(session_id)
        barrier.wait()
        return [session.append_message(user_msg(f"t{i}-{n}", id=f"t{i}-{n}")).id
                for n in range(PER_THREAD)]

    results, errors = run_threads(THREADS, work)
    assert errors == []
    session = manager.get_session(session_id)
    history = assert_one_chain(session, THREADS * PER_THREAD)
    # Each writer's own messages appear in the order it wrote them.
    position = {m.id: i for i, m in enumerate(history)}
    for written in results:
        assert [position[w] for w in written] == sorted(position[w] for w in written)
    assert {m.id for m in history} == {w for written in results for w in written}


def test_concurrent_if_latest_writers_one_wins_the_other_gets_a_conflict(manager):
    session_id = manager.create("two tabs").id
    agent_id = manager.agent_id
    leaf = manager.append(session_id, user_msg("question")).id

    for round_ in range(5):

        def work(i: int, barrier: threading.Barrier, leaf: str = leaf, r: int = round_):
            session = SessionManager.for_agent(agent_id).get_session(session_id)
            barrier.wait()
            return session.append_message(assistant_msg(f"r{r} writer {i}"), if_latest=leaf)

        results, errors = run_threads(2, work)
        winners = [r for r in results if r is not None]
        assert len(winners) == 1, f"round {round_}: {results} {errors}"
        assert len(errors) == 1 and isinstance(errors[0], Conflict), errors
        winner = winners[0]
        assert winner.parent_id == leaf
        assert errors[0].current_leaf_id == winner.id
        assert winner.id in errors[0].detail
        leaf = winner.id

    session = manager.get_session(session_id)
    assert_one_chain(session, 6)


def test_concurrent_append_all_batches_stay_contiguous_chains(manager):
    session_id = manager.create("batches").id
    agent_id = manager.agent_id
    batches, size = 6, 5

    def work(i: int, barrier: threading.Barrier) -> list[list[str]]:
        manager = SessionManager.for_agent(agent_id)
        barrier.wait()
        written = []
        for b in range(batches):
            batch = [user_msg(f"w{i} b{b} m{k}", id=f"w{i}-b{b}-m{k}") for k in range(size)]
            written.append([m.id for m in manager.append_all(session_id, batch)])
        return written

    results, errors = run_threads(4, work)
    assert errors == []
    session = manager.get_session(session_id)
    history = assert_one_chain(session, 4 * batches * size)
    order = [m.id for m in history]
    for written in results:
        for batch in written:
            start = order.index(batch[0])
            assert order[start:start + size] == batch, "another writer interleaved a batch"
