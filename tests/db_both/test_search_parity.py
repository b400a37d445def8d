"""The same words give the same answers on SQLite and Postgres (SPEC §3).

One pytest run uses one database, so this file runs `search_probe` in a subprocess once
per database (each probe makes and destroys its own throwaway database) and compares
what they print. It covers both databases by itself, so it runs only in the SQLite pass;
Postgres is found at $ARBOR_PARITY_POSTGRES_URL.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core.messages import project_text, tool_calls_in
from memory_core.search import index_tokens, query_concepts, query_terms
from tests.db_both import search_probe
from tests.db_both.search_probe import CORPUS, DELETED, OTHER_AGENT, QUERIES, SYNTAX_WORDS, UPSERTED

pytestmark = pytest.mark.sqlite_only

REPO = Path(__file__).resolve().parents[2]
POSTGRES_URL = os.environ.get(
    "ARBOR_PARITY_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"
)
VENDORS = ["sqlite", "postgresql"]


def _postgres_unreachable() -> str | None:
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=5):
            return None
    except Exception as exc:  # any failure to connect means: cannot compare
        return f"PostgreSQL not reachable at ARBOR_PARITY_POSTGRES_URL={POSTGRES_URL}: {exc}"


def _run_probe(database_url: str) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
    done = subprocess.run(
        [sys.executable, "-m", search_probe.__name__], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"probe failed on {database_url}:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, dict[str, Any] | str]:
    """vendor -> probe output, or the reason it could not run."""
    tmp = tmp_path_factory.mktemp("parity")
    out: dict[str, dict[str, Any] | str] = {
        "sqlite": _run_probe(f"sqlite:///{tmp / 'base.sqlite3'}")
    }
    reason = _postgres_unreachable()
    out["postgresql"] = reason if reason else _run_probe(POSTGRES_URL)
    return out


def _for(answers: dict[str, Any], vendor: str) -> dict[str, Any]:
    got = answers[vendor]
    if isinstance(got, str):
        pytest.skip(got)
    assert got["vendor"] == vendor
    return got["queries"]


def _scopes(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every result list of one query, by scope name."""
    scopes = {"agent": result["agent"], "other_agent": result["other_agent"]}
    scopes.update({f"session:{name}": hits for name, hits in result["sessions"].items()})
    return scopes


def _ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h["id"] for h in hits]


def _indexed_tokens() -> dict[str, set[str]]:
    """What each message should be indexed under, worked out from the corpus alone."""
    tokens: dict[str, set[str]] = {}
    for corpus in (CORPUS, OTHER_AGENT):
        for messages in corpus.values():
            calls: dict[str, str] = {}
            for m in messages:
                parts = m.get("parts") or [{"type": "text", "text": m["content"]}]
                text = project_text(parts)
                calls.update(tool_calls_in(parts))
                for p in parts:  # a split-form result is indexed with its call
                    if p["type"] == "tool-result":
                        text += " " + calls.get(p["toolCallId"], "")
                tokens[m["id"]] = set(index_tokens(text))
    tokens[UPSERTED["id"]] = set(index_tokens(UPSERTED["content"]))
    return tokens


TOKENS = _indexed_tokens()
MAIN_IDS = {m["id"] for ms in CORPUS.values() for m in ms}
OTHER_IDS = {m["id"] for ms in OTHER_AGENT.values() for m in ms}


# ------------------------------------------------------------------ parity
def test_sqlite_and_postgres_give_the_same_hits_in_the_same_order(answers):
    sqlite, postgres = _for(answers, "sqlite"), _for(answers, "postgresql")
    assert len(QUERIES) == 22
    assert sqlite.keys() == postgres.keys()
    compared = 0
    for key in sqlite:
        for scope, s_hits in _scopes(sqlite[key]).items():
            p_hits = _scopes(postgres[key])[scope]
            where = f"query {key!r} ({sqlite[key]['query']!r}) at {scope}"
            assert _ids(s_hits)[:1] == _ids(p_hits)[:1], f"top hit differs for {where}"
            assert _ids(s_hits) == _ids(p_hits), f"hits differ for {where}"
            assert [(h["session"], h["role"], h["rank"], h["superseded_by"], h["copies"],
                     h["matched"]) for h in s_hits] == [
                (h["session"], h["role"], h["rank"], h["superseded_by"], h["copies"],
                 h["matched"]) for h in p_hits
            ], where
            compared += 1
    assert compared == len(sqlite) * (2 + len(CORPUS))


def test_hybrid_search_gives_the_same_hits_on_both(answers):
    """Words and meaning fused (a deterministic embedder): same hits, order, flags, scores."""
    sqlite, postgres = _for(answers, "sqlite"), _for(answers, "postgresql")
    for key in sqlite:
        s_hits, p_hits = sqlite[key]["hybrid"], postgres[key]["hybrid"]
        shape = [(h["id"], h["rank"], h["matched"], h["superseded_by"], h["copies"])
                 for h in s_hits]
        assert shape == [(h["id"], h["rank"], h["matched"], h["superseded_by"], h["copies"])
                         for h in p_hits], key
        assert all(math.isclose(a["score"], b["score"], rel_tol=1e-6)
                   for a, b in zip(s_hits, p_hits, strict=True)), key
    flags = {h["matched"] for r in sqlite.values() for h in r["hybrid"]}
    assert flags == {"words", "meaning", "both"}


def test_sqlite_and_postgres_give_identical_snippets(answers):
    sqlite, postgres = _for(answers, "sqlite"), _for(answers, "postgresql")
    marked = 0
    for key in sqlite:
        for scope, s_hits in _scopes(sqlite[key]).items():
            p_hits = {(h["session"], h["id"]): h["snippet"] for h in _scopes(postgres[key])[scope]}
            for hit in s_hits:
                assert hit["snippet"] == p_hits[(hit["session"], hit["id"])], (key, scope)
                marked += "<mark>" in hit["snippet"]
    assert marked > 100  # the snippets compared do mark the words they matched


def test_sqlite_and_postgres_score_with_the_same_bm25(answers):
    sqlite, postgres = _for(answers, "sqlite"), _for(answers, "postgresql")
    for key in sqlite:
        for scope, s_hits in _scopes(sqlite[key]).items():
            p_hits = _scopes(postgres[key])[scope]
            for s, p in zip(s_hits, p_hits, strict=True):
                assert math.isclose(s["score"], p["score"], rel_tol=1e-5, abs_tol=2e-6), (
                    f"{key} at {scope}: {s['id']} scores {s['score']} on SQLite, "
                    f"{p['score']} on Postgres"
                )


# -------------------------------------------- behaviour, checked on each database
@pytest.fixture(params=VENDORS)
def results(request, answers) -> dict[str, Any]:
    return _for(answers, request.param)


def test_every_query_ran_and_limits_hold(results):
    assert set(QUERIES) | {f"{k}__words" for k in SYNTAX_WORDS} == set(results)
    for key, result in results.items():
        assert len(result["agent"]) <= search_probe.AGENT_LIMIT
        for name, hits in result["sessions"].items():
            assert len(hits) <= search_probe.SESSION_LIMIT
            assert {h["session"] for h in hits} <= {name}, f"{key}: other session in {name}"
        for hits in _scopes(result).values():
            assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1)), key


def test_other_agents_messages_never_appear(results):
    for key, result in results.items():
        for scope, hits in _scopes(result).items():
            expected = OTHER_IDS if scope == "other_agent" else MAIN_IDS
            assert set(_ids(hits)) <= expected, f"{key} at {scope} leaked {_ids(hits)}"
    # The intruder holds the same words, so the isolation above is not vacuous.
    assert _ids(results["edited_old_word"]["other_agent"]) == ["other-meeting"]
    assert "other-zh" in _ids(results["cjk_zh"]["other_agent"])


def test_deleted_message_never_appears(results):
    assert results["deleted_words"]["agent"], "other messages hold 'rollback'"
    for key, result in results.items():
        for scope, hits in _scopes(result).items():
            assert not set(DELETED) & set(_ids(hits)), f"{key} at {scope}"


def test_upserted_message_is_found_by_new_words_only(results):
    for hits in _scopes(results["edited_old_word"]).values():
        assert all(h["session"] == "intruder" for h in hits)
    assert _ids(results["edited_new_words"]["agent"]) == [UPSERTED["id"]]
    assert _ids(results["edited_new_words"]["sessions"]["edits-and-deletes"]) == [UPSERTED["id"]]


def test_stemming_variants_match_each_other(results):
    deploy = _ids(results["word_deploy"]["agent"])
    assert {"dp-deployed-hotfix", "dp-deploying-note", "dp-decision-day", "hc-deploys",
            "dp-ask-day"} <= set(deploy)
    assert _ids(results["stem_deployed"]["agent"]) == deploy
    assert _ids(results["stem_deployments"]["agent"]) == deploy


def test_tool_result_is_top_hit_for_the_health_check_question(results):
    assert _ids(results["nl_health_host"]["agent"])[0] == "hc-result"
    assert _ids(results["nl_health_host"]["sessions"]["health-checks"])[0] == "hc-result"


def test_natural_language_question_finds_the_answer_first(results):
    assert _ids(results["nl_deploy_day"]["agent"])[0] == "dp-decision-day"


def test_cjk_and_thai_queries_find_their_messages(results):
    assert _ids(results["cjk_zh"]["agent"]) and set(_ids(results["cjk_zh"]["agent"])) == {
        "ml-zh", "ml-mixed"}
    assert _ids(results["cjk_ja"]["agent"])[0] == "ml-ja"
    assert _ids(results["thai"]["agent"]) == ["ml-th"]
    assert _ids(results["thai"]["sessions"]["multilingual"]) == ["ml-th"]
    assert results["thai"]["sessions"]["deploy-planning"] == []


def test_syntax_queries_mean_the_same_as_their_words(results):
    for key, words in SYNTAX_WORDS.items():
        assert query_terms(QUERIES[key]) == query_terms(words), key
        syntax, plain = _scopes(results[key]), _scopes(results[f"{key}__words"])
        assert syntax == plain, f"{QUERIES[key]!r} answers differently from {words!r}"
        assert syntax["agent"], f"{QUERIES[key]!r} should match something"


def test_empty_query_returns_nothing(results):
    for hits in _scopes(results["empty_whitespace"]).values():
        assert hits == []


def test_all_words_rank_above_some_words_then_by_score(results):
    """All query words (a word: any of its stem variants) first, then by score, but for
    corrections, which move above what they supersede."""
    for key, result in results.items():
        concepts = query_concepts(result["query"])
        terms = {t for c in concepts for t in c}
        if not terms:
            continue
        for scope, all_hits in _scopes(result).items():
            moved = {h["superseded_by"] for h in all_hits}
            hits = [h for h in all_hits if h["id"] not in moved]
            tiers = [all(set(c) & TOKENS[h["id"]] for c in concepts) for h in hits]
            assert tiers == sorted(tiers, reverse=True), f"{key} at {scope}: {_ids(hits)}"
            for tier in (True, False):
                scores = [h["score"] for h, t in zip(hits, tiers, strict=True) if t is tier]
                assert scores == sorted(scores, reverse=True), f"{key} at {scope}"
            for h in all_hits:  # any word matches
                assert terms & TOKENS[h["id"]], f"{key}: {h['id']} holds no query word"
    # Here the order matters: a short message repeating one word outscores a long one
    # holding both, yet comes after it.
    hits = {h["id"]: h for h in results["all_vs_some"]["agent"]}
    order = _ids(results["all_vs_some"]["agent"])
    assert hits["dp-migration-only"]["score"] > hits["dp-billing-migration"]["score"]
    assert order.index("dp-billing-migration") < order.index("dp-migration-only")


def test_the_correction_ranks_first_and_points_back(results):
    for hits in (results["rent_now"]["agent"], results["rent_now"]["sessions"]["corrections"]):
        assert _ids(hits)[:2] == ["cr-rent-new", "cr-rent-old"]
        assert [h["superseded_by"] for h in hits[:2]] == [None, "cr-rent-new"]


def test_identical_texts_are_one_hit_with_their_count(results):
    hits = results["flat_details"]["agent"]
    assert _ids(hits)[0] == "cr-echo-3" and hits[0]["copies"] == 3
    assert not {"cr-echo-1", "cr-echo-2"} & set(_ids(hits))
    assert [h["copies"] for h in hits[1:]] == [1] * (len(hits) - 1)


def test_rarer_words_rank_higher(results):
    hits = results["rare_vs_common"]["agent"]
    assert _ids(hits)[0] == "hc-k8s"  # the one message saying 'kubernetes'
    assert len(hits) > 3  # and the many saying 'deploy' follow
    assert all(hits[0]["score"] > h["score"] for h in hits[1:])
