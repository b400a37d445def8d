"""Paging a session's history over the API: `limit` and `before_id` on
GET /sessions/{id}/history, with has_more, next_before_id and each message's siblings;
bad values answer 4xx JSON; without them the whole path, as before."""

from __future__ import annotations

import pytest

from memory_core import SessionManager

from .conftest import append, assistant_msg, error, ok, user_msg


def _grow(agent, session_id: str, count: int) -> list[str]:
    manager = SessionManager.for_agent(agent)
    stored = manager.append_all(session_id, [user_msg(f"message {i}") for i in range(count)])
    return [m.id for m in stored]


def test_pages_walk_the_path_back_to_its_root(api, session_id, alice_agent):
    ids = _grow(alice_agent, session_id, 25)
    url = f"/sessions/{session_id}/history"
    seen: list[str] = []
    body = ok(api.get(url, limit=10))
    while True:
        page = [m["id"] for m in body["messages"]]
        assert body["leaf_id"] == ids[-1]
        assert set(body["siblings"]) == set(page)
        seen = page + seen
        if not body["has_more"]:
            assert body["next_before_id"] is None
            break
        assert body["next_before_id"] == page[0]
        body = ok(api.get(url, limit=10, before_id=body["next_before_id"]))
    assert seen == ids
    assert len(page) == 5
    whole = ok(api.get(url))  # no paging parameter: the whole path, as before
    assert [m["id"] for m in whole["messages"]] == ids
    assert "has_more" not in whole and "siblings" not in whole
    only_before = ok(api.get(url, before_id=ids[-1]))  # before_id alone: 50 per page
    assert [m["id"] for m in only_before["messages"]] == ids[:-1]


def test_a_page_says_where_each_message_stands_among_its_siblings(api, session_id):
    question = append(api, session_id, user_msg("question"))
    first = append(api, session_id, assistant_msg("first answer"))
    second = append(api, session_id, assistant_msg("second answer"), parent_id=question["id"])
    body = ok(api.get(f"/sessions/{session_id}/history", limit=5, leaf_id=second["id"]))
    assert [m["id"] for m in body["messages"]] == [question["id"], second["id"]]
    assert body["has_more"] is False
    assert body["siblings"][second["id"]] == {"index": 2, "count": 2,
                                              "previous_id": first["id"], "next_id": None}
    assert body["siblings"][question["id"]]["count"] == 1


def test_bad_paging_values_answer_4xx_json(api, session_id, alice_agent):
    ids = _grow(alice_agent, session_id, 4)
    side = append(api, session_id, user_msg("a branch"), parent_id=ids[1])
    url = f"/sessions/{session_id}/history"
    for limit in (0, -1, 501, 10**12):
        assert "limit" in error(api.get(url, limit=limit), 422)["detail"]
    error(api.get(url, limit="many"), 422)
    error(api.get(url, limit=5, before_id="no-such-message"), 404, "not_found")
    # On another branch than the one read: not on the path.
    off = error(api.get(url, limit=5, before_id=ids[3], leaf_id=side["id"]), 422)
    assert "not on the path" in off["detail"]
    error(api.get(url, limit=5, before_id=side["id"], leaf_id=ids[3]), 422)
    error(api.get(url, limit=5, leaf_id="no-such-leaf"), 404)
    error(api.get(url, limit=5, before_id=ids[2], leaf_id="no-such-leaf"), 404)
    ok(api.get(url, limit=5, before_id=ids[1], leaf_id=side["id"]))  # its own ancestor


def test_a_paged_read_shows_what_the_whole_read_shows(api, session_id, alice_agent):
    """With a compaction overlay, a page is a window of the path as read (summaries in
    place of what they summarise); raw pages the stored messages."""
    ids = _grow(alice_agent, session_id, 12)
    ok(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "the first eight", "from_message_id": ids[0], "to_message_id": ids[7]}),
        201)
    url = f"/sessions/{session_id}/history"
    whole = [m["id"] for m in ok(api.get(url))["messages"]]
    assert len(whole) == 5 and whole[0].startswith("compaction-")
    last = ok(api.get(url, limit=3))
    assert [m["id"] for m in last["messages"]] == whole[-3:] and last["has_more"] is True
    above = ok(api.get(url, limit=3, before_id=last["next_before_id"]))
    assert [m["id"] for m in above["messages"]] == whole[:2] and above["has_more"] is False
    assert whole[0] not in above["siblings"] and ids[8] in above["siblings"]
    hidden = ok(api.get(url, limit=3, before_id=ids[3]))  # inside the summary: before it
    assert hidden["messages"] == [] and hidden["has_more"] is False
    raw = ok(api.get(url, limit=3, raw=True))
    assert [m["id"] for m in raw["messages"]] == ids[-3:]


@pytest.mark.parametrize("count", [3, 300])
def test_paged_read_query_count_does_not_grow(api, session_id, alice_agent, count,
                                              django_assert_num_queries):
    ids = _grow(alice_agent, session_id, count)
    url = f"/sessions/{session_id}/history"
    # the key with the session; whether overlays apply; the page
    with django_assert_num_queries(3):
        body = ok(api.get(url, limit=2))
    assert [m["id"] for m in body["messages"]] == ids[-2:]
    # ...; the page above before_id; its leaf, and before_id on its path
    with django_assert_num_queries(4):
        body = ok(api.get(url, limit=2, before_id=ids[-1]))
    assert [m["id"] for m in body["messages"]] == ids[-3:-1]
