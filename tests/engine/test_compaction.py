"""Compaction: ranges that respect tool pairs, summaries per session, failures, splits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core import SessionManager
from memory_core.compaction import (
    CompactionError,
    choose_range,
    create_compact_function,
    truncate_older_messages,
)
from memory_core.messages import Message
from memory_core.summarizers import extractive_summarizer
from tests.conftest import assistant_msg, user_msg


def talk(session, n, prefix="line"):
    return [session.append_message((user_msg if i % 2 == 0 else assistant_msg)(
        f"{prefix} {i}: the Berlin budget is {1000 + i} EUR and we decided to book hotel {i}."))
        for i in range(n)]


def recording_summarizer(calls):
    def summarize(prompt):
        calls.append(prompt)
        return f"summary #{len(calls)}"
    return summarize


# ------------------------------------------------------------------ ranges
def flat_tokens(text):
    """Every message costs the same, whatever its parts: ranges depend on counts alone."""
    return 10


def msg(i, parts, role="assistant"):
    return Message(f"m{i}", None, role, parts, {}, datetime.now(UTC))


def call(cid):
    return {"type": "tool-call", "toolCallId": cid, "toolName": "t", "input": {}}


def result(cid):
    return {"type": "tool-result", "toolCallId": cid, "output": "ok"}


def test_range_keeps_head_and_tail():
    path = [msg(i, [{"type": "text", "text": "x"}]) for i in range(10)]
    assert choose_range(path, protect_head=3, tail_token_budget=30, min_tail_messages=2,
                        counter=flat_tokens) == (3, 7)


def test_range_does_not_split_a_call_from_its_result():
    path = [msg(i, [{"type": "text", "text": "x"}]) for i in range(10)]
    path[7] = msg(7, [call("a")])
    path[8] = msg(8, [result("a")], role="tool")
    start, end = choose_range(path, protect_head=3, tail_token_budget=30, min_tail_messages=2,
                              counter=flat_tokens)
    assert end == 6


def test_range_never_holds_a_pending_call():
    path = [msg(i, [{"type": "text", "text": "x"}]) for i in range(10)]
    path[5] = msg(5, [{"type": "tool-search", "toolCallId": "p", "state": "input-available",
                       "input": {}}])
    assert choose_range(path, protect_head=1, tail_token_budget=10, min_tail_messages=2,
                        counter=flat_tokens) == (1, 4)


@st.composite
def histories(draw):
    n = draw(st.integers(min_value=0, max_value=30))
    path, open_calls = [], []
    for i in range(n):
        kind = draw(st.sampled_from(["text", "call", "result", "aisdk", "pending", "orphan"]))
        if kind == "call":
            cid = f"c{i}"
            open_calls.append(cid)
            path.append(msg(i, [call(cid)]))
        elif kind == "result" and open_calls:
            path.append(msg(i, [result(open_calls.pop(0))], role="tool"))
        elif kind == "aisdk":
            path.append(msg(i, [{"type": "tool-x", "toolCallId": f"a{i}",
                                 "state": "output-available", "input": {}, "output": 1}]))
        elif kind == "pending":
            path.append(msg(i, [{"type": "tool-x", "toolCallId": f"p{i}",
                                 "state": "input-available", "input": {}}]))
        elif kind == "orphan":
            path.append(msg(i, [result(f"gone{i}")], role="tool"))
        else:
            path.append(msg(i, [{"type": "text", "text": "x"}]))
    return path


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 5), st.integers(0, 200), st.integers(0, 4))
def test_range_never_splits_a_tool_pair(path, head, budget, min_tail):
    chosen = choose_range(path, protect_head=head, tail_token_budget=budget,
                          min_tail_messages=min_tail, counter=flat_tokens)
    if chosen is None:
        return
    start, end = chosen
    assert head <= start <= end < len(path) and end - start >= 1
    calls = {p["toolCallId"]: i for i, m in enumerate(path) for p in m.parts if p["type"] == "tool-call"}
    results = {p["toolCallId"]: i for i, m in enumerate(path) for p in m.parts if p["type"] == "tool-result"}
    for cid, i in calls.items():
        inside_call = start <= i <= end
        j = results.get(cid)
        if inside_call:
            assert j is not None and j <= end, "a summarised call must have its result summarised"
        if j is not None and start <= j <= end:
            assert inside_call, "a summarised result must have its call summarised"
    for i in range(start, end + 1):
        for p in path[i].parts:
            assert p.get("state") != "input-available", "a pending call is never summarised"


# ------------------------------------------------------------- compaction
def test_compact_stores_an_overlay_and_loses_nothing(manager):
    calls = []
    manager.on_compaction(create_compact_function(recording_summarizer(calls), protect_head=2,
                                                  tail_token_budget=60))
    session = manager.get_session(manager.create("c").id)
    msgs = talk(session, 12)
    overlay = session.compact()
    assert overlay is not None and overlay.from_message_id == msgs[2].id
    history = session.get_history()
    assert history[2].id == f"compaction-{overlay.id}"
    assert history[2].text.endswith("summary #1")
    assert len(session.get_history(raw=True)) == 12
    assert "MESSAGES:" in calls[0] and "## Open items" in calls[0]


def test_second_compaction_updates_the_previous_summary(manager):
    calls = []
    manager.on_compaction(create_compact_function(recording_summarizer(calls), protect_head=1,
                                                  tail_token_budget=60))
    session = manager.get_session(manager.create("c").id)
    talk(session, 10)
    first = session.compact()
    talk(session, 10, prefix="more")
    second = session.compact()
    assert "PREVIOUS SUMMARY:\nsummary #1" in calls[1]
    assert second.from_message_id == first.from_message_id
    ids = [m.id for m in session.get_history()]
    assert f"compaction-{second.id}" in ids and f"compaction-{first.id}" not in ids


def test_defect_5_summaries_never_leak_between_sessions(manager):
    calls = []
    manager.on_compaction(create_compact_function(recording_summarizer(calls), protect_head=1,
                                                  tail_token_budget=60))
    a = manager.get_session(manager.create("a").id)
    b = manager.get_session(manager.create("b").id)
    talk(a, 10, prefix="alpha")
    talk(b, 10, prefix="bravo")
    a.compact()  # summary #1 belongs to a
    b.compact()  # b has no summary yet: must not be asked to update a's
    assert "PREVIOUS SUMMARY" not in calls[1] and "alpha" not in calls[1]
    talk(a, 6, prefix="alpha2")
    talk(b, 6, prefix="bravo2")
    a.compact()
    b.compact()
    assert "summary #1" in calls[2] and "summary #2" not in calls[2]
    assert "summary #2" in calls[3] and "summary #1" not in calls[3]


def test_summariser_failure_is_no_overlay_and_nothing_dropped(manager):
    def broken(prompt):
        raise RuntimeError("model down")
    manager.on_compaction(create_compact_function(broken, protect_head=1, tail_token_budget=10))
    session = manager.get_session(manager.create("c").id)
    talk(session, 8)
    with pytest.raises(CompactionError):
        session.compact()
    assert session.get_compactions() == []
    assert len(session.get_history()) == 8
    assert "model down" in session.compaction_status()["error"]


def test_not_shrinking_is_skipped(manager):
    manager.on_compaction(create_compact_function(lambda p: "word " * 5000, protect_head=1,
                                                  tail_token_budget=10))
    session = manager.get_session(manager.create("c").id)
    talk(session, 6)
    assert session.compact() is None
    assert session.get_compactions() == []


def test_auto_compaction_after_append(manager):
    seen = []
    (manager.on_compaction(create_compact_function(extractive_summarizer, protect_head=1,
                                                   tail_token_budget=100))
     .compact_after(400).on_compacted(seen.append))
    session = manager.get_session(manager.create("auto").id)
    talk(session, 30)
    assert seen, "crossing the threshold compacts"
    assert len(session.get_history()) < 30
    assert len(session.get_history(raw=True)) == 30


def test_failing_auto_compaction_keeps_the_message_and_calls_the_handler(manager):
    errors, attempts = [], []

    def broken(prompt):
        attempts.append(prompt)
        raise RuntimeError("summariser exploded")
    (manager.on_compaction(create_compact_function(broken, protect_head=1, tail_token_budget=50))
     .compact_after(100).on_compaction_error(errors.append))
    session = manager.get_session(manager.create("auto").id)
    msgs = talk(session, 12)
    assert session.get_message(msgs[-1].id) is not None
    assert len(session.get_history()) == 12
    assert len(errors) == 1 and "summariser exploded" in str(errors[0])
    assert len(attempts) == 1, "a failure starts a stored cooldown instead of a retry loop"
    status = session.compaction_status()
    assert status["retry_at"] > status["failed_at"]
    # The cooldown is stored: a new manager (another process) honours it too.
    again = SessionManager.for_agent(session.agent_id).on_compaction(
        create_compact_function(broken)).compact_after(100)
    again.append(session.id, user_msg("still stored"))
    assert len(attempts) == 1


def test_compact_and_split_continues_in_a_new_session(manager):
    session = manager.get_session(manager.create("long talk").id)
    session.add_context("todos", max_tokens=50)
    session.replace_context_block("todos", "- book train")
    talk(session, 6)
    new = manager.compact_and_split(session.id)
    assert manager.get(session.id).end_reason == "compaction"
    assert new.parent_session_id == session.id and new.name == "long talk (continued)"
    first = manager.get_history(new.id)[0]
    assert first.role == "system" and first.text.startswith("[Summary of earlier conversation]\n")
    assert "Berlin" in first.text
    assert manager.get_session(new.id).get_context_block("todos").content == "- book train"
    given = manager.compact_and_split(new.id, summary="short version", name="part 3")
    assert given.name == "part 3"
    assert manager.get_history(given.id)[0].text.endswith("short version")


def test_truncate_older_messages_works_on_a_copy(session):
    big = "y" * 5000
    session.append_message({"role": "assistant", "parts": [
        {"type": "tool-fetch", "toolCallId": "f", "state": "output-available", "input": {},
         "output": big}]})
    session.append_message(user_msg("z" * 20_000))
    for i in range(4):
        session.append_message(user_msg(f"recent {i}"))
    history = session.get_history()
    short = truncate_older_messages(history)
    assert len(short[0].parts[0]["output"]) < 700 and "re-run the tool" in short[0].parts[0]["output"]
    assert len(short[1].parts[0]["text"]) < 10_100
    assert short[2:] == history[2:]
    assert session.get_history()[0].parts[0]["output"] == big


def test_oversized_tool_output_is_stored_as_preview_with_note(manager, settings):
    settings.ARBOR_MAX_TOOL_OUTPUT_CHARS = 1000
    m = SessionManager.for_agent(manager.agent_id)
    session = m.get_session(m.create("big").id)
    stored = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "x", "output": "q" * 5000}]})
    assert len(stored.parts[0]["output"]) < 2200
    assert "re-run the tool" in stored.parts[0]["output"]


@pytest.mark.parametrize("length", [10, 300])
def test_auto_compaction_check_costs_a_constant_number_of_queries(agent, length):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    manager = SessionManager.for_agent(agent).compact_after(10_000_000)
    session = manager.get_session(manager.create("q").id)
    manager.append_all(session.id, [user_msg(f"m{i}") for i in range(length)])
    with CaptureQueriesContext(connection) as ctx:
        session.append_message(user_msg("one more"))
    statements = [q["sql"] for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]]
    # append (5 on SQLite with the search counts' pending row, 3 on Postgres) + its event (one outbox INSERT that numbers it)
    # + read and update the remembered estimate: the path is not re-read when the
    # append continues the remembered leaf.
    assert len(statements) == (8 if connection.vendor == "sqlite" else 6)


def test_remembered_estimate_matches_a_full_recount(agent):
    from memory_core import autocompact

    manager = SessionManager.for_agent(agent).compact_after(10_000_000)
    session = manager.get_session(manager.create("q").id)
    session.add_context("notes", content="some notes here")
    session.freeze_system_prompt()
    first = session.append_message(user_msg("hello there"))
    for i in range(20):
        session.append_message(assistant_msg(f"reply number {i} with words"))
    _, leaf, tokens = session.storage.check_state(session.id)  # built up append by append
    assert leaf == session.get_latest_leaf().id and tokens == autocompact.estimate(session)
    session.append_message(user_msg("a branch"), parent_id=first.id)
    session.delete_messages([first.id])
    session.append_message(user_msg("after the delete"))
    _, leaf, tokens = session.storage.check_state(session.id)
    assert leaf == session.get_latest_leaf().id
    assert tokens == autocompact.estimate(session)
