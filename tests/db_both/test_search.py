"""Search on the current database (runs in the SQLite and the Postgres pass): SPEC §3."""

from __future__ import annotations

import pytest
from django.db import connection

from memory_core import SearchHit, SessionManager
from memory_core.search import query_terms
from tests.conftest import assistant_msg, make_agent, user_msg

# Unrelated chatter, so a word held by a few messages is rarer than one held by many.
FILLER = [
    "Lunch was soup and bread today.",
    "The printer on the third floor is jammed again.",
    "Please water the plants while I am away.",
    "The quarterly report needs two more charts.",
    "Remember to renew the office parking permit.",
    "Coffee machine repairs are scheduled next week.",
    "The new intern starts on the first of the month.",
    "Bicycle racks moved behind the east entrance.",
]


def ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


def fill(session, texts=FILLER) -> None:
    session.append_messages([user_msg(t) for t in texts])


# ----------------------------------------------------------- matching and ranking
def test_any_word_matches_and_the_rare_word_ranks_first(session):
    fill(session)
    session.append_messages([
        user_msg("We deploy on Thursdays.", id="deploy-1"),
        user_msg("Deploy the api first, then deploy the workers.", id="deploy-2"),
        assistant_msg("Did you deploy the fix?", id="deploy-3"),
        user_msg("The kubernetes cluster got upgraded.", id="k8s"),
    ])
    hits = session.search("how do we deploy to kubernetes?")
    # Nothing holds both words: the rare one wins; then two "deploy"s; then shorter first.
    assert ids(hits) == ["k8s", "deploy-2", "deploy-1", "deploy-3"]
    assert all(hits[0].score > h.score for h in hits[1:])


def test_messages_holding_all_words_rank_above_those_holding_some(session):
    fill(session)
    session.append_messages([
        user_msg("Migration migration migration: the migration again.", id="repeats-one-word"),
        assistant_msg(
            "The billing migration is scripted and reviewed, tested against a copy of last "
            "week's snapshot, adds two columns, backfills them in batches of ten thousand "
            "rows, and has a rollback script that drops the columns again.", id="holds-both"),
        user_msg("Billing invoices go out monthly.", id="billing-only"),
    ])
    hits = session.search("billing migration")
    assert ids(hits) == ["holds-both", "repeats-one-word", "billing-only"]
    by_id = {h.id: h for h in hits}
    # Relevance alone would put the short repetitive message first; all-words wins.
    assert by_id["repeats-one-word"].score > by_id["holds-both"].score


def test_stop_words_are_ignored(session):
    fill(session)
    session.append_messages([
        user_msg("What is the plan for it?", id="only-stop-words-and-plan"),
        user_msg("Deployment day moved to Friday.", id="deploy-day"),
    ])
    assert query_terms("what is the deployment day?") == ["deploy", "day"]
    assert ids(session.search("what is the deployment day?")) == ["deploy-day"]


def test_a_questions_function_words_in_its_own_language_match_nothing(session):
    """Issue 28: "nuestro" (our) was a term, so every Spanish message saying it matched."""
    fill(session)
    session.append_messages([
        user_msg("Nuestro perro se llama Rex y nuestra casa es azul.", id="our-dog"),
        user_msg("El vuelo a Bogotá sale a las nueve.", id="flight"),
        user_msg("Der Klempner kommt am Dienstag, die Heizung ist kaputt.", id="plumber"),
        user_msg("Die Katze schläft, die Kinder spielen, die Sonne scheint.", id="the-the"),
    ])
    assert ids(session.search("¿Cuándo sale nuestro vuelo?")) == ["flight"]
    assert ids(session.search("Wann kommt die Heizung?")) == ["plumber"]


def test_a_query_of_only_stop_words_still_searches(session):
    fill(session)
    session.append_message(user_msg("To be, or not to be: that is the question.", id="hamlet"))
    assert ids(session.search("to be or not to be"))[0] == "hamlet"


@pytest.mark.parametrize("query", ["deploy", "deployed", "deploying", "Deployment",
                                   "DEPLOYMENTS", "deploys"])
def test_stemming_matches_every_inflection(session, query):
    fill(session)
    session.append_messages([
        user_msg("I deployed it yesterday.", id="deployed"),
        user_msg("The deployment failed.", id="deployment"),
        user_msg("Deploying now.", id="deploying"),
        user_msg("Nobody deploys on Fridays.", id="deploys"),
    ])
    assert set(ids(session.search(query))) == {"deployed", "deployment", "deploying", "deploys"}


def test_diacritics_and_case_are_folded(session):
    session.append_message(user_msg("Le café de la Rue Saint-Honoré ouvre à sept heures.", id="cafe"))
    assert ids(session.search("CAFE honore")) == ["cafe"]


@pytest.mark.parametrize(("text", "query"), [
    ("我们明天在北京开会讨论部署计划。", "北京"),
    ("我们明天在北京开会讨论部署计划。", "部署计划"),
    ("東京のデータセンターでサーバーを再起動しました。", "東京のサーバー"),
    ("東京のデータセンターでサーバーを再起動しました。", "再起動"),
    ("เซิร์ฟเวอร์ล่มเมื่อคืนนี้", "เซิร์ฟเวอร์"),
])
def test_spaceless_scripts_match_by_character_bigrams(session, text, query):
    fill(session)
    session.append_messages([user_msg(text, id="target"), user_msg("上海的天气很好。", id="other")])
    assert ids(session.search(query)) == ["target"]


def test_mixed_script_query_matches_either_script(session):
    session.append_messages([
        user_msg("我们明天在北京开会", id="zh"),
        user_msg("The deployment plan is ready.", id="en"),
        user_msg("Deployment plan for 北京 is ready.", id="both"),
    ])
    hits = session.search("deployment 北京")
    assert ids(hits) == ["both", "en", "zh"]  # both words; then the shorter message


# -------------------------------------------------------------------- tool parts
def test_tool_part_in_one_assistant_message_is_indexed_with_name_input_and_output(session):
    fill(session)
    session.append_message({"id": "weather", "role": "assistant", "parts": [
        {"type": "tool-weather_lookup", "toolCallId": "c1", "state": "output-available",
         "input": {"city": "Lisbon"}, "output": {"forecast": "sunny, 24 degrees"}},
    ]})
    for query in ("weather lookup", "Lisbon", "sunny", "what is the weather in lisbon?"):
        assert ids(session.search(query)) == ["weather"], query


def test_dynamic_tool_part_is_indexed_with_its_tool_name(session):
    fill(session)
    session.append_message({"id": "dyn", "role": "assistant", "parts": [
        {"type": "dynamic-tool", "toolName": "invoice_search", "toolCallId": "c9",
         "state": "output-available", "input": {"customer": "Acme"}, "output": ["INV-77"]},
    ]})
    assert ids(session.search("invoice search")) == ["dyn"]
    assert ids(session.search("acme inv 77")) == ["dyn"]


def _health_check_exchange(session) -> None:
    session.append_messages([
        user_msg("Is the api gateway in eu-west healthy?", id="ask"),
        {"id": "call", "role": "assistant", "parts": [
            {"type": "text", "text": "Running the probe now."},
            {"type": "tool-call", "toolCallId": "call_hc_1", "toolName": "health_check",
             "input": {"service": "api-gateway", "region": "eu-west"}},
        ]},
        {"id": "result", "role": "tool", "parts": [
            {"type": "tool-result", "toolCallId": "call_hc_1",
             "output": {"summary": "host gw-eu-3.internal answered 200 OK in 42 ms"}},
        ]},
        assistant_msg("The gateway answered in 42 milliseconds.", id="answer"),
    ])


def test_split_form_tool_result_is_indexed_with_its_calls_name_and_input(session):
    fill(session)
    _health_check_exchange(session)
    # The result itself never says "health", "check" or "west": its call does.
    assert "health" not in session.get_message("result").text
    assert "result" in ids(session.search("health check"))
    assert "result" in ids(session.search("west"))
    assert ids(session.search("which host did the health check hit?"))[0] == "result"


def test_parallel_split_form_results_each_get_their_own_call(session):
    fill(session)
    session.append_messages([
        {"id": "calls", "role": "assistant", "parts": [
            {"type": "tool-call", "toolCallId": "a", "toolName": "get_weather",
             "input": {"city": "Oslo"}},
            {"type": "tool-call", "toolCallId": "b", "toolName": "get_time",
             "input": {"zone": "Asia/Tokyo"}},
        ]},
        {"id": "time-result", "role": "tool",
         "parts": [{"type": "tool-result", "toolCallId": "b", "output": "14:05"}]},
        {"id": "weather-result", "role": "tool",
         "parts": [{"type": "tool-result", "toolCallId": "a", "output": "rain"}]},
    ])
    assert ids(session.search("oslo weather")) == ["weather-result", "calls"]
    assert ids(session.search("tokyo time")) == ["time-result", "calls"]


def test_updated_tool_result_is_still_indexed_with_its_call(session):
    fill(session)
    _health_check_exchange(session)
    session.upsert_message({"id": "result", "role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "call_hc_1",
         "output": {"summary": "host gw-eu-4.internal answered 503 after 900 ms"}},
    ]})
    assert "result" in ids(session.search("503"))
    assert "result" in ids(session.search("health check")), "the call's words were lost"
    assert ids(session.search("which host did the health check hit?"))[0] == "result"


# ----------------------------------------------------------------- syntax is words
SYNTAX_QUERIES = [
    ('"deploy" OR "migration"', "deploy or migration"),
    ("deploy* -migration", "deploy migration"),
    ("NEAR(deploy migration, 2)", "NEAR deploy migration 2"),
    ("deploy NEAR/3 migration", "deploy NEAR 3 migration"),
    ("body:deploy AND scope:migration", "body deploy and scope migration"),
    ("(deploy OR) AND (migration", "deploy or and migration"),
    ("[deploy] {migration} ^start", "deploy migration start"),
    ("deploy & migration | !lock <-> plan:*", "deploy migration lock plan"),
    ("what's the deploy's \"status", "what the deploy status"),
    ("'; DROP TABLE arbor_message; --", "DROP TABLE arbor_message"),
    ("\\deploy\\ 'migration'", "deploy migration"),
    ("🚀 deploy 🔥 migration ✅", "deploy migration"),
    ("deploy\x00migration", "deploy migration"),
    ("-", ""),
    ('"', ""),
    ("*", ""),
    ("(((", ""),
    ("NOT", "not"),
]


@pytest.mark.parametrize(("query", "words"), SYNTAX_QUERIES)
def test_query_syntax_is_only_words(session, query, words):
    fill(session)
    session.append_messages([
        user_msg("We deploy the migration on Thursday; the plan is ready.", id="both"),
        user_msg("The migration holds a lock on the orders table.", id="migration"),
        user_msg("Deploy status: not started. Drop the table later.", id="deploy"),
    ])
    got = session.search(query)  # raises nothing
    assert query_terms(query) == query_terms(words)
    assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in session.search(words)]


def test_a_query_naming_another_sessions_scope_token_finds_nothing(manager):
    mine = manager.get_session(manager.create("mine").id)
    theirs = manager.get_session(manager.create("theirs").id)
    theirs.append_message(user_msg("secret launch codes"))
    token = "§s" + theirs.id.replace("-", "")
    assert mine.search(token) == []
    assert mine.search(f"{token} secret") == []
    assert mine.search(f'scope : "{token}" OR secret') == []


@pytest.mark.parametrize("query", ["", " ", "  \t\n ", "\u3000", "?!", "...", "---"])
def test_empty_or_punctuation_only_query_returns_nothing_without_a_query(
    manager, session, query, django_assert_num_queries
):
    session.append_message(user_msg("anything at all"))
    with django_assert_num_queries(0):
        assert session.search(query) == []
        assert manager.search(query) == []


def test_defect_4_search_before_any_session_was_used(agent):
    fresh = SessionManager.for_agent(agent)
    assert fresh.search("what did we decide?") == []
    empty = fresh.get_session(fresh.create("empty").id)
    assert empty.search("what did we decide?") == []
    assert fresh.search("what did we decide?") == []


def test_defect_4_search_on_a_brand_new_agent_beside_a_busy_one(manager, db):
    busy = manager.get_session(manager.create("busy").id)
    busy.append_message(user_msg("we decided on Thursday"))
    newcomer = SessionManager.for_agent(make_agent("bob", "newcomer"))
    assert newcomer.search("decided thursday") == []


# ------------------------------------------------------------- deletes and edits
def test_defect_2_deleted_messages_not_in_search(manager, session):
    fill(session)
    kept = session.append_message(user_msg("the rollback plan is ready"))
    doomed = session.append_message(user_msg("the rollback password is swordfish"))
    child = session.append_message(assistant_msg("noted the rollback details"))
    assert doomed.id in ids(session.search("rollback swordfish"))
    session.delete_messages([doomed.id])
    assert ids(session.search("swordfish")) == []
    assert manager.search("swordfish") == []
    # The re-attached child and the others are still found.
    assert set(ids(session.search("rollback"))) == {kept.id, child.id}
    manager.delete_messages(session.id, [kept.id])
    assert ids(manager.search("rollback")) == [child.id]


def test_cleared_session_messages_not_in_search(manager):
    cleared = manager.get_session(manager.create("cleared").id)
    spared = manager.get_session(manager.create("spared").id)
    cleared.append_messages([user_msg("budget review notes"), user_msg("budget approved")])
    spared.append_message(user_msg("budget draft", id="spared-budget"))
    manager.clear_messages(cleared.id)
    assert cleared.search("budget") == []
    assert ids(manager.search("budget")) == ["spared-budget"]
    # Messages written after the clear are found again.
    cleared.append_message(user_msg("budget restarted", id="after-clear"))
    assert ids(cleared.search("budget")) == ["after-clear"]


def test_deleted_session_messages_not_in_search(manager):
    doomed = manager.create("doomed")
    manager.append(doomed.id, user_msg("orphaned budget notes"))
    manager.delete(doomed.id)
    assert manager.search("budget") == []


def test_upsert_reindexes_old_words_gone_new_words_found(session):
    fill(session)
    session.upsert_message(assistant_msg("The answer", id="stream"))
    session.upsert_message(assistant_msg("The answer is forty two", id="stream"))
    assert ids(session.search("forty")) == ["stream"]
    session.upsert_message(assistant_msg("Actually it is seventeen", id="stream"))
    assert session.search("forty") == []
    assert session.search("answer") == []
    assert ids(session.search("seventeen")) == ["stream"]


def test_update_message_reindexes_old_words_gone_new_words_found(manager, session):
    fill(session)
    m = session.append_message(user_msg("meeting on Monday morning"))
    session.update_message(user_msg("meeting moved to Wednesday afternoon", id=m.id))
    assert session.search("monday") == []
    assert manager.search("monday morning") == []
    assert ids(session.search("wednesday")) == [m.id]
    assert ids(manager.search("afternoon")) == [m.id]


def test_forked_copies_are_searchable_in_the_fork_and_told_apart(manager):
    source = manager.get_session(manager.create("source").id)
    a = source.append_message(user_msg("the launch window opens at dawn"))
    source.append_message(assistant_msg("after the fork point: launch delayed"))
    fork = manager.get_session(manager.fork(source.id, a.id, "fork").id)
    assert ids(fork.search("launch")) == [a.id]
    hits = manager.search("launch window dawn")
    # The two copies hold the same text: one hit, the fork's (stored later), copies 2.
    assert [(h.id, h.session_id, h.copies) for h in hits] == [
        (a.id, fork.id, 2), (source.get_history()[-1].id, source.id, 1)]
    fork.delete_messages([a.id])
    assert fork.search("launch") == []
    assert a.id in ids(source.search("launch"))


# ------------------------------------------------------------------ result shape
def test_results_carry_session_id_and_created_at_and_are_ordered_by_rank(manager):
    s1 = manager.get_session(manager.create("one").id)
    s2 = manager.get_session(manager.create("two").id)
    fill(s1)
    m1 = s1.append_message(user_msg("the deadline is Friday"))
    m2 = s2.append_message(assistant_msg("deadline moved: the deadline is now Monday"))
    hits = manager.search("deadline")
    assert ids(hits) == [m2.id, m1.id]
    for hit, message, owner in zip(hits, [m2, m1], [s2, s1], strict=True):
        assert hit.session_id == owner.id
        assert hit.role == message.role
        assert hit.content == message.text
        assert hit.created_at == owner.get_message(message.id).created_at
        assert hit.created_at.tzinfo is not None
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score >= hits[1].score
    assert set(hits[0].to_dict()) >= {"id", "session_id", "role", "content", "created_at", "rank"}


def test_session_scope_never_returns_other_sessions(manager):
    s1 = manager.get_session(manager.create("one").id)
    s2 = manager.get_session(manager.create("two").id)
    s1.append_message(user_msg("quarterly budget review", id="same-id"))
    s2.append_message(user_msg("quarterly budget review", id="same-id"))
    s2.append_message(user_msg("budget budget budget"))
    hits = s1.search("budget review")
    assert ids(hits) == ["same-id"]
    assert {h.session_id for h in hits} == {s1.id}
    assert {h.session_id for h in s2.search("budget")} == {s2.id}
    # Agent-wide, the two identical texts are one hit (the newer copy) that counts both.
    assert [(h.session_id, h.copies) for h in manager.search("budget")] == [
        (s2.id, 1), (s2.id, 2)]


def test_defect_1_agent_scope_never_returns_another_agents_messages(manager, other_manager):
    mine = manager.get_session(manager.create("mine").id)
    theirs = other_manager.get_session(other_manager.create("theirs").id)
    mine.append_message(user_msg("merger plans with Acme", id="m1"))
    theirs.append_message(user_msg("merger plans with Acme", id="m1"))
    theirs.append_message(user_msg("Acme Acme merger merger"))
    assert [(h.id, h.session_id) for h in manager.search("acme merger")] == [("m1", mine.id)]
    assert {h.session_id for h in other_manager.search("acme merger")} == {theirs.id}
    assert len(other_manager.search("acme merger")) == 2


def test_limit_is_respected(manager, session):
    session.append_messages([user_msg(f"status report number {i}") for i in range(30)])
    assert len(session.search("status")) == 10  # Session default
    assert len(manager.search("status")) == 20  # SessionManager default
    assert len(session.search("status", limit=3)) == 3
    assert len(manager.search("status report", limit=25)) == 25
    assert len(session.search("status", limit=0)) == 1  # clamped, never an error
    # Among equals, the newest comes first.
    assert [h.content for h in session.search("status", limit=2)] == [
        "status report number 29", "status report number 28"]


@pytest.mark.parametrize("query", ["deploy", "how do we deploy to kubernetes?", "北京 deploy"])
def test_search_is_one_query_at_either_scope(manager, session, query, django_assert_num_queries):
    fill(session)
    session.append_messages([user_msg("We deploy on Thursdays."), user_msg("北京 kubernetes")])
    # The terms' statistics (SQLite: with their rows in the scope), then the ranked hits.
    # SQLite: an agent holding the whole database is ranked by bm25(), which its first
    # search learns; its next searches skip the statistics (vendors/sqlite_search.py).
    with django_assert_num_queries(2):
        assert session.search(query)
    with django_assert_num_queries(1 if connection.vendor == "sqlite" else 2):
        assert manager.search(query)
