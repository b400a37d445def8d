"""snippet(): the excerpt each search hit carries (pure; no database)."""

from __future__ import annotations

import time

from memory_core.search import SNIPPET_CHARS, plain_text, query_terms, snippet


def test_the_excerpt_starts_a_few_words_before_the_match():
    before = " ".join(f"w{i}" for i in range(100))
    after = " ".join(f"v{i}" for i in range(100))
    got = snippet(f"{before} deploy {after}", query_terms("deploy"))
    # About 40 characters of lead-in, cut at a space; the rest after the match.
    assert got.startswith("\u2026w90 w91 w92 w93 w94 w95 w96 w97 w98 w99 <mark>deploy</mark> v0")
    assert got.endswith(" v65\u2026")
    assert len(plain_text(got)) <= SNIPPET_CHARS + 2


def test_the_window_holding_the_most_distinct_query_words_wins():
    text = ("billing " + "filler " * 60 + "the billing migration ran " + "filler " * 60
            + "migration")
    got = snippet(text, query_terms("billing migration"))
    assert "the <mark>billing</mark> <mark>migration</mark> ran" in got


def test_a_short_text_comes_back_whole_and_a_long_one_is_capped():
    assert snippet("Deploy now.", query_terms("deploy")) == "<mark>Deploy</mark> now."
    got = plain_text(snippet("x" * 5000, query_terms("deploy")))
    assert len(got) == SNIPPET_CHARS + 1 and got.endswith("\u2026")


def test_plain_text_has_no_marks_and_no_entities():
    marked = snippet('a <b> & "c" deploy', query_terms("deploy"))
    assert marked == "a &lt;b&gt; &amp; &quot;c&quot; <mark>deploy</mark>"
    assert plain_text(marked) == 'a <b> & "c" deploy'


def test_a_megabyte_of_matching_words_is_cheap():
    started = time.perf_counter()
    for text in ("deploy " * 150_000, "deploy other " * 80_000):
        assert snippet(text, query_terms("deploy")).startswith("<mark>deploy</mark>")
    assert time.perf_counter() - started < 1.0
