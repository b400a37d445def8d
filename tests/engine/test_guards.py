"""Edges the suite let slip (issue 9): budgets at the boundary, entry budgets, metadata
in idempotent appends, prompt percentages, and re-parenting after chain deletes."""

from __future__ import annotations

import pytest

from memory_core import Conflict, OverBudget
from memory_core.prompt import percent
from memory_core.tokens import estimate_tokens
from tests.conftest import assistant_msg, user_msg


def tokens(n):
    """Text of exactly n estimated tokens (n >= 2): one word of 4n characters."""
    text = "x" * (4 * n)
    assert estimate_tokens(text) == n and estimate_tokens(text + "x") == n + 1
    return text


# ------------------------------------------------------- writable budgets
def test_a_write_of_exactly_max_tokens_fits_and_one_more_does_not(session):
    session.add_context("memory", max_tokens=20)
    assert session.replace_context_block("memory", tokens(20)).tokens == 20
    with pytest.raises(OverBudget):
        session.replace_context_block("memory", tokens(20) + "x")
    assert session.get_context_block("memory").content == tokens(20)


def test_append_is_checked_on_the_joined_text_at_the_boundary(session):
    session.add_context("memory", max_tokens=20)
    session.replace_context_block("memory", "x" * 39)  # + "\n" + 40 chars = 80 chars
    assert session.append_context_block("memory", "x" * 40).tokens == 20
    with pytest.raises(OverBudget):
        session.append_context_block("memory", "")  # one more newline: 81 characters


# ---------------------------------------------------------- entry budgets
@pytest.mark.parametrize("kind", ["search", "skill"])
def test_max_tokens_of_an_entry_block_limits_each_entry(session, kind):
    session.add_context("box", kind=kind, max_tokens=20)
    session.set_context_entry("box", "a", tokens(20))
    session.set_context_entry("box", "b", tokens(20))  # each entry, not the sum
    before = session.get_context_block("box").content
    with pytest.raises(OverBudget) as caught:
        session.set_context_entry("box", "c", tokens(20) + "x")
    assert "20 tokens" in caught.value.detail and "21 tokens" in caught.value.detail
    with pytest.raises(OverBudget):
        session.set_context_entry("box", "a", tokens(21))  # overwriting too
    assert session.get_context_block("box").content == before


def test_set_context_tool_enforces_the_entry_budget(session):
    session.add_context("box", kind="search", max_tokens=20)
    tool = next(t for t in session.tools() if t.name == "set_context")
    ok = tool.call({"label": "box", "key": "a", "content": tokens(20)})
    assert not ok.is_error
    over = tool.call({"label": "box", "key": "b", "content": tokens(20) + "x"})
    assert over.is_error and "20 tokens" in over.content
    assert "at most 20 tokens" in tool.description


# ---------------------------------------------------- idempotent appends
def test_same_id_and_parts_with_other_metadata_is_a_conflict(session):
    session.append_message(user_msg("hi", id="u1", metadata={"lang": "en"}))
    assert session.append_message(user_msg("hi", id="u1", metadata={"lang": "en"})).id == "u1"
    with pytest.raises(Conflict):
        session.append_message(user_msg("hi", id="u1", metadata={"lang": "de"}))
    with pytest.raises(Conflict):
        session.append_message(user_msg("hi", id="u1"))  # metadata dropped is a change too
    assert session.get_message("u1").metadata == {"lang": "en"}
    assert session.get_message_count() == 1


# ------------------------------------------------------ prompt percentages
@pytest.mark.parametrize(("used", "limit", "expected"), [
    (0, 7, 0), (1, 3, 33), (2, 3, 67), (1, 8, 13), (3, 8, 38), (1, 200, 1), (1, 1000, 0),
    (5, 1000, 1), (4, 1000, 0), (495, 1100, 45), (7, 7, 100), (21, 20, 105),
])
def test_budget_percentages_round_half_up(used, limit, expected):
    assert percent(used, limit) == expected


def test_prompt_header_shows_the_half_up_percentage(session):
    session.add_context("memory", description="Facts", max_tokens=6)
    session.replace_context_block("memory", "ab")  # 2 of 6 tokens: 33%, not ceil's 34%
    assert "MEMORY (Facts) [33% \u2014 2/6 tokens] [writable]" in session.refresh_system_prompt()


# ------------------------------------------------------------ chain deletes
@pytest.mark.parametrize("length", [1, 2, 3, 5])
@pytest.mark.parametrize("order", ["forward", "backward", "shuffled"])
@pytest.mark.parametrize("names", ["ascending", "descending"])
def test_deleting_a_chain_moves_children_to_the_nearest_kept_ancestor(
        session, length, order, names):
    # Ids sort against insertion order too, so no storage order can hide a bug.
    count = length + 3
    ids = [f"m{i:02d}" if names == "ascending" else f"m{99 - i:02d}" for i in range(count)]
    for i, mid in enumerate(ids):
        session.append_message((user_msg if i % 2 == 0 else assistant_msg)(mid, id=mid))
    # A side branch off the last doomed message, and one off the kept root.
    session.append_message(user_msg("side", id="side"), parent_id=ids[length])
    session.append_message(user_msg("root side", id="rside"), parent_id=ids[0])
    chain = ids[1:length + 1]
    doomed = {"forward": chain, "backward": chain[::-1],
              "shuffled": chain[1::2] + chain[0::2]}[order]
    assert session.delete_messages(doomed) == length
    for kept in (ids[length + 1], "side"):
        assert session.get_message(kept).parent_id == ids[0]
    assert session.get_message("rside").parent_id == ids[0]
    assert [m.id for m in session.get_history(ids[-1])] == [ids[0], *ids[length + 1:]]
    assert session.get_message_count() == count + 2 - length
