"""Search over HTTP: words only, never syntax; fixed query counts."""

from __future__ import annotations

import pytest
from django.db import connection

from memory_core import SessionManager

from .conftest import append, assistant_msg, ok, user_msg

FILLER = ["Lunch was soup and bread today.", "The printer is jammed again.",
          "Please water the plants.", "The quarterly report needs two more charts.",
          "Coffee machine repairs are scheduled.", "The new intern starts on Monday."]


def test_session_search_ranks_hits_in_the_exact_order(api, session_id):
    for text in FILLER:
        append(api, session_id, user_msg(text))
    append(api, session_id, user_msg("Deploy now.", id="deploy-short"))
    append(api, session_id, user_msg("The deployment day is Thursday.", id="both"))
    append(api, session_id, assistant_msg(
        "We will deploy the new billing service after the security review.", id="deploy-long"))
    append(api, session_id, user_msg("What a long day at the office.", id="day-only"))
    append(api, session_id, user_msg("Deploy the workers.", id="deploy-mid"))
    items = ok(api.get(f"/sessions/{session_id}/search", q="which day is the deployment?"))["items"]
    # Both words first; then the rarer word (day: 2 messages, deploy: 4); then shorter first.
    assert [h["id"] for h in items] == ["both", "day-only", "deploy-short", "deploy-mid",
                                        "deploy-long"]
    assert [h["rank"] for h in items] == [1, 2, 3, 4, 5]
    assert set(items[0]) == {"id", "session_id", "role", "content", "snippet", "truncated",
                             "created_at", "rank", "score", "superseded_by", "copies",
                             "other_copies", "matched"}
    assert (items[0]["superseded_by"], items[0]["copies"]) == (None, 1)


def test_agent_search_spans_sessions(api, agent_id, session_id, conversation):
    other = ok(api.post(f"/agents/{agent_id}/sessions", {}), 201)["id"]
    append(api, other, user_msg("Thursday deployment confirmed"))
    hits = ok(api.get(f"/agents/{agent_id}/search", q="Thursday"))["items"]
    assert {h["session_id"] for h in hits} == {session_id, other}


def test_limit(api, session_id, conversation):
    assert len(ok(api.get(f"/sessions/{session_id}/search", q="deploy", limit=1))["items"]) == 1


@pytest.mark.parametrize("q", ['"unbalanced', "deploy*", "-deploy", "deploy NEAR tuesday",
                               "a OR b AND", "col:umn", "(((", "[]{}", "'; DROP TABLE x;--",
                               "", "   ", "\u202e", "部署", "🚀", "%", "\\"])
def test_any_query_text_is_words_never_an_error(api, agent_id, session_id, conversation, q):
    ok(api.get(f"/sessions/{session_id}/search", q=q))
    ok(api.get(f"/agents/{agent_id}/search", q=q))


def test_deleted_messages_are_not_found(api, session_id, conversation):
    ok(api.delete(f"/sessions/{session_id}/messages/a2"), 204)
    hits = ok(api.get(f"/sessions/{session_id}/search", q="Thursday"))["items"]
    assert "a2" not in [h["id"] for h in hits]


@pytest.mark.parametrize("count", [5, 200])
def test_search_query_counts_are_fixed(api, alice_agent, session_id, count,
                                       django_assert_num_queries):
    SessionManager.for_agent(alice_agent).append_all(session_id, [
        assistant_msg(f"deploy note {i}") for i in range(count)])
    search = 2  # the terms' statistics, then the hits
    with django_assert_num_queries(1 + search):  # the key with the session; the search
        assert ok(api.get(f"/sessions/{session_id}/search", q="deploy note"))["items"]
    if connection.vendor == "sqlite":  # the agent holds the whole database: bm25() ranks
        search = 1  # its searches, as its first one learnt (vendors/sqlite_search.py)
    with django_assert_num_queries(2 + search):  # key; agent; the search
        assert ok(api.get(f"/agents/{alice_agent.id}/search", q="deploy note"))["items"]


# ---------------------------------------------------------- long queries, big hits
def test_a_query_longer_than_2000_characters_is_words(api, agent_id, session_id, conversation):
    q = "Thursday " + " ".join(["the"] * 700)  # ~2,800 characters, stop words aside
    assert len(q) > 2000
    for path in (f"/sessions/{session_id}/search", f"/agents/{agent_id}/search"):
        assert {h["id"] for h in ok(api.get(path, q=q))["items"]} == {"u2", "a2"}


def _big_message(alice_agent, session_id, size=1_000_000):
    # The matching word sits after 6,000 filler words (the index reads a message's first
    # 20,000 words); filler makes up the rest of the megabyte.
    text = ("lorem ipsum dolor " * 2000 + "the kubernetes cluster was upgraded "
            + "lorem ipsum dolor " * (size // 18))
    SessionManager.for_agent(alice_agent).append(session_id, user_msg(text, id="big"))
    return text


def test_hits_carry_a_snippet_and_cut_content_unless_full(api, alice_agent, agent_id,
                                                          session_id):
    text = _big_message(alice_agent, session_id)
    append(api, session_id, user_msg("kubernetes is small here", id="small"))
    for path in (f"/sessions/{session_id}/search", f"/agents/{agent_id}/search"):
        response = api.get(path, q="kubernetes", limit=2)
        assert len(response.content) < 10_000  # not a megabyte
        hits = {h["id"]: h for h in ok(response)["items"]}
        big, small = hits["big"], hits["small"]
        assert big["truncated"] is True and big["content"] == text[:2000]
        assert "<mark>kubernetes</mark> cluster was upgraded" in big["snippet"]
        assert big["snippet"].startswith("\u2026") and big["snippet"].endswith("\u2026")
        assert len(big["snippet"].replace("<mark>", "").replace("</mark>", "")) <= 302
        assert small["truncated"] is False and small["content"] == "kubernetes is small here"
        assert small["snippet"] == "<mark>kubernetes</mark> is small here"
        full = {h["id"]: h for h in ok(api.get(path, q="kubernetes", full=1))["items"]}
        assert full["big"]["content"] == text and full["big"]["truncated"] is False


def test_snippet_escapes_html_and_marks_every_matched_word(api, session_id):
    append(api, session_id, user_msg(
        'Deploying <script>alert("x")</script> & \'quotes\' after we deployed it', id="xss"))
    [hit] = ok(api.get(f"/sessions/{session_id}/search", q="deploy"))["items"]
    assert hit["snippet"] == (
        "<mark>Deploying</mark> &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; "
        "&#x27;quotes&#x27; after we <mark>deployed</mark> it")
    assert hit["content"].startswith("Deploying <script>")  # content is the text itself


def test_openapi_documents_snippet_full_and_no_query_length_limit(api):
    doc = ok(api.get("/openapi.json"))
    hit = doc["components"]["schemas"]["SearchHitOut"]
    assert {"snippet", "truncated", "content"} <= set(hit["required"])
    for path in ("/api/v1/sessions/{session_id}/search", "/api/v1/agents/{agent_id}/search"):
        params = {p["name"]: p for p in doc["paths"][path]["get"]["parameters"]}
        assert "maxLength" not in params["q"]["schema"]
        assert params["full"]["schema"]["type"] == "boolean"


def test_hits_say_which_newer_hit_corrects_them_and_count_copies(api, agent_id, session_id):
    append(api, session_id, user_msg("The rent is 1650 euros a month.", id="old"))
    for n in range(3):
        append(api, session_id, assistant_msg("Noted the rent.", id=f"copy-{n}"))
    append(api, session_id, user_msg("Actually the rent went up to 1740 euros.", id="new"))
    items = ok(api.get(f"/agents/{agent_id}/search", q="what is the rent now?"))["items"]
    by_id = {h["id"]: h for h in items}
    assert [h["id"] for h in items].index("new") < [h["id"] for h in items].index("old")
    assert by_id["old"]["superseded_by"] == "new" and by_id["new"]["superseded_by"] is None
    assert by_id["copy-2"]["copies"] == 3 and "copy-0" not in by_id
    assert all(h["created_at"] for h in items)
