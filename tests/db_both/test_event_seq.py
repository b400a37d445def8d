"""The Django sink (SPEC §10): seq numbered in the write's own transaction, stored in the
outbox, published only after commit; on SQLite and Postgres."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from memory_core import Conflict, SessionManager
from sessions_app.live import events as sink_module
from sessions_app.live.events import events_after, session_group
from sessions_app.models import SessionEvent
from sessions_app.storage import outbox
from tests.conftest import assistant_msg, session_key, user_msg
from tests.db_both.test_concurrent_appends import run_threads


@pytest.fixture
def published(monkeypatch) -> list[dict[str, Any]]:
    """Frames handed to the channel layer, in publish order."""
    frames: list[dict[str, Any]] = []
    monkeypatch.setattr(sink_module, "publish", frames.append)
    return frames


def stored(session_id: str) -> list[tuple[int, str]]:
    return list(SessionEvent.objects.filter(session__id=session_id).order_by("seq")
                .values_list("seq", "type"))


@pytest.mark.django_db
def test_events_are_numbered_stored_and_published_after_commit(
        manager, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sid = manager.create("live").id
        s = manager.get_session(sid)
        a = s.append_message(user_msg("hello"))
    assert published == []  # nothing goes out before the commit
    for callback in callbacks:
        callback()
    assert [(f["type"], f["seq"]) for f in published] == [
        ("session.status", 1), ("message.appended", 2)]
    assert published[1] == {"type": "message.appended", "session_id": sid, "seq": 2,
                            "data": {"message": a.to_dict(), "parent_id": None}}
    assert stored(sid) == [(1, "session.status"), (2, "message.appended")]


@pytest.mark.django_db
def test_a_write_that_rolls_back_stores_and_publishes_nothing(
        session, published, django_capture_on_commit_callbacks):
    session.append_message(user_msg("a", id="same"))
    before = stored(session.id)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Conflict):
            session.append_message(user_msg("other", id="same"))
        with pytest.raises(Exception):  # noqa: B017 - a failing batch, whatever it raises
            session.append_messages([user_msg("fine"), {"role": "nobody", "parts": []}])
        with pytest.raises(Exception):  # noqa: B017
            session.append_messages([user_msg("fine", id="new1"), user_msg("clash", id="same")])
    assert callbacks == []
    assert stored(session.id) == before
    assert session.get_message_count() == 1
    session.append_message(assistant_msg("b"))  # the next one is numbered without a gap
    seqs = [seq for seq, _ in stored(session.id)]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.django_db
def test_events_after_in_order_and_resync_past_retention(session):
    msgs = [session.append_message(user_msg(f"m{i}")) for i in range(5)]
    frames = events_after(session.id, 0)
    assert frames is not None
    assert [f["seq"] for f in frames] == list(range(1, 7))
    assert [f["data"]["message"]["id"] for f in frames[1:]] == [m.id for m in msgs]
    assert [f["seq"] for f in events_after(session.id, 4) or []] == [5, 6]
    assert events_after(session.id, 6) == []
    assert events_after("no-such-session", 0) is None


@pytest.mark.django_db
def test_replayed_message_events_equal_the_published_frames(
        session, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        a = session.append_message(user_msg("first"))
        b = session.append_message(assistant_msg("second", metadata={"model": "m1"}))
        session.append_message(user_msg("a branch"), parent_id=a.id)
        session.update_message({"id": a.id, "role": "user",
                                "parts": [{"type": "text", "text": "first, edited"}]})
    replayed = events_after(session.id, 0)
    assert replayed is not None
    # The outbox names the message; the replay reads it back, as it is now.
    edited = session.get_message(a.id).to_dict()
    expected = [f if f["data"].get("message", {}).get("id") != a.id
                else {**f, "data": {**f["data"], "message": edited}} for f in published]
    assert replayed[0]["type"] == "session.status"  # (made with the session, before)
    assert replayed[1:] == expected
    assert [f["data"]["message"]["id"] for f in replayed
            if f["type"] == "message.appended"][1] == b.id
    rows = SessionEvent.objects.filter(session__id=session.id, type="message.appended")
    assert all(set(r.data) == {"message_ref"} for r in rows)  # (parent_id: the message's)


@pytest.mark.django_db
def test_a_replay_naming_a_deleted_message_resyncs(session):
    a = session.append_message(user_msg("kept"))
    b = session.append_message(user_msg("deleted later"))
    session.delete_messages([b.id])
    assert events_after(session.id, 0) is None  # re-read the history instead
    later = events_after(session.id, 3)  # past b's append: only the deletion
    assert later is not None and [f["type"] for f in later] == ["messages.deleted"]
    assert session.get_history()[-1].id == a.id


@pytest.mark.django_db
@override_settings(ARBOR_EVENT_RETENTION=150)
def test_old_events_are_pruned_and_resume_past_them_resyncs(session, monkeypatch):
    monkeypatch.setattr(outbox, "PRUNE_EVERY", 50)
    session.append_messages([user_msg(f"m{i}") for i in range(249)])  # seqs 2..250
    seqs = [seq for seq, _ in stored(session.id)]
    assert seqs[-1] == 250 and len(seqs) <= 150 + 50
    assert events_after(session.id, 0) is None  # some of what it missed is gone
    kept = events_after(session.id, 200)
    assert kept is not None and [f["seq"] for f in kept] == list(range(201, 251))


@pytest.mark.django_db
def test_ephemeral_deltas_are_published_unnumbered(
        session, published, django_capture_on_commit_callbacks):
    from memory_core.llm.demo import DemoModel

    session.config.llm = DemoModel()
    before = stored(session.id)
    with django_capture_on_commit_callbacks(execute=True):
        list(session.chat("hello", stream=True))
    deltas = [f for f in published if f["type"] == "message.delta"]
    assert deltas and all("seq" not in f for f in deltas)
    assert "message.delta" not in {t for _, t in stored(session.id)}
    numbered = [f["seq"] for f in published if "seq" in f]
    assert len(numbered) >= 4  # thinking, the user message, the answer, idle
    assert numbered == list(range(len(before) + 1, len(before) + 1 + len(numbered)))


@pytest.mark.django_db
def test_deleting_a_session_publishes_its_last_event(
        manager, published, django_capture_on_commit_callbacks):
    sid = manager.create("doomed").id
    manager.get_session(sid).append_message(user_msg("bye"))
    key = session_key(sid)
    with django_capture_on_commit_callbacks(execute=True):
        assert manager.delete(sid)
    assert published == [{"type": "session.deleted", "session_id": sid, "seq": 3, "data": {}}]
    assert not SessionEvent.objects.filter(session_id=key).exists()


@pytest.mark.django_db
def test_status_is_stored_and_read_back(manager, session):
    session.set_status("thinking")
    assert manager.get(session.id).status == "thinking"


def test_group_names_are_valid_for_any_id():
    from channels.layers import BaseChannelLayer

    layer = BaseChannelLayer()
    ids = ["plain-id", "with space/slash:colon", "with_space_slash_colon", "é" * 300,
           "x" * 250 + "1", "x" * 250 + "2"]
    names = [session_group(sid) for sid in ids]
    for name in names:
        assert layer.require_valid_group_name(name) and name.startswith("session.")
    assert names[0] == "session.plain-id"
    assert len(set(names)) == len(ids)  # no two sessions share a group


@pytest.mark.django_db(transaction=True)
def test_seq_is_gap_free_with_two_threads_appending_to_one_session(agent, published):
    sid = SessionManager.for_agent(agent).create("race").id

    def work(i: int, barrier: Any) -> None:
        s = SessionManager.for_agent(agent).get_session(sid)
        barrier.wait()
        for n in range(20):
            s.append_message(user_msg(f"t{i}-{n}"))

    _, errors = run_threads(2, work)
    assert errors == []
    seqs = [seq for seq, _ in stored(sid)]
    assert seqs == list(range(1, 42))  # the create's status, then 40 appends
    assert sorted(f["seq"] for f in published) == seqs  # each published once


@pytest.mark.django_db
def test_status_is_part_of_the_session_resource(agent):
    from sessions_app.auth import create_key
    from tests.api.conftest import Api, ok

    api = Api(create_key(agent.owner)[1])
    manager = SessionManager.for_agent(agent)
    sid = manager.create("s").id
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "idle"
    manager.get_session(sid).set_status("thinking")  # what a page opened mid-turn reads
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "thinking"


def test_publish_hands_frames_to_the_layer_in_order_without_waiting(monkeypatch):
    import threading
    import time

    sent: list[tuple[str, dict[str, Any]]] = []
    done = threading.Event()

    class Layer:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            sent.append((group, message))
            if len(sent) == 3:
                done.set()

    monkeypatch.setattr(sink_module, "get_channel_layer", Layer)
    frames = [{"type": "message.appended", "session_id": "s 1", "seq": n, "data": {}}
              for n in (1, 2, 3)]
    started = time.monotonic()
    for frame in frames:
        sink_module.publish(frame)
    assert time.monotonic() - started < 0.5
    assert done.wait(5)
    assert sent == [(session_group("s 1"), {"type": "arbor.event", "frame": f}) for f in frames]
