"""Vectors beside the messages: stored by the embedding step, dropped with their message
or on an edit, made again when the model changes, counted as pending until then."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from memory_core.embedding import WrongDimension
from sessions_app.models import MessageVector
from sessions_app.semantic.embed import embed_all, embed_batch, pending_count
from sessions_app.semantic.status import status
from sessions_app.storage import vector_index as index
from sessions_app.storage import vectors
from tests.conftest import user_msg
from tests.semantic.fake import FakeEmbedder, fake_vector


class OtherModel(FakeEmbedder):
    model = "fake-other"


def test_embedding_stores_one_int8_vector_per_message(manager, session, fake_embeddings):
    a = session.append_message(user_msg("picked up the new Skoda yesterday"))
    b = session.append_message({"role": "assistant", "parts": []})  # no text: nothing to embed
    assert pending_count(fake_embeddings, agent_id=manager.agent_id) == 2
    read, last = embed_batch(fake_embeddings)
    assert read == 2
    rows = {r.message.message_id: r for r in MessageVector.objects.select_related("message")}
    assert set(rows) == {a.id, b.id}
    assert (rows[a.id].dim, rows[b.id].dim) == (64, 0)
    stored = np.frombuffer(bytes(rows[a.id].vector), np.int8) * rows[a.id].scale
    assert float(stored @ np.asarray(fake_vector(a.text))) > 0.999
    assert pending_count(fake_embeddings, agent_id=manager.agent_id) == 0
    assert embed_batch(fake_embeddings, after=last) == (0, last)


def test_deleting_a_message_or_its_session_deletes_its_vector(manager, session, fake_embeddings):
    a = session.append_message(user_msg("one"))
    session.append_message(user_msg("two"))
    embed_all(fake_embeddings)
    session.delete_messages([a.id])
    assert MessageVector.objects.count() == 1
    manager.delete(session.id)
    assert MessageVector.objects.count() == 0


def test_an_edit_drops_the_vector_and_is_embedded_again(manager, session, fake_embeddings):
    a = session.append_message(user_msg("the old text"))
    embed_all(fake_embeddings)
    session.update_message({**user_msg("tiramisu every day"), "id": a.id})
    assert MessageVector.objects.count() == 0
    assert pending_count(fake_embeddings, agent_id=manager.agent_id) == 1
    embed_all(fake_embeddings)
    row = MessageVector.objects.get()
    stored = np.frombuffer(bytes(row.vector), np.int8) * row.scale
    assert float(stored @ np.asarray(fake_vector("tiramisu every day"))) > 0.999


def stored_vector(message_id: str) -> np.ndarray:
    row = MessageVector.objects.select_related("message").get(message__message_id=message_id)
    return np.frombuffer(bytes(row.vector), np.int8) * row.scale


def test_a_reply_to_a_question_is_embedded_after_it(manager, session, fake_embeddings):
    # "Yes, two weeks before." says nothing alone: what it answers is in the question.
    q = session.append_message({"role": "assistant", "parts": [
        {"type": "text", "text": "Want me to remind you before the newspaper renewal?"}]})
    a = session.append_message(user_msg("Yes, two weeks before."))
    n = session.append_message(user_msg("My sister works as a nurse."))  # after a statement
    embed_all(fake_embeddings)
    both = np.asarray(fake_vector(q.text + "\n" + a.text))
    assert float(stored_vector(a.id) @ both) > 0.999
    assert float(stored_vector(q.id) @ np.asarray(fake_vector(q.text))) > 0.999
    assert float(stored_vector(n.id) @ np.asarray(fake_vector(n.text))) > 0.999


def test_tool_inputs_and_outputs_are_embedded_with_their_keys(manager, session,
                                                              fake_embeddings):
    """The words index a tool result's values; meaning reads its keys too: "unhealthy
    hosts chk-node-7" says what the host is, the value alone does not."""
    from memory_core.messages import labelled

    out = {"healthy": 2, "unhealthy_hosts": ["chk-node-7"], "lastCheck": None,
           "degraded": True, "details": {"reason": "connection refused"}}
    assert labelled(out) == ("healthy 2, unhealthy hosts chk-node-7, degraded yes, "
                             "details reason connection refused")
    deep: object = "core"
    for _ in range(5_000):  # nesting far past Python's recursion limit
        deep = {"inner": deep}
    assert labelled(deep).endswith("core")
    result = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "lb_status", "output": out}]})
    embed_all(fake_embeddings)
    assert float(stored_vector(result.id) @ np.asarray(fake_vector(
        "lb_status " + labelled(out)))) > 0.999
    assert result.text == "lb_status 2 chk-node-7 connection refused"  # the words: values


def test_what_counts_as_a_message_that_asks():
    """A question or a bid, in Latin or full-width punctuation, is put before its reply
    (its last CONTEXT_CHARS characters); a statement is not, nor is a reply to nothing."""
    from memory_core.embedding import CONTEXT_CHARS, in_context

    for asking in ("Want a reminder?", "Let me know what to change! ", "要提醒你吗？",
                   "変更があれば教えて！"):
        assert in_context("Yes.", asking) == f"{asking.strip()}\nYes."
    assert in_context("Yes.", "Noted, the renewal is on 30 June.") == "Yes."
    assert in_context("Yes.", None) == "Yes." and in_context("", "Why?") == ""
    long = "x" * 1_000 + " so, shall I?"
    assert in_context("Yes.", long) == long[-CONTEXT_CHARS:] + "\nYes."


def test_rewriting_a_question_drops_its_replies_vectors(manager, session, fake_embeddings):
    q = session.append_message(user_msg("Which car should I buy?"))
    a = session.append_message({"role": "assistant", "parts": [
        {"type": "text", "text": "The Skoda, it is cheaper."}]})
    other = session.append_message(user_msg("thanks"))
    embed_all(fake_embeddings)
    session.update_message({**user_msg("Which bike should I buy?"), "id": q.id})
    assert set(MessageVector.objects.values_list("message__message_id", flat=True)) == {other.id}
    embed_all(fake_embeddings)
    assert float(stored_vector(a.id) @ np.asarray(
        fake_vector("Which bike should I buy?\n" + a.text))) > 0.999


def test_a_model_change_re_embeds_and_never_mixes(manager, session, fake_embeddings):
    session.append_message(user_msg("one"))
    embed_all(fake_embeddings)
    other = OtherModel()
    assert pending_count(other, agent_id=manager.agent_id) == 1
    embed_all(other)
    assert list(MessageVector.objects.values_list("model", flat=True)) == ["fake-other"]
    assert pending_count(fake_embeddings, agent_id=manager.agent_id) == 1


def test_vectors_of_another_size_are_refused(session, fake_embeddings):
    session.append_message(user_msg("one"))
    embed_all(fake_embeddings)
    session.append_message(user_msg("two"))

    class Wider(FakeEmbedder):
        def embed_passages(self, texts):
            return [np.ones(128, np.float32) / np.sqrt(128) for _ in texts]

    with pytest.raises(WrongDimension, match="128"):
        embed_all(Wider())
    assert MessageVector.objects.count() == 1


def test_embed_batch_is_scoped_to_an_agent(manager, other_manager, session, fake_embeddings):
    session.append_message(user_msg("mine"))
    theirs = other_manager.get_session(other_manager.create("x").id)
    theirs.append_message(user_msg("theirs"))
    embed_all(fake_embeddings, agent_id=manager.agent_id)
    assert MessageVector.objects.get().agent_id == manager.agent_id
    assert pending_count(fake_embeddings) == 1


def test_status_counts_pending_and_embedded(manager, session, fake_embeddings):
    session.append_message(user_msg("one"))
    session.append_message(user_msg("two"))
    assert status(manager.agent_id) | {} == {
        "enabled": True, "model": "fake-hash-64", "embedded": 0, "pending": 2,
        "failing": False, "error": ""}
    embed_batch(fake_embeddings, limit=1)
    assert (status(manager.agent_id)["embedded"], status(manager.agent_id)["pending"]) == (1, 1)


def test_status_when_off(manager):
    assert status(manager.agent_id)["enabled"] is False


def test_cache_adds_new_rows_and_reloads_after_a_delete(manager, session, fake_embeddings):
    first = session.append_message(user_msg("car"))
    embed_all(fake_embeddings)
    with connection.cursor() as cur:
        held = index.agent_vectors(cur, agent_id=manager.agent_id, model="fake-hash-64")
    assert held.size == 1
    session.append_message(user_msg("dessert"))
    embed_all(fake_embeddings)
    with connection.cursor() as cur:
        again = index.agent_vectors(cur, agent_id=manager.agent_id, model="fake-hash-64")
    assert again is held and held.size == 2  # appended in place
    session.delete_messages([first.id])
    with connection.cursor() as cur:
        reloaded = index.agent_vectors(cur, agent_id=manager.agent_id, model="fake-hash-64")
        left = vectors.count(cur, agent_id=manager.agent_id, model="fake-hash-64")
    assert reloaded is not held and reloaded.size == 1 and reloaded.rows == left == 1
    query = np.asarray(fake_vector("tiramisu"), np.float32)
    assert [s for s, _ in index.nearest(reloaded, query, limit=5)] == reloaded.seqs[:1].tolist()


def test_nearest_ranks_by_cosine_within_a_scope(manager, session, fake_embeddings):
    session.append_message(user_msg("picked up the new Skoda yesterday"))
    session.append_message(user_msg("I could eat tiramisu every day"))
    other = manager.get_session(manager.create("other").id)
    other.append_message(user_msg("the car is blue"))
    embed_all(fake_embeddings)
    with connection.cursor() as cur:
        held = index.agent_vectors(cur, agent_id=manager.agent_id, model="fake-hash-64")
    query = np.asarray(fake_vector("What car do I drive now?"), np.float32)
    hits = index.nearest(held, query, limit=3)
    assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    keys = dict(zip(held.seqs[:held.size].tolist(), held.sessions[:held.size].tolist(), strict=True))
    in_other = index.nearest(held, query, limit=3, session_key=keys[hits[0][0]])
    assert {keys[s] for s, _ in in_other} == {keys[hits[0][0]]}
    with pytest.raises(WrongDimension):
        index.nearest(held, np.ones(8, np.float32), limit=3)
