"""Stopping a running chat turn from another thread (as another worker would), on SQLite
and Postgres: the request goes through the database, the streaming turn notices within
a few tenths of a second, keeps its partial answer and ends with `done`.

Real threads, real connections: these tests commit (transaction=True)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection

from memory_core import SessionManager
from memory_core.llm.demo import DemoModel
from sessions_app import models

pytestmark = pytest.mark.django_db(transaction=True)

DELAY = 0.05  # seconds between the demo model's words: its canned help is ~70 words


class Gated(DemoModel):
    """A non-streaming model whose first call waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.go = threading.Event(), threading.Event()

    def complete(self, **kwargs: Any) -> Any:
        if not self.started.is_set():
            self.started.set()
            assert self.go.wait(10)
        return super().complete(**kwargs)


def manager_for(agent, llm) -> SessionManager:
    return (SessionManager.for_agent(agent).with_llm(llm)
            .with_context("memory", description="Learned facts", max_tokens=500))


def run_in_thread(work) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = work()
        except BaseException as exc:  # asserted on by the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_streaming_turn_stops_from_another_thread(agent):
    manager = manager_for(agent, DemoModel(stream_delay=DELAY))
    sid = manager.create("stop me").id
    deltas: list[float] = []

    def turn() -> list[dict[str, Any]]:
        events = []
        for event in manager.get_session(sid).chat("hello there", stream=True):
            if event["type"] == "text_delta":
                deltas.append(time.monotonic())
            events.append(event)
        return events

    thread, out = run_in_thread(turn)
    wait_for(lambda: len(deltas) >= 3)
    # Another worker's view of the session: a fresh manager, the database in between.
    other = SessionManager.for_agent(agent).get_session(sid)
    asked = time.monotonic()
    assert other.request_stop() is True
    thread.join(10)
    assert not thread.is_alive() and "error" not in out, out
    events = out["result"]
    assert events[-1]["type"] == "done"
    assert deltas[-1] - asked < 0.5  # noticed within ~STOP_CHECK_SECONDS and a chunk
    partial = events[-1]["message"]
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert partial.text == streamed and 0 < len(streamed)
    full = DemoModel().complete(system="", history=[], tools=[]).text
    assert len(partial.text) < len(full) / 2
    stored = other.get_message(partial.id)
    assert stored.metadata["interrupted"] is True and stored.metadata["stopped"] is True
    assert stored.text == partial.text
    info = manager.get(sid)
    assert info.status == "idle"
    assert other.request_stop() is False  # nothing runs now: nothing stored
    # The next turn starts with the request forgotten, and runs to its end.
    assert models.Session.objects.get(id=sid).stop_requested_at is not None
    fast = manager_for(agent, DemoModel())
    answer = fast.get_session(sid).chat("hello again")
    assert "interrupted" not in answer.metadata
    assert models.Session.objects.get(id=sid).stop_requested_at is None


def test_a_non_streaming_turn_stops_before_its_next_model_call(agent):
    llm = Gated()
    manager = manager_for(agent, llm)
    sid = manager.create("stop between steps").id
    thread, out = run_in_thread(lambda: manager.get_session(sid).chat("remember that I like tea"))
    assert llm.started.wait(10)
    assert SessionManager.for_agent(agent).get_session(sid).request_stop() is True
    llm.go.set()
    thread.join(10)
    assert not thread.is_alive() and "error" not in out, out
    final = out["result"]
    roles = [m.role for m in manager.get_session(sid).get_history()]
    assert roles == ["user", "assistant"]  # the tool ran; no answer was asked for
    assert final.role == "assistant" and final.parts[0]["type"] == "tool-set_context"
    assert final.parts[0]["state"] == "output-available"
    assert manager.get(sid).status == "idle"


def test_stop_without_a_running_turn_stores_nothing(agent):
    manager = manager_for(agent, DemoModel())
    session = manager.get_session(manager.create("idle").id)
    assert session.request_stop() is False
    assert models.Session.objects.get(id=session.id).stop_requested_at is None
    session.set_status("thinking")
    assert session.request_stop() is True
    assert session.storage.stop_requested(session.id) is True
