"""One chat turn at a time per session, refused by the engine at every door
(memory_core/busy.py), on SQLite and Postgres: a second turn meets Conflict and stores
nothing; a turn that ends (done, stopped, failed, or its process gone) frees the session;
of simultaneous starts exactly one wins.

Real threads, real connections: these tests commit (transaction=True)."""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from memory_core import Conflict, SessionManager, busy
from memory_core.llm.demo import DemoModel
from memory_core.messages import now
from sessions_app import models

from .test_stop_turn import DELAY, Gated, manager_for, run_in_thread, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def texts(manager: SessionManager, sid: str) -> list[str]:
    return [m.text for m in manager.get_session(sid).storage.all_messages(sid)]


def test_a_second_turn_while_one_streams_is_refused_and_stores_nothing(agent):
    manager = manager_for(agent, DemoModel())
    sid = manager.create("busy").id
    running = manager.get_session(sid).chat("first question", stream=True)
    first = next(running)  # the user message is stored, the answer under way
    assert first["type"] == "text_delta"
    before = texts(manager, sid)
    other = SessionManager.for_agent(agent).with_llm(DemoModel()).get_session(sid)
    for start in (lambda: other.chat("second question"),
                  lambda: other.chat("second question", stream=True),
                  lambda: other.compact()):
        with pytest.raises(Conflict) as refused:
            start()
        assert refused.value.code == "conflict" and "busy" in refused.value.detail
    assert texts(manager, sid) == before
    assert manager.get(sid).status == "thinking"
    assert list(running)[-1]["type"] == "done"  # the first turn is not disturbed
    assert manager.get(sid).status == "idle"
    assert other.chat("second question").role == "assistant"  # free again
    assert "second question" in texts(manager, sid)


def test_a_turn_started_but_never_read_frees_the_session_when_closed(agent):
    manager = manager_for(agent, DemoModel())
    session = manager.get_session(manager.create("x").id)
    turn = session.chat("hello", stream=True)
    with pytest.raises(Conflict):
        session.chat("again")
    turn.close()
    assert manager.get(session.id).status == "idle"
    assert session.chat("again").role == "assistant"


def test_a_stopped_streaming_turn_frees_the_session(agent):
    manager = manager_for(agent, DemoModel(stream_delay=DELAY))
    sid = manager.create("stop me").id
    thread, out = run_in_thread(lambda: list(manager.get_session(sid).chat("hi", stream=True)))
    wait_for(lambda: models.Session.objects.get(id=sid).turn_id is not None)
    other = manager_for(agent, DemoModel()).get_session(sid)
    with pytest.raises(Conflict):
        other.chat("meanwhile")
    assert other.request_stop() is True
    thread.join(10)
    assert "error" not in out, out
    assert out["result"][-1]["message"].metadata["stopped"] is True
    assert other.chat("after the stop").role == "assistant"


def test_a_failed_turn_frees_the_session(agent):
    class Broken(DemoModel):
        def complete(self, **_: Any) -> Any:
            raise RuntimeError("model down")

    manager = manager_for(agent, Broken())
    sid = manager.create("x").id
    with pytest.raises(RuntimeError):
        manager.get_session(sid).chat("hi")
    assert manager.get(sid).status == "error"
    assert manager_for(agent, DemoModel()).get_session(sid).chat("again").role == "assistant"


def test_a_non_streaming_turn_holds_the_session_until_it_ends(agent):
    llm = Gated()
    manager = manager_for(agent, llm)
    sid = manager.create("x").id
    thread, out = run_in_thread(lambda: manager.get_session(sid).chat("hi"))
    assert llm.started.wait(10)
    with pytest.raises(Conflict):
        manager_for(agent, DemoModel()).get_session(sid).chat("meanwhile")
    llm.go.set()
    thread.join(10)
    assert "error" not in out, out
    assert "meanwhile" not in texts(manager, sid)
    assert manager.get_session(sid).chat("after").role == "assistant"


@pytest.mark.parametrize("rounds", range(3))
def test_of_simultaneous_starts_exactly_one_wins(agent, rounds):
    sid = SessionManager.for_agent(agent).create("race").id
    starters = 6
    barrier = threading.Barrier(starters)
    outcomes: list[str] = []

    def start() -> None:
        session = SessionManager.for_agent(agent).get_session(sid)
        barrier.wait(10)
        try:
            busy.claim(session, "thinking")
            outcomes.append("won")
        except Conflict:
            outcomes.append("refused")

    threads = [run_in_thread(start)[0] for _ in range(starters)]
    for thread in threads:
        thread.join(20)
    assert sorted(outcomes) == ["refused"] * (starters - 1) + ["won"]


def _held_by(sid: str, turn_id: str, *, seen_ago: float) -> None:
    models.Session.objects.filter(id=sid).update(
        status="thinking", turn_id=turn_id, turn_seen_at=now() - timedelta(seconds=seen_ago))


def test_a_turn_whose_process_died_does_not_hold_the_session(agent):
    """A server that crashed mid-turn left its claim: a process of this host that no
    longer runs (here: a pid no process has), or a claim not refreshed within the lease
    (a holder on another host) is free; a fresh one from another host is respected."""
    manager = manager_for(agent, DemoModel())
    sid = manager.create("crashed").id
    session = manager.get_session(sid)
    dead_pid = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    _held_by(sid, f"{busy._HOST}:{dead_pid}:gone:turn", seen_ago=1)
    assert manager.get(sid).status == "thinking"
    assert session.chat("after the crash").role == "assistant"

    _held_by(sid, "another-host:1:p:turn", seen_ago=1)
    with pytest.raises(Conflict):
        session.chat("refused: a live turn elsewhere")
    assert manager.get(sid).status == "thinking"
    _held_by(sid, "another-host:1:p:turn", seen_ago=busy.TURN_LEASE_SECONDS + 5)
    assert manager.get(sid).status == "error"  # what reads and the page show
    assert models.Session.objects.get(id=sid).shown_status == "error"
    assert session.chat("after the lease").role == "assistant"
    assert manager.get(sid).status == "idle"


def test_stop_frees_a_session_whose_turn_died(agent):
    manager = manager_for(agent, DemoModel())
    sid = manager.create("crashed").id
    session = manager.get_session(sid)
    _held_by(sid, f"{busy._HOST}:{os.getpid()}:an-earlier-process:turn", seen_ago=1)
    assert session.request_stop() is False  # nothing was running: freed, not stopped
    row = models.Session.objects.get(id=sid)
    assert row.turn_id is None and row.status == "error"
    assert session.chat("go on").role == "assistant"


def test_a_running_turn_refreshes_its_claim(agent, monkeypatch):
    monkeypatch.setattr(busy, "HEARTBEAT_SECONDS", 0.0)
    manager = manager_for(agent, DemoModel(stream_delay=DELAY))
    sid = manager.create("alive").id
    turn = manager.get_session(sid).chat("hello there", stream=True)
    next(turn)
    models.Session.objects.filter(id=sid).update(
        turn_seen_at=now() - timedelta(seconds=busy.TURN_LEASE_SECONDS - 1))
    for _ in range(10):
        next(turn)
    seen = models.Session.objects.get(id=sid).turn_seen_at
    assert now() - seen < timedelta(seconds=5)
    turn.close()
    connection.close()
