"""Token counting (SPEC §6): the heuristic, a pluggable counter, tiktoken."""

from __future__ import annotations

import pytest

from memory_core import SessionManager
from memory_core.tokens import estimate_message_tokens, estimate_tokens, tiktoken_counter
from tests.conftest import user_msg


@pytest.mark.parametrize("text,expected", [
    ("", 0), ("abcd", 2), ("abcdefghijkl", 3),
    ("a b c d e f g h i j", 13),  # 10 words * 1.3 beats 19 chars / 4
    ("x" * 400, 100),
])
def test_heuristic_is_max_of_chars_and_words(text, expected):
    assert estimate_tokens(text) == expected


def test_message_estimate_adds_overhead_and_prompt(session):
    messages = [session.append_message(user_msg("abcd")), session.append_message(user_msg("abcdefgh"))]
    assert estimate_message_tokens(messages) == (2 + 4) + (2 + 4)
    assert estimate_message_tokens(messages, system_prompt="x" * 40) == 12 + 10


def test_pluggable_counter_drives_budgets_and_prompt(agent):
    manager = (SessionManager.for_agent(agent)
               .with_token_counter(lambda text: len(text))
               .with_context("memory", max_tokens=10))
    s = manager.get_session(manager.create("c").id)
    assert s.replace_context_block("memory", "12345").tokens == 5
    assert "[50% — 5/10 tokens]" in s.refresh_system_prompt()


def test_tiktoken_counter_counts_with_the_given_encoding():
    tiktoken = pytest.importorskip("tiktoken")
    # A byte-level encoding built locally: no download needed.
    encoding = tiktoken.Encoding(
        name="bytes", pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    count = tiktoken_counter(encoding)
    assert count("héllo") == len("héllo".encode())
    assert count("") == 0
