"""The offline model itself (the default install's): loaded once for this module, it finds
an answer that shares no word with the question, in English and across languages."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memory_core.embedders import LOCAL_DIM, LOCAL_MODEL, LocalE5
from sessions_app.semantic import config
from sessions_app.semantic.embed import embed_all
from tests.conftest import assistant_msg, user_msg

ANSWER = "picked up the new Skoda yesterday"
OTHERS = ["Noted: window seats. When would you like to fly?",  # a question outranked it
          "Tom finally moved to Porto", "I could eat tiramisu every day",
          "The deploy script failed because the migration table was locked",
          "Meeting with Anna moved to Thursday", "Please water the plants while I'm away"]


@pytest.fixture(scope="module")
def model() -> LocalE5:
    return LocalE5()


def test_vectors_are_unit_length_and_messages_take_the_query_form(model):
    query, passage = model.embed_query(ANSWER), model.embed_passages([ANSWER])[0]
    assert query.shape == passage.shape == (LOCAL_DIM,)
    assert abs(float(np.linalg.norm(passage)) - 1) < 1e-4
    assert float(query @ passage) > 0.99  # symmetric: the same text, the same vector


def test_a_question_is_embedded_while_a_batch_of_messages_is(model):
    # The worker's batch holds the messages' engine for seconds; a search must not wait.
    done = threading.Event()
    with model._locks["passages"]:  # a batch under way
        asker = threading.Thread(target=lambda: (model.embed_query("what car?"), done.set()))
        asker.start()
        assert done.wait(30), "the question waited for the messages' batch"
    asker.join()


def test_the_default_install_answers_what_car_from_the_skoda(manager, session, settings):
    settings.ARBOR_EMBEDDINGS = "on"  # the default: no URL, so the offline model
    embedder = config.embedder()
    assert embedder is not None and embedder.model == LOCAL_MODEL
    for text in OTHERS:
        session.append_message(user_msg(text))
        session.append_message(assistant_msg("Noted."))
    skoda = session.append_message(user_msg(ANSWER))
    embed_all(embedder)
    for question in ("What car do I drive now?", "Welches Auto fahre ich jetzt?"):
        hits = manager.search(question, 3)
        assert hits.semantic == "on"
        assert hits[0].id == skoda.id, (question, [h.content for h in hits])
        assert hits[0].matched == "meaning"


def test_search_by_meaning_is_on_by_default():
    """A fresh install (no ARBOR_EMBEDDINGS in the environment) searches by meaning with
    the offline model, which a search embeds its question with."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBOR_EMBEDDINGS")}
    env["DJANGO_SETTINGS_MODULE"] = "arbor.settings"
    code = ("import django; django.setup(); from sessions_app.semantic import config; "
            "e = config.embedder(); print(e.model, e.floor)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()
    assert out == [LOCAL_MODEL, "0.82"]
