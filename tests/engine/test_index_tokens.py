"""The ASCII fast path of index_tokens makes exactly the tokens of the general path."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core import words


def general(text: str) -> list[str]:
    tokens: list[str] = []
    for word, spaceless in words._words(text):
        tokens += words._bigrams(word) if spaceless else [words._stem(word[:words.MAX_TOKEN_CHARS])]
    return tokens[:words.MAX_DOC_TOKENS]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=string.printable, max_size=200))
def test_ascii_text_tokens_match_the_general_path(text):
    assert words.index_tokens(text) == general(text)


def test_long_words_and_long_documents_are_cut_the_same_way():
    text = "Deploying " * (words.MAX_DOC_TOKENS + 10) + "x" * 300
    assert words.index_tokens(text) == general(text)
    assert len(words.index_tokens(text)) == words.MAX_DOC_TOKENS
    assert words.index_tokens("naïve café 東京タワー") == general("naïve café 東京タワー")
