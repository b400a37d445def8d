"""A request's live events go out after its response is sent (`request_finished`), so the
writer's answer never waits behind the fan-out; a streaming response's go out at once."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.signals import request_finished
from django.http import HttpResponse, StreamingHttpResponse
from django.test import RequestFactory

from memory_core import SessionManager
from sessions_app.live import events
from sessions_app.live.middleware import EventsAfterResponse
from tests.conftest import make_agent, user_msg

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit runs for real


@pytest.fixture
def published(monkeypatch, session) -> list[dict[str, Any]]:
    """What goes to the channel layer from now on (the session already exists)."""
    frames: list[dict[str, Any]] = []
    monkeypatch.setattr(events, "_publish_now", frames.extend)  # (a list at a time)
    yield frames
    events.release()


@pytest.fixture
def session():
    manager = SessionManager.for_agent(make_agent("alice", "assistant"))
    return manager.get_session(manager.create("live").id)


def test_a_writes_events_wait_for_the_response_to_be_sent(published, session):
    def view(request):
        session.append_message(user_msg("hello"))
        return HttpResponse("ok")

    response = EventsAfterResponse(view)(RequestFactory().post("/"))
    assert response.status_code == 200 and published == []  # committed, still held
    request_finished.send(sender=None)  # the server has sent the response
    assert [f["type"] for f in published] == ["message.appended"]


def test_a_failing_view_releases_what_it_committed(published, session):
    def view(request):
        session.append_message(user_msg("hello"))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        EventsAfterResponse(view)(RequestFactory().post("/"))
    assert [f["type"] for f in published] == ["message.appended"]


def test_a_streaming_response_publishes_as_it_goes(published, session):
    def stream():
        for text in ("one", "two"):
            session.append_message(user_msg(text))
            yield text

    response = EventsAfterResponse(lambda request: StreamingHttpResponse(stream()))(
        RequestFactory().post("/"))
    chunks = iter(response.streaming_content)
    next(chunks)
    assert len(published) == 1  # the first write is out before the stream ends
    next(chunks)
    assert len(published) == 2


def test_writes_outside_a_request_publish_at_commit(published, session):
    session.append_message(user_msg("from a script"))
    assert [f["type"] for f in published] == ["message.appended"]
