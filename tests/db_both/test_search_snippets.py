"""Issue 9 on the current database (SQLite and Postgres passes): long queries are words,
hits carry snippets, session_search looks at other sessions, ranking is exact."""

from __future__ import annotations

import time

from memory_core.llm.demo import DemoModel
from memory_core.search import MAX_QUERY_TERMS, query_terms
from tests.conftest import assistant_msg, user_msg

from .test_search import FILLER, fill, ids


# ------------------------------------------------------------------ long queries
def test_a_query_of_more_than_64_distinct_words_searches_with_the_first_64(session):
    fill(session)
    session.append_messages([user_msg("the zebra escaped", id="early"),
                             user_msg("the walrus escaped", id="late")])
    words = [f"word{i}x" for i in range(100)]
    words[10], words[80] = "zebra", "walrus"  # term 11 counts; term 81 is past the cap
    query = " ".join(words)
    assert len(query_terms(query)) == MAX_QUERY_TERMS == 64
    assert ids(session.search(query)) == ["early"]
    assert ids(session.search(query)) == ids(session.search(" ".join(words[:64])))


def test_a_one_megabyte_query_answers_quickly_without_error(manager, session):
    fill(session)
    session.append_message(user_msg("the zebra escaped", id="zebra"))
    query = "zebra " + "lorem ipsum, dolor! sit (amet) " * 35_000  # ~1 MB
    assert len(query) > 1_000_000
    started = time.perf_counter()
    assert ids(session.search(query)) == ["zebra"]
    assert ids(manager.search(query)) == ["zebra"]
    assert time.perf_counter() - started < 1.0


def test_a_huge_query_of_stop_words_and_punctuation_is_cheap(session):
    session.append_message(user_msg("to be or not to be", id="hamlet"))
    started = time.perf_counter()
    assert ids(session.search("to be, or not; " * 100_000)) == ["hamlet"]
    assert ids(session.search("?! " * 400_000)) == []
    assert time.perf_counter() - started < 1.0


# ---------------------------------------------------------------------- snippets
def test_engine_hits_carry_a_marked_snippet_and_full_content_by_default(manager, session):
    fill(session)
    text = ("Notes. " + "Filler sentence without the word. " * 40
            + "We deployed the <b>billing</b> service on Thursday. " + "More filler here. " * 40)
    session.append_message(user_msg(text, id="long"))
    [hit] = session.search("when was billing deployed?")
    assert hit.content == text and hit.truncated is False
    assert "<mark>deployed</mark> the &lt;b&gt;<mark>billing</mark>&lt;/b&gt; service" in hit.snippet
    assert hit.snippet.startswith("\u2026") and hit.snippet.endswith("\u2026")
    assert hit.to_dict()["snippet"] == hit.snippet
    assert len(text) > 2000
    [cut] = manager.search("billing", full=False)
    assert cut.truncated is True and cut.content == text[:2000]
    assert cut.snippet == manager.search("billing")[0].snippet


def test_snippet_marks_stems_and_bigrams_like_the_index(session):
    session.append_messages([
        user_msg("Deployment DEPLOYS deployed; deploying-now", id="en"),
        user_msg("我们明天在北京开会讨论部署计划。", id="zh"),
    ])
    [en] = session.search("deploy")
    assert en.snippet == ("<mark>Deployment</mark> <mark>DEPLOYS</mark> <mark>deployed</mark>; "
                          "<mark>deploying</mark>-now")
    [zh] = session.search("部署计划")
    assert zh.snippet == "我们明天在北京开会讨论<mark>部署计划</mark>。"


def test_script_in_a_message_comes_out_escaped(session):
    session.append_message(user_msg("<script>document.cookie</script> cookie jar", id="x"))
    [hit] = session.search("cookie")
    assert "<script>" not in hit.snippet
    assert hit.snippet == ("&lt;script&gt;document.<mark>cookie</mark>&lt;/script&gt; "
                           "<mark>cookie</mark> jar")


# ----------------------------------------------------------------- session_search
def test_session_search_tool_leaves_out_the_session_it_runs_in(manager):
    past = manager.get_session(manager.create("past").id)
    past.append_message(user_msg("The kubernetes upgrade is planned for May.", id="old"))
    current = manager.get_session(manager.create("current").id)
    current.append_message(user_msg("Did we talk about kubernetes?", id="question"))
    tool = {t.name: t for t in current.tools()}["session_search"]
    out = tool.execute({"query": "kubernetes"})
    assert "planned for May" in out and "Did we talk" not in out
    assert out.count("\n- ") == 0 and f"[session {past.id}]" in out
    # The agent-wide search, and the manager's own tool, still see every session.
    assert {h.session_id for h in manager.search("kubernetes")} == {past.id, current.id}
    whole = manager.tools()[0].execute({"query": "kubernetes"})
    assert "Did we talk" in whole and "planned for May" in whole
    assert [h.id for h in manager.search("kubernetes", exclude_session_id=past.id)] == [
        "question"]


def test_session_search_tool_shows_an_excerpt_with_its_date_not_a_huge_message(manager):
    past = manager.get_session(manager.create("past").id)
    past.append_message(user_msg("filler words " * 3000 + "the <zebra> escaped at noon "
                                 + "filler words " * 50_000, id="huge"))
    current = manager.get_session(manager.create("current").id)
    out = {t.name: t for t in current.tools()}["session_search"].execute({"query": "zebra"})
    assert len(out) < 500
    assert out[2:12] == f"{past.get_message('huge').created_at:%Y-%m-%d}"
    assert "the <zebra> escaped at noon" in out  # plain text: no marks, no entities
    assert "<mark>" not in out and "&lt;" not in out


def test_search_context_tool_shows_an_excerpt_of_a_huge_entry(manager):
    manager = manager.with_context("knowledge", kind="search")
    s = manager.get_session(manager.create("k").id)
    s.set_context_entry("knowledge", "hosts", "filler " * 5000 + "health check hits api-3 "
                        + "filler " * 5000)
    out = {t.name: t for t in s.tools()}["search_context"].execute(
        {"label": "knowledge", "query": "which host for the health check?"})
    assert out.startswith("- [hosts] (") and "health check hits api-3" in out
    assert len(out) < 500


def test_demo_model_answers_from_past_sessions_not_the_question_itself(manager):
    manager = manager.with_llm(DemoModel())
    past = manager.get_session(manager.create("past").id)
    past.append_messages([user_msg("We moved the kubernetes upgrade to May.", id="fact")])
    now = manager.get_session(manager.create("now").id)
    answer = now.chat("Did we talk about kubernetes?")
    assert "I found 1 message" in answer.text, answer.text
    assert "kubernetes upgrade to May" in answer.text
    assert "Did we talk" not in answer.text


# ------------------------------------------------------------------ exact ranking
def test_agent_search_ranks_in_the_exact_order_with_ties_newest_first(manager):
    one = manager.get_session(manager.create("one").id)
    two = manager.get_session(manager.create("two").id)
    fill(one, FILLER)
    one.append_messages([user_msg("invoice overdue", id="tie-old"),
                         user_msg("The overdue invoice for Acme was paid today.", id="acme")])
    two.append_messages([user_msg("invoice overdue", id="tie-new"),
                         assistant_msg("Acme sent a new invoice this morning, and the "
                                       "previous one is still marked as open.", id="acme-2"),
                         user_msg("Invoices go out monthly.", id="invoice")])
    hits = manager.search("is the acme invoice overdue?")
    # All three words; then two words (shorter first; equal texts are one hit, the newest
    # copy); then one.
    assert ids(hits) == ["acme", "tie-new", "acme-2", "invoice"]
    assert [h.copies for h in hits] == [1, 2, 1, 1]


def test_exclude_session_id_of_any_text_is_never_an_error(manager, session):
    session.append_message(user_msg("kubernetes notes", id="k"))
    for odd in ['x"y', "it's", "\\", "-", "unknown"]:
        assert ids(manager.search("kubernetes", exclude_session_id=odd)) == ["k"]
    assert manager.search("kubernetes", exclude_session_id=session.id) == []
