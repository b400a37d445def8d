"""Search by meaning over HTTP: hits say how they matched, the response says whether
meaning was used and how much waits to be embedded; scope=path|session|agent."""

from __future__ import annotations

from sessions_app.semantic.embed import embed_all

from .conftest import append, assistant_msg, ok, user_msg


def test_meaning_hits_are_marked_and_pending_is_reported(api, agent_id, session_id,
                                                         fake_embeddings):
    append(api, session_id, user_msg("picked up the new Skoda yesterday", id="skoda"))
    append(api, session_id, user_msg("the weather is fine", id="weather"))
    state = ok(api.get(f"/agents/{agent_id}/embeddings"))
    assert (state["enabled"], state["pending"], state["embedded"]) == (True, 2, 0)
    embed_all(fake_embeddings)
    append(api, session_id, user_msg("my car has new tyres", id="tyres"))
    body = ok(api.get(f"/agents/{agent_id}/search", q="What car do I drive now?"))
    assert (body["semantic"], body["pending"]) == ("on", 1)
    matched = {h["id"]: h["matched"] for h in body["items"]}
    assert matched["skoda"] == "meaning" and matched["tyres"] == "words"
    skoda = next(h for h in body["items"] if h["id"] == "skoda")
    assert skoda["snippet"].startswith("picked up the new Skoda")


def test_a_failing_embedder_answers_by_words(api, session_id, fake_embeddings):
    append(api, session_id, user_msg("my car is red", id="car"))
    embed_all(fake_embeddings)
    fake_embeddings.fail = True
    body = ok(api.get(f"/sessions/{session_id}/search", q="car"))
    assert body["semantic"] == "unavailable"
    assert [h["id"] for h in body["items"]] == ["car"]


def test_path_scope_searches_one_branch(api, agent_id, session_id):
    append(api, session_id, user_msg("which car should I buy?", id="q"))
    append(api, session_id, assistant_msg("the red car", id="a1"), parent_id="q")
    append(api, session_id, assistant_msg("the blue car", id="a2"), parent_id="q")
    ids = lambda **p: {h["id"] for h in ok(api.get(  # noqa: E731
        f"/sessions/{session_id}/search", q="car", **p))["items"]}
    assert ids(scope="path", leaf="a1") == {"q", "a1"}
    assert ids(scope="path") == {"q", "a2"}
    assert ids() == ids(scope="session") == {"q", "a1", "a2"}
    other = ok(api.post(f"/agents/{agent_id}/sessions", {"name": "other"}), 201)["id"]
    append(api, other, user_msg("a car elsewhere", id="far"))
    assert "far" in ids(scope="agent") and "far" not in ids()


def test_bad_scope_or_leaf_is_422_or_404(api, session_id):
    append(api, session_id, user_msg("car", id="m"))
    for params, status in (({"scope": "branch"}, 422), ({"leaf": "m"}, 422),
                           ({"scope": "path", "leaf": "missing"}, 404)):
        response = api.get(f"/sessions/{session_id}/search", q="car", **params)
        assert response.status_code == status, (params, response.content)
        assert response.json()["detail"]


def test_the_embeddings_state_names_the_chosen_offline_model(api, agent_id, settings):
    """The model's name comes from the embedder (its `.model`): USE beside MiniLM by
    default, USE alone or e5 when ARBOR_EMBEDDINGS_LOCAL says so."""
    from memory_core.embedders import LOCAL_MODEL, PAIR_MODEL, USE_MODEL

    settings.ARBOR_EMBEDDINGS = "on"
    assert ok(api.get(f"/agents/{agent_id}/embeddings"))["model"] == PAIR_MODEL
    settings.ARBOR_EMBEDDINGS_LOCAL = "use"
    assert ok(api.get(f"/agents/{agent_id}/embeddings"))["model"] == USE_MODEL
    settings.ARBOR_EMBEDDINGS_LOCAL = "e5"
    assert ok(api.get(f"/agents/{agent_id}/embeddings"))["model"] == LOCAL_MODEL
