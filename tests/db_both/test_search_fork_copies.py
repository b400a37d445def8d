"""Search keeps every copy of a collapsed text reachable: a fork copies its source's
messages, and the hit that stands for both names where the other one is (its session
and message id), in the engine's hits and the session_search tool."""

from __future__ import annotations

from memory_core import SessionManager
from memory_core.search import HitCopy
from tests.conftest import assistant_msg, user_msg


def _forked(manager: SessionManager) -> tuple[str, str, str]:
    """(source session, fork session, the copied message's id)."""
    source = manager.get_session(manager.create("source").id)
    copied = source.append_message(user_msg("the launch window opens at dawn"))
    source.append_message(assistant_msg("after the fork point: launch delayed"))
    fork = manager.fork(source.id, copied.id, "fork")
    return source.id, fork.id, copied.id


def test_the_hit_for_a_forked_message_names_the_original_too(manager):
    source, fork, copied = _forked(manager)
    hits = manager.search("launch window dawn")
    first = hits[0]
    assert (first.id, first.session_id, first.copies) == (copied, fork, 2)
    assert first.other_copies == (HitCopy(source, copied),)
    assert first.to_dict()["other_copies"] == [{"session_id": source, "message_id": copied}]
    assert hits[1].other_copies == ()  # a text of its own: no other copy
    # ranking unchanged: the same ids, ranks and counts as before copies were kept
    assert [(h.session_id, h.rank, h.copies) for h in hits] == [(fork, 1, 2), (source, 2, 1)]


def test_copies_in_one_session_are_listed_as_well(manager):
    session = manager.get_session(manager.create("flight").id)
    stored = session.append_messages([assistant_msg("flight details noted", id=f"c{n}")
                                      for n in range(3)])
    hit, = session.search("flight details")
    assert hit.id == stored[-1].id and hit.copies == 3
    assert sorted(c.message_id for c in hit.other_copies) == ["c0", "c1"]
    assert {c.session_id for c in hit.other_copies} == {session.id}


def test_session_search_tells_the_model_where_the_other_copies_are(manager):
    source, fork, copied = _forked(manager)
    current = manager.get_session(manager.create("now").id)
    tool = {t.name: t for t in current.tools()}["session_search"]
    line = tool.run({"query": "launch window dawn"}).splitlines()[0]
    assert f"[session {fork}] [id {copied}]" in line
    assert f"(copies: 2; also in [session {source}] [id {copied}])" in line
