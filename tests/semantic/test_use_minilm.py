"""The default offline model (ARBOR_EMBEDDINGS_LOCAL=use+minilm): USE beside English
MiniLM. A question in English is ranked by both models, one in another language by USE
alone."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.embedders import (
    PAIR_DIM,
    PAIR_FLOOR,
    PAIR_MARGIN,
    PAIR_MODEL,
    USE_DIM,
    LocalUSE,
    LocalUSEMiniLM,
    english,
)
from tests.semantic.offline import ask

BROTHER = "Tom finally moved to Porto last month, he loves the light there."
OTHERS = ["I could eat tiramisu every day, honestly.",
          "My sister Lena works as a paediatric nurse at the children's hospital.",
          "We painted the living room a deep forest green over the weekend.",
          "The deploy script failed because the migration table was locked",
          "Meeting with Anna moved to Thursday", "Please water the plants while I'm away"]


@pytest.fixture(scope="module")
def pair():
    return LocalUSEMiniLM()


@pytest.mark.parametrize(("text", "expected"), [
    ("Where does my brother live?", True), ("Do I have any pets?", True),
    ("Welches Auto fahre ich?", False), ("Quel dessert est-ce que j'aime ?", False),
    ("¿Tengo mascotas?", False), ("暖房の修理はいつですか？", False), ("Skoda", False)])
def test_a_question_reads_as_english_by_its_function_words(text, expected):
    assert english(text) is expected


def test_a_cosine_is_the_mean_of_the_two_models_cosines(pair):
    use = LocalUSE()
    q, p = "Where does my brother live?", BROTHER
    both = float(pair.embed_query(q) @ pair.embed_passages([p])[0])
    by_use = float(use.embed_query(q) @ use.embed_passages([p])[0])
    minilm = [v[USE_DIM:] / np.linalg.norm(v[USE_DIM:])
              for v in (pair.embed_query(q), pair.embed_passages([p])[0])]
    assert both == pytest.approx((by_use + float(minilm[0] @ minilm[1])) / 2, abs=1e-4)
    assert (pair.model, pair.dim, pair.floor, pair.margin) == (PAIR_MODEL, PAIR_DIM,
                                                               PAIR_FLOOR, PAIR_MARGIN)


def test_a_question_not_in_english_is_ranked_by_use_alone(pair):
    use = LocalUSE()
    q = "Welches Auto fahre ich?"
    vector = pair.embed_query(q)
    assert not vector[USE_DIM:].any()
    passage = pair.embed_passages(["Finally picked up the new Skoda yesterday."])[0]
    alone = float(use.embed_query(q) @ use.embed_passages(
        ["Finally picked up the new Skoda yesterday."])[0])
    assert float(vector @ passage) == pytest.approx(alone * np.sqrt(0.5), abs=1e-4)


def test_use_minilm_finds_the_brother_in_porto(manager, session, settings):
    """USE alone puts "Tom finally moved to Porto" 43rd for this question in the recall set;
    with MiniLM it is found by meaning, next to the word match ("living" room)."""
    porto, hits = ask(manager, session, settings, local="use+minilm", model=PAIR_MODEL,
                      notes=OTHERS, answer=BROTHER, question="Where does my brother live?")
    found = {h.id: h.matched for h in hits[:2]}
    assert found.get(porto.id) == "meaning", [h.content for h in hits]
