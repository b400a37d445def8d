"""A message's created_at comes back exactly as written, to the microsecond, from every
read: path, single message, tree, search, the JSON API's spliced history, the ORM, and
export. (SQLite stores integer microseconds and turns them back into text in SQL:
sessions_app.models.fields.)"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from memory_core.transfer import export_session, import_session
from sessions_app.auth import create_key
from sessions_app.models import Message
from tests.api.conftest import PREFIX

pytestmark = pytest.mark.django_db

TIMES = [
    "1969-07-20T20:17:40+00:00",          # before 1970, whole seconds
    "1969-12-31T23:59:59.999999+00:00",   # the last microsecond before 1970
    "2000-02-29T00:00:00.000001+00:00",
    "2026-11-26T07:07:13.187993+00:00",
    "9999-12-31T23:59:59.999999+00:00",
]


def _imported(manager):
    source = manager.create("source")
    document = export_session(manager, source.id)
    parent = None
    document["messages"] = []
    for i, at in enumerate(TIMES):
        document["messages"].append({"id": f"m{i}", "parent_id": parent, "role": "user",
                                     "parts": [{"type": "text", "text": f"lunar note {i}"}],
                                     "metadata": {}, "created_at": datetime.fromisoformat(at)})
        parent = f"m{i}"
    return import_session(manager, document)


def test_created_at_reads_back_exactly_everywhere(manager, agent):
    info = _imported(manager)
    session = manager.get_session(info.id)
    wanted = [datetime.fromisoformat(t) for t in TIMES]
    assert [m.created_at for m in session.get_history()] == wanted
    assert [session.get_message(f"m{i}").created_at for i in range(len(TIMES))] == wanted
    assert [r["created_at"] for r in session.get_tree()] == wanted
    hits = {h.id: h.created_at for h in session.search("lunar note")}
    assert [hits[f"m{i}"] for i in range(len(TIMES))] == wanted
    orm = Message.objects.filter(session__id=info.id).order_by("seq")
    assert [m.created_at for m in orm] == wanted
    exported = export_session(manager, info.id)["messages"]
    assert [m["created_at"] for m in exported] == wanted

    # The JSON API serves the same text (the kept path's JSON, then the encoded one).
    client = Client(headers={"Authorization": f"Bearer {create_key(agent.owner)[1]}"})
    for _ in range(2):
        body = client.get(f"{PREFIX}/sessions/{info.id}/history").json()
        assert [m["created_at"] for m in body["messages"]] == TIMES


def test_orm_filters_and_orders_by_created_at(manager):
    info = _imported(manager)
    cutoff = datetime(1970, 1, 1, tzinfo=UTC)
    later = Message.objects.filter(session__id=info.id, created_at__gte=cutoff)
    assert sorted(m.message_id for m in later) == ["m2", "m3", "m4"]
    newest = Message.objects.filter(session__id=info.id).order_by("-created_at").first()
    assert newest is not None and newest.message_id == "m4"
