"""The offline models themselves (the default install's, USE beside MiniLM; USE alone; e5):
each loaded once for this module, each finds an answer that shares no word with the
question, in English and across languages; the settings choose between them."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from memory_core.embedders import (
    LOCAL_DIM,
    LOCAL_MODEL,
    PAIR_DIM,
    PAIR_FLOOR,
    PAIR_MARGIN,
    PAIR_MODEL,
    USE_DIM,
    USE_FLOOR,
    USE_MARGIN,
    USE_MODEL,
    LocalE5,
    LocalUSE,
    LocalUSEMiniLM,
)
from memory_core.hybrid import DENSE_MARGIN
from sessions_app.semantic import config
from sessions_app.semantic.embed import embed_all
from tests.conftest import user_msg
from tests.semantic.offline import ask

ANSWER = "picked up the new Skoda yesterday"
OTHERS = ["Noted: window seats. When would you like to fly?",  # a question outranked it
          "Tom finally moved to Porto", "I could eat tiramisu every day",
          "The deploy script failed because the migration table was locked",
          "Meeting with Anna moved to Thursday", "Please water the plants while I'm away"]
MODELS = {"use+minilm": (LocalUSEMiniLM, PAIR_MODEL, PAIR_DIM),
          "use": (LocalUSE, USE_MODEL, USE_DIM), "e5": (LocalE5, LOCAL_MODEL, LOCAL_DIM)}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    return MODELS[request.param][0]()


def test_vectors_are_unit_length_and_one_text_has_one_vector(model):
    query, passage = model.embed_query(ANSWER), model.embed_passages([ANSWER])[0]
    assert query.shape == passage.shape == (model.dim,)
    assert abs(float(np.linalg.norm(passage)) - 1) < 1e-4
    assert float(query @ passage) > 0.99  # symmetric: the same text, the same vector


def test_each_model_names_its_vectors_and_has_its_own_floor_and_margin():
    use, e5 = LocalUSE(), LocalE5()
    assert (use.model, use.dim, use.floor, use.margin) == (USE_MODEL, 512, USE_FLOOR,
                                                           USE_MARGIN)
    assert (e5.model, e5.dim, e5.floor) == (LOCAL_MODEL, 384, 0.82)
    assert getattr(e5, "margin", DENSE_MARGIN) == DENSE_MARGIN
    assert LocalUSE(floor=0.4).floor == 0.4


def test_a_question_is_embedded_while_a_batch_of_messages_is(model):
    # The worker's batch takes seconds; a search must not wait for it.
    if isinstance(model, LocalE5):
        done = threading.Event()
        with model._locks["passages"]:  # a batch under way
            asker = threading.Thread(target=lambda: (model.embed_query("what car?"),
                                                     done.set()))
            asker.start()
            assert done.wait(30), "the question waited for the messages' batch"
        asker.join()
        return
    # USE keeps no state between calls: a batch and questions run at once and agree with
    # the same texts embedded alone.
    texts = [f"{t} ({n})" for n in range(40) for t in OTHERS]
    alone = model.embed_passages(texts[:3])
    made: list[object] = []
    batch = threading.Thread(target=lambda: made.append(model.embed_passages(texts)))
    batch.start()
    questions = [model.embed_query("What car do I drive now?") for _ in range(20)]
    batch.join(60)
    assert len(made) == 1 and len(made[0]) == len(texts)
    assert all(float(a @ b) > 0.999 for a, b in zip(alone, made[0][:3], strict=True))
    assert all(float(q @ questions[0]) > 0.999 for q in questions)


def test_a_model_loads_once_when_many_threads_ask_at_first():
    fresh = LocalUSE()
    engines: list[object] = []

    def ask() -> None:
        fresh.embed_query("hello")
        engines.append(fresh._engine)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(engines) == 4 and len({id(e) for e in engines}) == 1


@pytest.mark.parametrize("local", list(MODELS))
def test_the_default_install_answers_what_car_from_the_skoda(manager, session, settings,
                                                            local):
    skoda, hits = ask(manager, session, settings, local=local, model=MODELS[local][1],
                      notes=OTHERS, answer=ANSWER, question="What car do I drive now?")
    assert hits[0].id == skoda.id, [h.content for h in hits]
    assert hits[0].matched == "meaning"
    # Across languages USE puts the German question nearer another question ("When
    # would you like to fly?", 0.283) than the answer (0.272); e5 the other way round.
    hits = manager.search("Welches Auto fahre ich jetzt?", 3)
    place = 1 if local == "e5" else 2
    assert skoda.id in [h.id for h in hits[:place]], [h.content for h in hits]


def test_an_unknown_local_model_is_refused(settings):
    settings.ARBOR_EMBEDDINGS = "on"
    settings.ARBOR_EMBEDDINGS_LOCAL = "bert"
    with pytest.raises(ImproperlyConfigured, match="ARBOR_EMBEDDINGS_LOCAL"):
        config.embedder()


def test_search_by_meaning_is_on_by_default_with_use_and_minilm():
    """A fresh install (no ARBOR_EMBEDDINGS* in the environment) searches by meaning with
    USE beside MiniLM, which a search embeds its question with."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBOR_EMBEDDINGS")}
    env["DJANGO_SETTINGS_MODULE"] = "arbor.settings"
    code = ("import django; django.setup(); from sessions_app.semantic import config; "
            "e = config.embedder(); print(e.model, e.floor, e.margin, "
            "config.describe()['model'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()
    assert out == [PAIR_MODEL, str(PAIR_FLOOR), str(PAIR_MARGIN), PAIR_MODEL]


def test_use_finds_the_herb_above_messages_sharing_a_common_word(manager, session, settings):
    """The question shares one word ("dislike") with three messages and none with its
    answer: the answer, found by meaning, comes second at worst, above the later word
    matches."""
    settings.ARBOR_EMBEDDINGS = "on"
    settings.ARBOR_EMBEDDINGS_LOCAL = "use"
    embedder = config.embedder()
    herb = session.append_message(user_msg("Can't stand coriander, it tastes like soap to me."))
    for text in ("The kids dislike the new bus route to school.",
                 "I dislike meetings on Monday mornings.",
                 "Most people dislike the new office chairs."):
        session.append_message(user_msg(text))
    embed_all(embedder)
    hits = manager.search("Which herb do I dislike?", 5)
    assert herb.id in [h.id for h in hits[:2]] and len(hits) == 4
    found = next(h for h in hits if h.id == herb.id)
    assert found.matched == "meaning"


def test_use_minilm_without_its_packages_is_unavailable_and_says_so(monkeypatch):
    import sys

    from memory_core.embedders import LocalUSEMiniLM
    from memory_core.embedding import EmbedderUnavailable

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    with pytest.raises(EmbedderUnavailable, match="MiniLM's packages are not installed"):
        LocalUSEMiniLM().embed_query("Where does my brother live?")
