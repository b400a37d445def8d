"""Auto-compaction never stalls on "nothing to summarise yet" (issue 9)."""

from __future__ import annotations

from memory_core.compaction import create_compact_function
from tests.conftest import assistant_msg, user_msg


def short_summary(calls):
    def summarize(prompt):
        calls.append(prompt)
        return "we talked about the deploy"
    return summarize


def chat(session, n):
    for i in range(n):
        make = user_msg if i % 2 == 0 else assistant_msg
        session.append_message(make(f"turn {i}: we should deploy service {i} on day {i} "
                                    "after the review, then check the dashboards twice."))


def test_big_paste_in_the_head_does_not_block_later_compaction(manager):
    calls = []
    (manager.on_compaction(create_compact_function(short_summary(calls), protect_head=3,
                                                   tail_token_budget=300))
     .compact_after(2_000))
    session = manager.get_session(manager.create("paste").id)
    session.append_message(user_msg("log line with numbers 12345 " * 1000))  # ~7,000 tokens
    status = session.compaction_status()
    assert status["retry_at"] is None, "nothing to summarise is not a failure: no cooldown"
    assert calls == [], "the summariser is not asked to summarise nothing"
    chat(session, 40)
    assert session.get_compactions(), "compacts as soon as there is a middle, no 300 s wait"
    assert calls, "the summariser was called"
    assert session.compaction_status()["retry_at"] is None


def test_a_summary_that_would_not_shrink_starts_the_cooldown(manager):
    calls = []

    def verbose(prompt):
        calls.append(prompt)
        return "word " * 20_000
    (manager.on_compaction(create_compact_function(verbose, protect_head=1,
                                                   tail_token_budget=100))
     .compact_after(300))
    session = manager.get_session(manager.create("verbose").id)
    chat(session, 30)
    assert len(calls) == 1, "a wasted model call is not repeated on every append"
    status = session.compaction_status()
    assert status["retry_at"] is not None and "would not shrink" in status["error"]
    assert session.get_compactions() == []


def test_explicit_compact_of_a_non_shrinking_summary_is_still_none(manager):
    manager.on_compaction(create_compact_function(lambda p: "word " * 20_000, protect_head=1,
                                                  tail_token_budget=100))
    session = manager.get_session(manager.create("c").id)
    chat(session, 12)
    assert session.compact() is None
