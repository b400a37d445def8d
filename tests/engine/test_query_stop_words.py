"""query_concepts(): the function words a question leaves out, per language (pure; no
database). A function word matches many messages of its own language and none of the
subject, so it buried answers under weak word matches (issue 28)."""

from __future__ import annotations

import pytest

from memory_core.search import query_concepts
from memory_core.stop_words import languages


def _stems(query):
    return [c[0] for c in query_concepts(query)]


@pytest.mark.parametrize(("query", "kept"), [
    ("¿Cuándo sale nuestro vuelo?", ["sale", "vuelo"]),
    ("¿Tengo mascotas?", ["mascota"]),
    ("Wann kommt der Klempner?", ["kommt", "klempner"]),
    ("Warum wurde die Miete erhöht?", ["miet", "erhoht"]),
    ("Quand se termine mon abonnement internet ?", ["termin", "abonn", "internet"]),
    ("When is someone fixing the heating?", ["fix", "heat"]),
])
def test_a_questions_function_words_are_not_terms(query, kept):
    assert _stems(query) == kept


def test_a_word_of_another_language_that_is_english_too_stays_in_an_english_question():
    # car (French: for), son (French: his; Spanish: are), die (German: the)
    assert _stems("What car does the user drive?") == ["car", "user", "drive"]
    assert _stems("Where does my son study?") == ["son", "studi"]
    assert _stems("Will the plant die in winter?") == ["plant", "die", "winter"]
    assert _stems("Quel est son numéro ?") == ["numero"]
    assert _stems("Wann ist die Wohnung frei?") == ["wohnung", "frei"]


def test_a_question_reads_as_the_language_whose_function_words_it_holds_most():
    assert languages("what car does the user drive".split()) == frozenset()
    assert languages("wann ist die wohnung frei".split()) == {"de"}
    assert languages("cuando sale nuestro vuelo".split()) == {"es"}


def test_chinese_and_japanese_function_bigrams_are_not_terms():
    assert _stems("暖房の修理はいつですか？") == ["暖房", "房の", "の修", "修理", "理は"]
    assert "什么" not in _stems("用户做什么工作？")
    assert _stems("アレルギーはありますか？") == ["アレ", "レル", "ルギ", "ギー", "ーは"]


def test_a_question_of_only_function_words_still_searches():
    assert _stems("ですか") == ["です", "すか"]
    assert _stems("¿Dónde está?") == ["dond", "esta"]
    assert _stems("to be or not to be") == ["to", "be", "or", "not"]
