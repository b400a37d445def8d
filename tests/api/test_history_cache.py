"""GET /history served from the path cache (real commits, so reads are kept): the
spliced JSON of a kept path is the same body as a fresh encoding, and a write, an
overlay or another branch is seen by the next read."""

from __future__ import annotations

import pytest

from memory_core import SessionManager
from tests.api.conftest import append, ok
from tests.conftest import assistant_msg, user_msg

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_path_cache")]


def _engine_dicts(agent_id, session_id, **kw):
    session = SessionManager.for_agent(agent_id).get_session(session_id)
    return [m.to_dict() for m in session.get_history(**kw)]


def test_a_kept_path_answers_the_same_body_as_a_fresh_one(api, agent_id, session_id, settings):
    for i in range(6):
        msg = user_msg(f"ü{i}", metadata={"n": i}) if i % 2 == 0 else assistant_msg(f"a{i}")
        append(api, session_id, msg)
    url = f"/sessions/{session_id}/history"
    first = api.get(url)
    second = api.get(url)
    assert second.content == first.content
    settings.ARBOR_PATH_CACHE_MB = 0  # encoded by the view, from the tables
    assert api.get(url).content == first.content
    assert ok(second)["messages"] == _engine_dicts(agent_id, session_id)


def test_writes_overlays_and_branches_are_seen_by_the_next_read(api, agent_id, session_id):
    ids = [append(api, session_id, user_msg(f"m{i}", id=f"m{i}"))["id"] for i in range(4)]
    url = f"/sessions/{session_id}/history"
    ok(api.get(url))
    append(api, session_id, assistant_msg("new"))
    assert [m["parts"][0]["text"] for m in ok(api.get(url))["messages"]][-1] == "new"
    ok(api.post(f"/sessions/{session_id}/compactions",
                {"summary": "early", "from_message_id": ids[0], "to_message_id": ids[2]}), 201)
    shown = ok(api.get(url))
    assert [m["role"] for m in shown["messages"]] == ["system", "user", "assistant"]
    assert shown["messages"] == _engine_dicts(agent_id, session_id)
    raw = ok(api.get(url, raw="true"))
    assert [m["id"] for m in raw["messages"]][:4] == ids
    append(api, session_id, assistant_msg("branch", id="b1"), parent_id=ids[1])
    branch = ok(api.get(url, leaf_id="b1"))
    assert [m["id"] for m in branch["messages"]] == [ids[0], ids[1], "b1"]
    assert branch["leaf_id"] == "b1"
