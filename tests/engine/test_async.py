"""Async twins carry Django's `a` prefix and do the same work."""

from __future__ import annotations

import pytest

from tests.conftest import user_msg


@pytest.mark.django_db(transaction=True)
async def test_async_twins_round_trip(agent):
    from memory_core import SessionManager

    manager = SessionManager.for_agent(agent)
    info = await manager.acreate("async")
    session = await manager.aget_session(info.id)
    first = await session.aappend_message(user_msg("hello async world"))
    second = await manager.aappend(info.id, user_msg("second"))
    assert second.parent_id == first.id
    history = await session.aget_history()
    assert [m.text for m in history] == ["hello async world", "second"]
    hits = await session.asearch("async")
    assert [h.id for h in hits] == [first.id]
    assert [h.id for h in await manager.asearch("async")] == [first.id]
    assert (await session.aget_latest_leaf()).id == second.id
    assert [s.id for s in await manager.alist()] == [info.id]
    # The shared sync thread keeps its own connection; close it so teardown can drop the DB.
    from asgiref.sync import sync_to_async
    from django.db import connection

    await sync_to_async(lambda: connection.close())()
