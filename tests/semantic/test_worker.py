"""The background worker embeds what is written, backs off while the embedder fails and
catches up after; writes never wait for it."""

from __future__ import annotations

import time

import pytest

from sessions_app.models import MessageVector
from sessions_app.semantic.embed import pending_count
from sessions_app.semantic.status import status
from sessions_app.semantic.worker import Worker
from tests.conftest import user_msg

pytestmark = pytest.mark.django_db(transaction=True)


def _until(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def worker(fake_embeddings):
    running = Worker(poll=0.02, sweep=0.3, max_backoff=0.05)
    running.start()
    yield running
    running.stop()


def test_worker_embeds_new_and_edited_messages(manager, session, fake_embeddings, worker):
    a = session.append_message(user_msg("picked up the new Skoda yesterday"))
    session.append_message(user_msg("Tom finally moved to Porto"))
    _until(lambda: MessageVector.objects.count() == 2)
    session.update_message({**user_msg("I could eat tiramisu every day"), "id": a.id})
    _until(lambda: MessageVector.objects.count() == 2
           and pending_count(fake_embeddings, agent_id=manager.agent_id) == 0)


def test_worker_backs_off_while_failing_and_catches_up(manager, session, fake_embeddings,
                                                       worker, monkeypatch):
    from sessions_app.semantic import worker as worker_module

    monkeypatch.setattr(worker_module, "_worker", worker)
    fake_embeddings.fail = True
    started = time.perf_counter()
    session.append_message(user_msg("written while the embedder is down"))
    assert time.perf_counter() - started < 1.0  # the write did not wait
    _until(lambda: worker.failures >= 3)
    state = status(manager.agent_id)
    assert state["failing"] and "down" in state["error"] and state["pending"] == 1
    fake_embeddings.fail = False
    _until(lambda: worker.failures == 0 and MessageVector.objects.count() == 1)
    assert status(manager.agent_id)["pending"] == 0


def test_one_worker_embeds_at_a_time_and_another_takes_over(manager, session, fake_embeddings,
                                                            monkeypatch):
    """Every server process starts a worker; one embeds (the lock's holder), so no message
    is embedded twice, and when it stops another carries on."""
    embedded: list[str] = []
    real = fake_embeddings.embed_passages

    def counting(texts):
        embedded.extend(texts)
        return real(texts)

    monkeypatch.setattr(fake_embeddings, "embed_passages", counting)
    first, second = Worker(poll=0.02, sweep=0.1), Worker(poll=0.02, sweep=0.1)
    first.start()
    _until(lambda: first.leader.held)
    second.start()
    try:
        for n in range(6):
            session.append_message(user_msg(f"message number {n} about the garden"))
        _until(lambda: MessageVector.objects.count() == 6)
        time.sleep(0.3)  # several sweeps of both
        assert sorted(embedded) == sorted(f"message number {n} about the garden"
                                          for n in range(6))
        assert first.leader.held and not second.leader.held
        first.stop()
        assert not first.leader.held
        session.append_message(user_msg("written after the first worker stopped"))
        _until(lambda: MessageVector.objects.count() == 7)
        assert second.leader.held
        assert len(embedded) == 7
    finally:
        first.stop()
        second.stop()
