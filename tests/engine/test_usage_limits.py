"""Usage totals: past 32 bits on every database, and refused past their limits."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput
from memory_core.limits import MAX_COST, MAX_TOKEN_TOTAL


@pytest.mark.parametrize("value", [2**31 + 5, 3_116_575_807, 2**32 + 7])
def test_usage_past_32_bits_is_kept_exactly(manager, value):
    s = manager.create("big")
    info = manager.add_usage(s.id, value, value + 1, 0)
    assert (info.input_tokens, info.output_tokens) == (value, value + 1)
    info = manager.add_usage(s.id, value, 0, 0)
    assert info.input_tokens == 2 * value
    assert manager.get(s.id).input_tokens == 2 * value


def test_totals_reach_their_limit_and_go_no_further(manager):
    s = manager.create("full")
    manager.add_usage(s.id, MAX_TOKEN_TOTAL - 1, MAX_TOKEN_TOTAL, MAX_COST - 1)
    info = manager.add_usage(s.id, 1, 0, 1)
    assert (info.input_tokens, info.output_tokens, info.estimated_cost) == (
        MAX_TOKEN_TOTAL, MAX_TOKEN_TOTAL, MAX_COST)
    for args, field in (((1, 0, 0), "input_tokens"), ((0, 1, 0), "output_tokens"),
                        ((0, 0, 0.5), "estimated_cost")):
        with pytest.raises(InvalidInput) as caught:
            manager.add_usage(s.id, *args)
        assert field in caught.value.detail and "limit" in caught.value.detail
    after = manager.get(s.id)
    assert (after.input_tokens, after.output_tokens, after.estimated_cost) == (
        MAX_TOKEN_TOTAL, MAX_TOKEN_TOTAL, MAX_COST)


def test_refused_increment_changes_nothing(manager):
    s = manager.create("partial")
    manager.add_usage(s.id, MAX_TOKEN_TOTAL - 10, 5, 2.0)
    with pytest.raises(InvalidInput) as caught:
        manager.add_usage(s.id, 11, 3, 1.0)
    assert str(MAX_TOKEN_TOTAL + 1) in caught.value.detail
    info = manager.get(s.id)
    assert (info.input_tokens, info.output_tokens, info.estimated_cost) == (
        MAX_TOKEN_TOTAL - 10, 5, 2.0)


def test_one_increment_past_the_limit_is_invalid(manager):
    s = manager.create("huge")
    with pytest.raises(InvalidInput):
        manager.add_usage(s.id, MAX_TOKEN_TOTAL + 1, 0, 0)
    with pytest.raises(InvalidInput):
        manager.add_usage(s.id, 0, 0, MAX_COST * 2)
